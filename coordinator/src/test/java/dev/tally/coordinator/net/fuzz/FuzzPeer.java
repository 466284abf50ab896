package dev.tally.coordinator.net.fuzz;

import dev.tally.protocol.Envelope;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A peer on the worker port over a plain socket, writing whatever bytes it is given. A reader thread keeps
 * every frame the coordinator sends (so that our receive buffer never fills, which would make our close
 * a reset) and notes when the coordinator's side ends. {@link #next} skips the coordinator's heartbeats,
 * which a joined session may get at any time; {@link #received} lists them with the rest.
 *
 * <p>A write after the coordinator closed the connection is not an error here: a hostile peer does not
 * stop to listen. Thread-safety: {@link #send} from one thread at a time; the rest from any thread.
 */
final class FuzzPeer implements AutoCloseable {
  private final Socket socket;
  private final OutputStream out;
  private final BlockingQueue<Envelope> inbox = new LinkedBlockingQueue<>();
  private final List<Envelope.BodyCase> received = new CopyOnWriteArrayList<>();
  private final CountDownLatch ended = new CountDownLatch(1);

  FuzzPeer(int port) throws IOException {
    socket = new Socket("127.0.0.1", port);
    socket.setTcpNoDelay(true);
    out = socket.getOutputStream();
    Thread reader = new Thread(this::read, "fuzz-peer-reader");
    reader.setDaemon(true);
    reader.start();
  }

  private void read() {
    try {
      DataInputStream in = new DataInputStream(socket.getInputStream());
      while (true) {
        int length = in.readInt();
        byte[] body = new byte[length];
        in.readFully(body);
        Envelope e = Envelope.parseFrom(body);
        received.add(e.getBodyCase());
        if (!e.hasHeartbeat()) {
          inbox.add(e);
        }
      }
    } catch (EOFException e) {
      // the coordinator closed
    } catch (IOException e) {
      // reset by the coordinator, or closed by us
    } finally {
      ended.countDown();
    }
  }

  /** Performs one step; returns false if the coordinator had already closed the connection. */
  boolean perform(Step step) {
    if (step instanceof Step.Pause p) {
      sleep(p.millis());
      return true;
    }
    return send(step.bytes());
  }

  boolean send(byte[] bytes) {
    try {
      out.write(bytes);
      out.flush();
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  boolean send(Envelope e) {
    return send(Step.frame(e.toByteArray()));
  }

  /** The next frame from the coordinator but a heartbeat, or null if none within {@code timeout}. */
  Envelope next(Duration timeout) throws InterruptedException {
    return inbox.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Every frame's body case the coordinator sent, in order. */
  List<Envelope.BodyCase> received() {
    return List.copyOf(received);
  }

  /**
   * Says "no more bytes" (a FIN, not a reset) and waits until the coordinator closes its side; returns
   * whether it did within {@code timeout}.
   */
  boolean finish(Duration timeout) throws InterruptedException {
    try {
      socket.shutdownOutput();
    } catch (IOException alreadyGone) {
      // the coordinator closed first
    }
    return awaitEnded(timeout);
  }

  /** Whether the coordinator's side ended (EOF or reset) within {@code timeout}. */
  boolean awaitEnded(Duration timeout) throws InterruptedException {
    return ended.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }

  private static void sleep(int millis) {
    try {
      Thread.sleep(millis); // a pause is the input here (a stalled peer), not a wait for a condition
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

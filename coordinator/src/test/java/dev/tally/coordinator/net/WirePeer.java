package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.protocol.Envelope;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.Hello;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Socket;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A worker peer over a plain {@link Socket}, writing real frames by hand (independently of FrameCodec).
 * A reader thread queues every frame the coordinator sends, but its heartbeats (which an idle session gets
 * at any time, and which {@link #heartbeatsReceived} counts), and notes when the coordinator closes.
 */
final class WirePeer implements AutoCloseable {
  private final Socket socket;
  private final DataOutputStream out;
  private final BlockingQueue<Envelope> inbox = new LinkedBlockingQueue<>();
  private final AtomicLong heartbeatSeq = new AtomicLong();
  private final AtomicLong heartbeatsReceived = new AtomicLong();
  /** System.nanoTime() of the last heartbeat received (0 before the first), and the longest gap between two. */
  private volatile long lastHeartbeatNanos;
  private volatile long longestHeartbeatGapNanos;
  private volatile boolean closedByServer;
  /** System.nanoTime() of the last frame or bytes this peer sent. */
  volatile long lastSentNanos;

  private WirePeer(int port) throws IOException {
    socket = new Socket("127.0.0.1", port);
    socket.setTcpNoDelay(true);
    out = new DataOutputStream(socket.getOutputStream());
    Thread reader = new Thread(this::read, "wire-peer-reader");
    reader.setDaemon(true);
    reader.start();
  }

  static WirePeer connect(int port) throws IOException {
    return new WirePeer(port);
  }

  /** Connects, says Hello and waits for Welcome. */
  static WirePeer joined(int port, String workerId, int slots) throws IOException {
    WirePeer peer = connect(port);
    peer.send(hello(workerId, slots));
    assertThat(peer.next().getBodyCase()).isEqualTo(Envelope.BodyCase.WELCOME);
    return peer;
  }

  static Envelope hello(String workerId, int slots) {
    return Envelope.newBuilder()
        .setHello(Hello.newBuilder().setWorkerId(workerId).setName(workerId + "-host").setSlots(slots).setVersion("test"))
        .build();
  }

  private void read() {
    try {
      DataInputStream in = new DataInputStream(socket.getInputStream());
      while (true) {
        int length = in.readInt();
        byte[] body = new byte[length];
        in.readFully(body);
        Envelope e = Envelope.parseFrom(body);
        if (e.hasHeartbeat()) {
          heartbeatsReceived.incrementAndGet();
          long now = System.nanoTime();
          if (lastHeartbeatNanos != 0) {
            longestHeartbeatGapNanos = Math.max(longestHeartbeatGapNanos, now - lastHeartbeatNanos);
          }
          lastHeartbeatNanos = now;
        } else {
          inbox.add(e);
        }
      }
    } catch (EOFException e) {
      closedByServer = true;
    } catch (IOException e) {
      closedByServer = true; // reset by the server, or closed by us
    }
  }

  synchronized void send(Envelope e) throws IOException {
    byte[] body = e.toByteArray();
    out.writeInt(body.length);
    out.write(body);
    out.flush();
    lastSentNanos = System.nanoTime();
  }

  synchronized void sendRaw(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
    lastSentNanos = System.nanoTime();
  }

  void heartbeat() throws IOException {
    send(Envelope.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSeq(heartbeatSeq.incrementAndGet())).build());
  }

  /** The next frame from the coordinator but a heartbeat; fails the test if none arrives within 5 s. */
  Envelope next() {
    try {
      Envelope e = inbox.poll(5, TimeUnit.SECONDS);
      assertThat(e).as("a frame from the coordinator within 5 s").isNotNull();
      return e;
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      throw new AssertionError(ie);
    }
  }

  /** How many heartbeats the coordinator has sent this peer. */
  long heartbeatsReceived() {
    return heartbeatsReceived.get();
  }

  /** The longest time between two heartbeats received in a row, ms (0 before the second). */
  long longestHeartbeatGapMillis() {
    return TimeUnit.NANOSECONDS.toMillis(longestHeartbeatGapNanos);
  }

  /**
   * Frames received and not yet taken, not counting heartbeats: an idle coordinator sends one every half
   * interval, so "nothing more was sent" means nothing but heartbeats.
   */
  int pending() {
    return (int) inbox.stream().filter(e -> e.getBodyCase() != Envelope.BodyCase.HEARTBEAT).count();
  }

  boolean closedByServer() {
    return closedByServer;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}

package dev.tally.worker;

import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.ResultAck;
import dev.tally.protocol.RunConfig;
import dev.tally.protocol.Welcome;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/**
 * A coordinator stand-in for tests: a plain blocking {@link ServerSocket} on 127.0.0.1, port 0, that
 * speaks the frame format (4-byte big-endian length + Envelope) independently of the worker's Netty
 * codec, records every frame with its arrival time, and lets a test send frames or drop a connection.
 */
final class FakeCoordinator implements AutoCloseable {
  /** A frame as received, with {@link System#nanoTime()} at its arrival. */
  record Frame(long arrivalNanos, Envelope envelope) {}

  private final ServerSocket server;
  private final List<Conn> connections = new CopyOnWriteArrayList<>();
  private final Thread acceptor;

  FakeCoordinator() throws IOException {
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    acceptor = new Thread(this::acceptLoop, "fake-coordinator-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return server.getLocalPort();
  }

  /** Waits for the {@code n}-th connection (1-based) and returns it. */
  Conn awaitConnection(int n) {
    await().atMost(Duration.ofSeconds(10)).until(() -> connections.size() >= n);
    return connections.get(n - 1);
  }

  int connectionCount() {
    return connections.size();
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket s = server.accept();
        s.setTcpNoDelay(true);
        connections.add(new Conn(s));
      } catch (IOException e) {
        return;
      }
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Conn c : connections) {
      c.drop();
    }
  }

  /** One accepted connection. */
  static final class Conn {
    private final Socket socket;
    private final DataOutputStream out;
    private final List<Frame> frames = new ArrayList<>(); // guarded by itself
    private volatile boolean endOfStream;
    private volatile boolean autoAck;
    private volatile boolean silent;
    private volatile Thread heartbeats;

    Conn(Socket socket) throws IOException {
      this.socket = socket;
      this.out = new DataOutputStream(socket.getOutputStream());
      DataInputStream in = new DataInputStream(socket.getInputStream());
      Thread reader = new Thread(() -> readLoop(in), "fake-coordinator-read");
      reader.setDaemon(true);
      reader.start();
    }

    private void readLoop(DataInputStream in) {
      try {
        while (true) {
          int len = in.readInt();
          byte[] body = new byte[len];
          in.readFully(body);
          Envelope env = Envelope.parseFrom(body);
          synchronized (frames) {
            frames.add(new Frame(System.nanoTime(), env));
          }
          if (autoAck && env.hasResult()) {
            ack(env.getResult().getJobId(), env.getResult().getToken(), AckEntry.Status.RECORDED);
          }
        }
      } catch (EOFException e) {
        // peer closed
      } catch (IOException e) {
        // dropped by the test, or reset
      } finally {
        endOfStream = true;
      }
    }

    synchronized void send(Envelope env) {
      try {
        byte[] body = env.toByteArray();
        out.writeInt(body.length);
        out.write(body);
        out.flush();
      } catch (IOException e) {
        throw new IllegalStateException("send failed", e);
      }
    }

    void welcome(long heartbeatIntervalMillis) {
      welcome(heartbeatIntervalMillis, "");
    }

    /**
     * A Welcome from a coordinator on the store {@code storeId}; from then on this connection heartbeats
     * every half interval, as a real coordinator does when it has nothing else to send, until {@link
     * #silence()} or {@link #drop()}.
     */
    void welcome(long heartbeatIntervalMillis, String storeId) {
      send(
          Envelope.newBuilder()
              .setWelcome(
                  Welcome.newBuilder()
                      .setSessionId("s-" + System.nanoTime())
                      .setHeartbeatIntervalMillis((int) heartbeatIntervalMillis)
                      .setCoordinatorEpoch(1)
                      .setStoreId(storeId))
              .build());
      Thread beat = new Thread(() -> heartbeatLoop(Math.max(1, heartbeatIntervalMillis / 2)), "fake-coordinator-heartbeat");
      beat.setDaemon(true);
      heartbeats = beat;
      beat.start();
    }

    private void heartbeatLoop(long everyMillis) {
      long seq = 0;
      try {
        while (!silent && !socket.isClosed()) {
          send(Envelope.newBuilder().setHeartbeat(dev.tally.protocol.Heartbeat.newBuilder().setSeq(++seq)).build());
          Thread.sleep(everyMillis); // a timer, as the coordinator's own: not a wait for a condition
        }
      } catch (InterruptedException | IllegalStateException e) {
        // silenced, or the socket is gone
      }
    }

    /**
     * From now on this side sends nothing and reads on, with the socket open: a coordinator whose host
     * died or whose network path dropped, seen from the worker.
     */
    void silence() {
      silent = true;
      Thread beat = heartbeats;
      if (beat != null) {
        beat.interrupt();
      }
    }

    void runConfig(long runId, String evaluator, Map<String, String> options, long caseTimeoutMillis) {
      send(
          Envelope.newBuilder()
              .setRunConfig(
                  RunConfig.newBuilder()
                      .setRunId(runId)
                      .setEvaluator(evaluator)
                      .putAllOptions(options)
                      .setCaseTimeoutMillis(caseTimeoutMillis))
              .build());
    }

    void assign(long jobId, long runId, long token, String caseJson) {
      send(
          Envelope.newBuilder()
              .setAssign(
                  Assign.newBuilder()
                      .setJobId(jobId)
                      .setRunId(runId)
                      .setToken(token)
                      .setAttempt(1)
                      .setCaseId("case-" + jobId)
                      .setCaseJson(ByteString.copyFrom(caseJson, StandardCharsets.UTF_8)))
              .build());
    }

    void ack(long jobId, long token, AckEntry.Status status) {
      send(
          Envelope.newBuilder()
              .setResultAck(
                  ResultAck.newBuilder()
                      .addEntries(AckEntry.newBuilder().setJobId(jobId).setToken(token).setStatus(status)))
              .build());
    }

    /** From now on, answer every Result with a RECORDED ack, as the store would after its commit. */
    void autoAck() {
      autoAck = true;
    }

    /** Every frame received so far, in order. */
    List<Frame> frames() {
      synchronized (frames) {
        return new ArrayList<>(frames);
      }
    }

    List<Envelope> envelopes() {
      return frames().stream().map(Frame::envelope).toList();
    }

    /** Waits for a received frame matching {@code match} and returns the first one. */
    Envelope awaitFrame(Predicate<Envelope> match, Duration max) {
      await().atMost(max).until(() -> envelopes().stream().anyMatch(match));
      return envelopes().stream().filter(match).findFirst().orElseThrow();
    }

    /** Closes the socket from this side, as a coordinator crash or a network cut would. */
    void drop() {
      silence();
      try {
        socket.close();
      } catch (IOException e) {
        // already closed
      }
    }

    /** True once the worker closed the connection (or it was dropped). */
    boolean ended() {
      return endOfStream;
    }
  }
}

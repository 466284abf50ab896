package dev.tally.cli.dashboard;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A TCP relay on loopback between a browser and the HTTP API that spoils the first {@code POST
 * /api/v1/runs}: in {@link Fault#HOLD_ANSWER} the request reaches the server, which makes the run, but its
 * response never reaches the browser (as when a network drops the answer, or the user reloads before it
 * comes); in {@link Fault#BREAK_REQUEST} the request never reaches the server and the browser gets bytes
 * that are not HTTP, then the end of the connection (a network error: the browser's fetch fails). Everything else, the event stream included, is relayed as it is.
 *
 * <p>Thread-safety: {@link #close} from any thread; two threads per relayed connection do the copying.
 */
final class HoldingProxy implements AutoCloseable {
  private static final byte[] BROKEN_ANSWER = "this is not HTTP\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SUBMISSION = "POST /api/v1/runs HTTP/1.1".getBytes(StandardCharsets.US_ASCII);

  /** What happens to the first submission. */
  enum Fault { HOLD_ANSWER, BREAK_REQUEST }

  private final Fault fault;
  private final java.util.concurrent.atomic.AtomicInteger submissions = new java.util.concurrent.atomic.AtomicInteger();
  private final ServerSocket server;
  private final int upstreamPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final java.util.concurrent.atomic.AtomicInteger spoilsLeft;
  private volatile boolean held;

  HoldingProxy(int upstreamPort) throws IOException {
    this(upstreamPort, Fault.HOLD_ANSWER);
  }

  HoldingProxy(int upstreamPort, Fault fault) throws IOException {
    this.upstreamPort = upstreamPort;
    this.fault = fault;
    this.spoilsLeft = new java.util.concurrent.atomic.AtomicInteger(1);
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "holding-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return server.getLocalPort();
  }

  /** Whether the first submission has been spoiled (its answer held back, or broken). */
  boolean held() {
    return held;
  }

  /** How many submissions (requests to create a run) came through the proxy, the spoiled one included. */
  int submissions() {
    return submissions.get();
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
        sockets.add(client);
        sockets.add(upstream);
        AtomicBoolean holding = new AtomicBoolean();
        pump(client, upstream, holding, true);
        pump(upstream, client, holding, false);
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void pump(Socket from, Socket to, AtomicBoolean holding, boolean request) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) > 0) {
          boolean submission = request && contains(buffer, n, SUBMISSION);
          if (submission) {
            submissions.incrementAndGet();
          }
          if (submission && !holding.get() && spoilsLeft.getAndUpdate(left -> Math.max(0, left - 1)) > 0) {
            held = true;
            if (fault == Fault.BREAK_REQUEST) {
              // Not an HTTP answer, then the end: the browser's fetch fails with a network error. (A reset alone
              // would not do: Chromium sends a request again by itself when a connection it reused is reset.)
              OutputStream back = from.getOutputStream();
              back.write(BROKEN_ANSWER);
              back.flush();
              return;
            }
            holding.set(true); // this connection's answers are held back from now on
          }
          if (request || !holding.get()) {
            out.write(buffer, 0, n);
            out.flush();
          }
        }
      } catch (IOException e) {
        // one side closed: so does the other
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, request ? "holding-proxy-up" : "holding-proxy-down");
    t.setDaemon(true);
    t.start();
  }

  private static boolean contains(byte[] buffer, int length, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (buffer[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // already closed
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    sockets.forEach(HoldingProxy::closeQuietly);
  }
}

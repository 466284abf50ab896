package dev.tally.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP relay on loopback between an HTTP client and a server that loses the server's answers on
 * purpose: each of the first {@code faulty} connections carries the request to the server whole, and then
 * either closes both sides as soon as the server's answer starts to come back ({@link Fault#DROP}: a
 * response lost on its way, after the server did the work) or keeps the client's side open and silent
 * ({@link Fault#HOLD}: a response that never comes). Later connections are relayed both ways. What the
 * client sent is kept, to see which idempotency keys it used.
 *
 * <p>Thread-safety: two threads per connection copy; the accessors are safe from any thread.
 */
final class ResponseProxy implements AutoCloseable {
  enum Fault {
    DROP,
    HOLD
  }

  private final ServerSocket server;
  private final int upstreamPort;
  private final Fault fault;
  private final int faulty;
  private final AtomicInteger connections = new AtomicInteger();
  private final AtomicInteger answersLost = new AtomicInteger();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final List<StringBuilder> sent = new CopyOnWriteArrayList<>();

  ResponseProxy(int upstreamPort, Fault fault, int faulty) throws IOException {
    this.upstreamPort = upstreamPort;
    this.fault = fault;
    this.faulty = faulty;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "response-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return server.getLocalPort();
  }

  /** Connections accepted so far. */
  int connections() {
    return connections.get();
  }

  /** Answers the server began to send that the client never got. */
  int answersLost() {
    return answersLost.get();
  }

  /** Every {@code Idempotency-Key} header value the client sent, in order, over every connection. */
  List<String> idempotencyKeys() {
    return sent.stream().flatMap(s -> s.toString().lines()).filter(l -> l.regionMatches(true, 0, "Idempotency-Key:", 0, 16))
        .map(l -> l.substring(16).strip()).toList();
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
        sockets.add(client);
        sockets.add(upstream);
        boolean faultyOne = connections.incrementAndGet() <= faulty;
        StringBuilder request = new StringBuilder();
        sent.add(request);
        start(() -> copyRequest(client, upstream, request));
        start(() -> copyAnswer(upstream, client, faultyOne));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private static void start(Runnable r) {
    Thread t = new Thread(r, "response-proxy-copy");
    t.setDaemon(true);
    t.start();
  }

  private void copyRequest(Socket from, Socket to, StringBuilder seen) {
    byte[] buf = new byte[8192];
    try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
      for (int n; (n = in.read(buf)) >= 0; ) {
        synchronized (seen) {
          // Headers are ASCII; a large body is kept only up to where the keys are.
          if (seen.length() < 64 * 1024) {
            seen.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
          }
        }
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // one side closed
    } finally {
      closeQuietly(to);
    }
  }

  private void copyAnswer(Socket from, Socket to, boolean faultyOne) {
    byte[] buf = new byte[8192];
    try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
      for (int n; (n = in.read(buf)) >= 0; ) {
        if (faultyOne) {
          answersLost.incrementAndGet();
          if (fault == Fault.DROP) {
            closeQuietly(from);
            closeQuietly(to);
            return;
          }
          in.transferTo(OutputStream.nullOutputStream()); // HOLD: swallow it, leave the client waiting
          return;
        }
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // one side closed
    } finally {
      if (!(faultyOne && fault == Fault.HOLD)) {
        closeQuietly(to);
      }
    }
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
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }
}

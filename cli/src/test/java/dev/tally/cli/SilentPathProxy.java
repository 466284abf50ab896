package dev.tally.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP relay on loopback between workers and a coordinator, whose path can be cut and restored: the
 * half-open connection without root or a firewall. While cut it forwards nothing in either direction,
 * and closes nothing: bytes wait in the sockets (as TCP keeps retransmitting them over a dropped path), a
 * close waits too (a FIN is a packet), and a new connection is accepted but not carried on to the
 * coordinator (the SYN of a real dropped path would be lost instead; either way no Welcome comes). When
 * restored, everything that waited goes through, in order.
 *
 * <p>Thread-safety: {@link #cut}, {@link #restore} and {@link #close} from any thread; two threads per
 * relayed connection do the copying.
 */
final class SilentPathProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int upstreamPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Object gate = new Object();
  private boolean open = true; // guarded by gate
  private volatile boolean closed;

  /** Relays connections to its {@link #port()} to {@code upstreamPort} on loopback. */
  SilentPathProxy(int upstreamPort) throws IOException {
    this.upstreamPort = upstreamPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return server.getLocalPort();
  }

  /** From now on nothing gets through, either way, and nothing is closed. */
  void cut() {
    synchronized (gate) {
      open = false;
    }
  }

  /** Everything that waited goes through, and so does what follows. */
  void restore() {
    synchronized (gate) {
      open = true;
      gate.notifyAll();
    }
  }

  private void awaitOpen() throws InterruptedException {
    synchronized (gate) {
      while (!open && !closed) {
        gate.wait();
      }
    }
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket down = server.accept();
        sockets.add(down);
        daemon(() -> relay(down), "proxy-connect");
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void relay(Socket down) {
    try {
      awaitOpen();
      Socket up = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
      sockets.add(up);
      daemon(() -> pump(down, up), "proxy-up");
      daemon(() -> pump(up, down), "proxy-down");
    } catch (IOException | InterruptedException e) {
      closeQuietly(down);
    }
  }

  /** Copies {@code from} to {@code to} while the path is open; an end of stream is passed on as one. */
  private void pump(Socket from, Socket to) {
    byte[] buffer = new byte[8192];
    try (InputStream in = from.getInputStream()) {
      OutputStream out = to.getOutputStream();
      for (int n; (n = in.read(buffer)) >= 0; ) {
        awaitOpen();
        out.write(buffer, 0, n);
        out.flush();
      }
      awaitOpen();
      to.shutdownOutput();
    } catch (IOException | InterruptedException e) {
      closeQuietly(from);
      closeQuietly(to);
    }
  }

  private static void daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    synchronized (gate) {
      gate.notifyAll();
    }
    server.close();
    sockets.forEach(SilentPathProxy::closeQuietly);
  }
}

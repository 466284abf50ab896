package dev.tally.cli.chaos;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP relay between {@code tally chaos}'s coordinators and their PostgreSQL server, through which chaos
 * takes the database's network away: the coordinators are given the relay's loopback port as the server's,
 * and every byte between them and the database passes through here. Two faults, each for a while:
 *
 * <ul>
 *   <li>{@link #cut}: every relayed connection is closed at both ends and every new one is closed as soon as
 *       it is accepted, as a database that went down and refuses connections (the coordinators' JDBC sees
 *       its sockets end, then connections refused);
 *   <li>{@link #stall}: the relay goes on reading but holds what it reads until the stall is over, as a
 *       network that went silent without a reset: the coordinators' queries hang, and the database sees idle
 *       sessions (it ends one idle in a transaction after its own timeout).
 * </ul>
 *
 * <p>Not a general proxy: blocking sockets, two threads per connection, loopback only; a chaos fleet's
 * coordinators hold tens of connections. The chaos checker reads the store directly, not through here.
 *
 * <p>Thread-safety: safe; {@link #cut} and {@link #stall} may be called from any thread.
 */
final class StoreRelay implements AutoCloseable {
  private static final int BUFFER_BYTES = 16 * 1024;
  /** How long a connection to the database may take before the relayed connection is given up. */
  private static final int CONNECT_TIMEOUT_MILLIS = 5_000;

  private final InetSocketAddress database;
  private final ServerSocket listener;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final AtomicInteger threads = new AtomicInteger();
  /** Until when ({@link System#nanoTime}) new connections are refused; compared by difference, never by value. */
  private volatile long refuseUntilNanos;
  /** Until when what is read is held; compared by difference. */
  private volatile long stallUntilNanos;
  private volatile boolean faultDone;
  private volatile boolean closed;

  private StoreRelay(InetSocketAddress database, ServerSocket listener) {
    this.database = database;
    this.listener = listener;
    long now = System.nanoTime(); // no fault: both have ended (nanoTime's values are compared by difference only)
    refuseUntilNanos = now;
    stallUntilNanos = now;
  }

  /**
   * Starts a relay on a free loopback port to the database at {@code host:port}.
   *
   * @throws IOException if no loopback port can be bound
   */
  static StoreRelay start(String host, int port) throws IOException {
    ServerSocket listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
    StoreRelay relay = new StoreRelay(new InetSocketAddress(host, port), listener);
    relay.thread("tally-chaos-relay-accept", relay::acceptLoop).start();
    return relay;
  }

  /** The loopback port the coordinators are given as the database's. */
  int port() {
    return listener.getLocalPort();
  }

  /** Closes every relayed connection, and every new one as soon as it is accepted, for {@code d}. */
  void cut(Duration d) {
    refuseUntilNanos = System.nanoTime() + d.toNanos();
    faultDone = true;
    for (Socket s : open) {
      closeQuietly(s);
    }
  }

  /** Holds every byte read in either direction, on every connection, for {@code d}; then passes them on. */
  void stall(Duration d) {
    stallUntilNanos = System.nanoTime() + d.toNanos();
    faultDone = true;
  }

  /** Whether a cut or a stall is in effect at {@code nowNanos} ({@link System#nanoTime}). */
  boolean faulted(long nowNanos) {
    return nowNanos - refuseUntilNanos < 0 || nowNanos - stallUntilNanos < 0;
  }

  /** Whether a cut or a stall was ever done. */
  boolean faultDone() {
    return faultDone;
  }

  /** When the last cut or stall ends or ended ({@link System#nanoTime}); meaningful once {@link #faultDone}. */
  long lastFaultEndsNanos() {
    long r = refuseUntilNanos;
    long s = stallUntilNanos;
    return r - s > 0 ? r : s;
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return; // closed
      }
      if (System.nanoTime() - refuseUntilNanos < 0) {
        closeQuietly(client);
        continue;
      }
      thread("tally-chaos-relay-connect", () -> relay(client)).start();
    }
  }

  private void relay(Socket client) {
    Socket server = new Socket();
    open.add(client);
    open.add(server);
    try {
      server.connect(database, CONNECT_TIMEOUT_MILLIS);
      client.setTcpNoDelay(true);
      server.setTcpNoDelay(true);
    } catch (IOException e) {
      end(client, server);
      return;
    }
    thread("tally-chaos-relay-up", () -> pump(client, server)).start();
    pump(server, client);
  }

  /** Copies {@code from} to {@code to} until either ends, holding each read through a stall. */
  private void pump(Socket from, Socket to) {
    byte[] buffer = new byte[BUFFER_BYTES];
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      for (int n; (n = in.read(buffer)) >= 0; ) {
        for (long wait; (wait = stallUntilNanos - System.nanoTime()) > 0 && !closed; ) {
          LockSupport.parkNanos(wait);
        }
        out.write(buffer, 0, n);
        out.flush();
      }
    } catch (SocketException e) {
      // closed by a cut, by the other pump, or by the peer
    } catch (IOException e) {
      // the peer went away
    } finally {
      end(from, to);
    }
  }

  private void end(Socket a, Socket b) {
    closeQuietly(a);
    closeQuietly(b);
    open.remove(a);
    open.remove(b);
  }

  private Thread thread(String name, Runnable body) {
    Thread t = new Thread(body, name + "-" + threads.incrementAndGet());
    t.setDaemon(true);
    return t;
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // closing anyway
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException e) {
      // closing anyway
    }
    for (Socket s : open) {
      closeQuietly(s);
    }
  }
}

package dev.tally.coordinator.net;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.channels.ServerSocketChannel;

/**
 * Whether a fixed port can be listened on now: checked before a command creates or writes anything (a
 * store, its lock, a leader epoch, workers' logs), so that a port another program holds is refused with
 * nothing left behind. The check binds and lets go at once, as the real listener binds ({@code
 * SO_REUSEADDR} on, so a port whose last connections are in {@code TIME_WAIT} passes); a program that takes
 * the port between the check and the listener's bind is still refused then, by the listener. Also the one
 * way a listening address is written in a message ({@link #text}).
 *
 * <p>Thread-safety: stateless.
 */
public final class PortCheck {
  private PortCheck() {}

  /**
   * Binds {@code address} and closes it again; does nothing for port 0 (the system's choice, always free).
   *
   * @param address a host (resolved, or a name that is resolved now) and a port, 0 to 65535
   * @throws IOException if the address cannot be bound now (another program listens on it, it is no
   *     address of this machine, the port needs privileges), with the system's reason; an {@link
   *     UnknownHostException} if the host name does not resolve
   */
  public static void requireFree(InetSocketAddress address) throws IOException {
    if (address.getPort() == 0) {
      return;
    }
    if (address.isUnresolved()) { // binding it would throw the unchecked UnresolvedAddressException
      throw new UnknownHostException("the host '" + address.getHostString() + "' cannot be resolved");
    }
    try (ServerSocketChannel probe = ServerSocketChannel.open()) {
      probe.setOption(StandardSocketOptions.SO_REUSEADDR, true);
      probe.bind(address, 1);
    }
  }

  /**
   * Whether two fixed listening addresses would take the same port: the same port number on the same
   * address, or on any address where either is a wildcard ({@code 0.0.0.0}, {@code ::}). Port 0 never
   * clashes (each gets a port of its own). Unresolved hosts are compared by name, ignoring case.
   *
   * @return true if binding both would fail
   */
  public static boolean clash(InetSocketAddress a, InetSocketAddress b) {
    if (a.getPort() == 0 || a.getPort() != b.getPort()) {
      return false;
    }
    InetAddress x = a.getAddress();
    InetAddress y = b.getAddress();
    if (x == null || y == null) {
      return a.getHostString().equalsIgnoreCase(b.getHostString());
    }
    return x.isAnyLocalAddress() || y.isAnyLocalAddress() || x.equals(y);
  }

  /**
   * {@code HOST:PORT}, an IPv6 host in brackets ({@code [::1]:7070}), as messages write an address.
   *
   * @param host a name or a literal address, as given
   * @param port the port number
   */
  public static String text(String host, int port) {
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
  }
}

package dev.tally.coordinator.net;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;

/**
 * Whether a fixed port can be listened on now: checked before a command creates or writes anything (a
 * store, its lock, a leader epoch, workers' logs), so that a port another program holds is refused with
 * nothing left behind. The check binds and lets go at once, as the real listener binds ({@code
 * SO_REUSEADDR} on, so a port whose last connections are in {@code TIME_WAIT} passes); a program that takes
 * the port between the check and the listener's bind is still refused then, by the listener.
 *
 * <p>Thread-safety: stateless.
 */
public final class PortCheck {
  private PortCheck() {}

  /**
   * Binds {@code address} and closes it again; does nothing for port 0 (the system's choice, always free).
   *
   * @throws IOException if the address cannot be bound now (another program listens on it, it is no
   *     address of this machine, the port needs privileges), with the system's reason
   */
  public static void requireFree(InetSocketAddress address) throws IOException {
    if (address.getPort() == 0) {
      return;
    }
    try (ServerSocketChannel probe = ServerSocketChannel.open()) {
      probe.setOption(StandardSocketOptions.SO_REUSEADDR, true);
      probe.bind(address, 1);
    }
  }
}

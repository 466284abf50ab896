package dev.tally.cli;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.SplittableRandom;

/** Picking a fixed port for a coordinator that workers may dial before it listens. */
public final class Ports {
  /** Linux hands out source ports from 32768 up; a port below that range is never taken as one. */
  static final int LOWEST = 20_000;
  static final int HIGHEST_EXCLUSIVE = 32_000;

  private Ports() {}

  /**
   * A loopback port free now, below the ephemeral range. A port from the ephemeral range (what binding
   * port 0 gives) can be taken meanwhile as the source port of an outgoing connection — even a worker's
   * own attempt to dial it, which TCP then connects to itself — and the coordinator could not bind it.
   *
   * @throws IOException if 200 random ports in [20000, 32000) were all taken
   */
  public static int freeFixedLoopbackPort() throws IOException {
    SplittableRandom random = new SplittableRandom();
    for (int i = 0; i < 200; i++) {
      int port = random.nextInt(LOWEST, HIGHEST_EXCLUSIVE);
      try (ServerSocket probe = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        return port;
      } catch (IOException taken) {
        // try another
      }
    }
    throw new IOException("no free loopback port found between " + LOWEST + " and " + HIGHEST_EXCLUSIVE);
  }
}

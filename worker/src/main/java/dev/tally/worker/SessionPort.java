package dev.tally.worker;

import dev.tally.protocol.Envelope;

/**
 * What the {@link SessionCore} asks of the world: its output port. The Netty driver ({@link
 * WorkerSession}) carries these out on a socket; the deterministic simulation carries them out on its
 * virtual network and clock.
 *
 * <p>Every method is called on the core's thread and must return at once: none may block, and none
 * may call back into the core (the outcome of a request comes later, as an event: {@link
 * SessionCore#connected}, {@link SessionCore#connectFailed}, {@link SessionCore#disconnected}).
 */
public interface SessionPort {
  /** Writes {@code frame} on the current connection, after those written before it; not yet flushed. */
  void send(Envelope frame);

  /** Flushes what was written. */
  void flush();

  /**
   * Closes the current connection. Its end is reported later through {@link SessionCore#disconnected}
   * (or, for a connection not yet made, {@link SessionCore#connectFailed}).
   *
   * @param afterWrites true to let the frames already written go out first (a Goodbye), at most for a
   *     short while; false to close at once (the peer is judged silent, or broke the protocol)
   */
  void close(boolean afterWrites);

  /** Opens a connection to the coordinator after {@code delayNanos} (0: now). */
  void connectIn(long delayNanos);

  /**
   * The worker was welcomed for the first time since it started: it has joined its coordinator, and a
   * person watching it may be told. Later Welcomes (after a reconnect) are not reported here; the core
   * logs those. Does nothing unless a driver has someone to tell.
   */
  default void joined() {}

  /**
   * The session is over, for the reason given: stop everything (no further event reaches the core). The
   * frames and the close the core asked for just before still happen.
   */
  void ended(Termination termination);
}

package dev.tally.core.detect;

/**
 * Judges one connection's liveness from the arrival times of its frames.
 *
 * <p>Any frame is evidence of life; heartbeats exist to fill silence. Times are monotonic nanoseconds
 * from a {@link dev.tally.core.Ticker}, passed in by the caller: a detector reads no clock.
 *
 * <p>Suspicion is graded: {@link #suspicion} rises with silence; at or above {@link #convictionLevel} the
 * connection is reaped. Levels are comparable only within one detector kind.
 *
 * <p>Thread-safety: not thread-safe; one instance per connection, touched only on that connection's
 * event loop.
 */
public interface FailureDetector {

  /** Records that a frame arrived at {@code nowNanos}. */
  void heartbeat(long nowNanos);

  /** The current suspicion at {@code nowNanos}: 0 right after a frame, rising with silence. */
  double suspicion(long nowNanos);

  /** The suspicion at which the connection is convicted and reaped. */
  double convictionLevel();

  /** Whether the connection is convicted at {@code nowNanos}. */
  default boolean convicted(long nowNanos) {
    return suspicion(nowNanos) >= convictionLevel();
  }

  /**
   * The suspicion at or above which the connection is <em>draining</em>: it is given no new jobs, but
   * keeps the ones it holds and is not reaped. Never above {@link #convictionLevel}; the default, equal to
   * it, means "no separate drain stage".
   */
  default double drainLevel() {
    return convictionLevel();
  }

  /**
   * Whether the connection is draining at {@code nowNanos}: its suspicion is at or above
   * {@link #drainLevel}. A convicted connection is also draining.
   */
  default boolean draining(long nowNanos) {
    return suspicion(nowNanos) >= drainLevel();
  }

  /** A short human description of the detector and its settings, for logs. */
  String describe();
}

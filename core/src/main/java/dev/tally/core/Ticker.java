package dev.tally.core;

/**
 * A monotonic source of elapsed time in nanoseconds, for detectors and timeouts.
 *
 * <p>Only differences between two readings mean anything (like {@link System#nanoTime()}). Wall time, for
 * what a person reads and what the store persists, comes from a {@link java.time.Clock} instead.
 * Implementations must be safe to call from any thread.
 */
@FunctionalInterface
public interface Ticker {
  /**
   * The longest duration a setting of Tally's may hold (a timeout, a drain, a give-up time): 365 days. Far
   * beyond anything meant, and far below where a reading in nanoseconds plus such a duration overflows
   * (292 years), which is where a mistyped value of many digits used to break a drain or a retry loop.
   */
  java.time.Duration MAX_DURATION = java.time.Duration.ofDays(365);

  /** Returns the current reading in nanoseconds; never decreases between two calls. */
  long nanos();

  /** The system ticker, backed by {@link System#nanoTime()}. */
  static Ticker system() {
    return System::nanoTime;
  }
}

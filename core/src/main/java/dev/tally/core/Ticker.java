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
  /** Returns the current reading in nanoseconds; never decreases between two calls. */
  long nanos();

  /** The system ticker, backed by {@link System#nanoTime()}. */
  static Ticker system() {
    return System::nanoTime;
  }
}

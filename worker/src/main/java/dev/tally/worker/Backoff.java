package dev.tally.worker;

import java.time.Duration;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Reconnect delays: exponential backoff with full jitter. The n-th delay (counting from 0) is drawn
 * uniformly from {@code [0, min(max, initial * 2^n)]}; {@link #reset()} starts over after a success.
 *
 * <p>Why full jitter: when a coordinator restarts, every worker of the fleet reconnects at once; drawing the
 * whole delay at random spreads those reconnects over the window instead of sending them in synchronized
 * waves (M. Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015). The cost is that a
 * delay can be near zero; the growing window still bounds the average rate.
 *
 * <p>Not thread-safe: one instance belongs to one session and is used on its event loop.
 */
public final class Backoff {
  private final long initialNanos;
  private final long maxNanos;
  private final RandomGenerator random;
  private int attempt;

  /**
   * @param initial the first delay's upper bound; positive
   * @param max the largest upper bound; at least {@code initial}
   * @param random the source of jitter (seed it to replay a test)
   * @throws IllegalArgumentException if {@code initial} is not positive or {@code max < initial}
   */
  public Backoff(Duration initial, Duration max, RandomGenerator random) {
    if (initial.isZero() || initial.isNegative()) {
      throw new IllegalArgumentException("initial backoff must be positive, got " + initial);
    }
    if (max.compareTo(initial) < 0) {
      throw new IllegalArgumentException(
          "max backoff must be at least the initial backoff " + initial + ", got " + max);
    }
    this.initialNanos = initial.toNanos();
    this.maxNanos = max.toNanos();
    this.random = Objects.requireNonNull(random, "random");
  }

  /** The next delay, and a doubled window for the one after. */
  public Duration next() {
    long cap = currentCapNanos();
    if (cap < maxNanos) {
      attempt++;
    }
    return Duration.ofNanos(random.nextLong(cap + 1));
  }

  /** The upper bound the next {@link #next()} draws under. */
  public Duration currentCap() {
    return Duration.ofNanos(currentCapNanos());
  }

  /** Starts over from the initial window (call after a successful connection). */
  public void reset() {
    attempt = 0;
  }

  private long currentCapNanos() {
    // initial * 2^attempt without overflow: stop doubling once past max.
    long cap = initialNanos;
    for (int i = 0; i < attempt && cap < maxNanos; i++) {
      cap = cap > maxNanos / 2 ? maxNanos : cap * 2;
    }
    return Math.min(cap, maxNanos);
  }
}

package dev.tally.core.schedule;

import java.time.Duration;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * How long a job waits before it is offered again after a retryable failure: exponential backoff with
 * full jitter (the delay is drawn uniformly from {@code [0, min(max, base * 2^(attempt-1))]}), as
 * described in Brooker, "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015).
 *
 * <p>Why jitter: when a worker dies, all of its jobs fail at once; without jitter they would all come
 * back at the same instant and land on the same survivors together.
 *
 * <p>Defaults: base {@value #DEFAULT_BASE_MILLIS} ms, max {@value #DEFAULT_MAX_MILLIS} ms. Too low a
 * base hammers a fleet that is failing for a shared reason; too high a one slows every redelivery.
 *
 * <p>Immutable and thread-safe; randomness comes from the caller, so a simulation can seed it.
 */
public final class RetryPolicy {
  /** Default first backoff: short, because most redeliveries follow one worker's death. */
  public static final long DEFAULT_BASE_MILLIS = 100;
  /** Default cap: a job never waits more than this between attempts. */
  public static final long DEFAULT_MAX_MILLIS = 10_000;

  private final Duration base;
  private final Duration max;

  private RetryPolicy(Duration base, Duration max) {
    this.base = base;
    this.max = max;
  }

  /** The default policy. */
  public static RetryPolicy defaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The backoff before attempt {@code failedAttempt + 1}.
   *
   * @param failedAttempt the attempt that just failed, 1-based
   * @param random the random source (seeded in simulation)
   * @return a delay in {@code [0, min(max, base * 2^(failedAttempt-1))]}
   * @throws IllegalArgumentException if {@code failedAttempt < 1}
   */
  public Duration backoff(int failedAttempt, RandomGenerator random) {
    if (failedAttempt < 1) {
      throw new IllegalArgumentException("failedAttempt must be >= 1, got " + failedAttempt);
    }
    int shift = Math.min(failedAttempt - 1, 30);
    long ceiling = Math.min(max.toMillis(), base.toMillis() << shift);
    if (ceiling <= 0) {
      return Duration.ZERO;
    }
    return Duration.ofMillis(random.nextLong(ceiling + 1));
  }

  public Duration base() {
    return base;
  }

  public Duration max() {
    return max;
  }

  /** Builds a {@link RetryPolicy}; every setter validates its argument. Not thread-safe. */
  public static final class Builder {
    private Duration base = Duration.ofMillis(DEFAULT_BASE_MILLIS);
    private Duration max = Duration.ofMillis(DEFAULT_MAX_MILLIS);

    /**
     * Sets the first backoff.
     *
     * @throws IllegalArgumentException if {@code base} is negative
     */
    public Builder base(Duration base) {
      Objects.requireNonNull(base, "base");
      if (base.isNegative()) {
        throw new IllegalArgumentException("base backoff must be >= 0, got " + base);
      }
      this.base = base;
      return this;
    }

    /**
     * Sets the longest backoff.
     *
     * @throws IllegalArgumentException if {@code max} is negative
     */
    public Builder max(Duration max) {
      Objects.requireNonNull(max, "max");
      if (max.isNegative()) {
        throw new IllegalArgumentException("max backoff must be >= 0, got " + max);
      }
      this.max = max;
      return this;
    }

    /**
     * Builds the policy.
     *
     * @throws IllegalArgumentException if max is below base
     */
    public RetryPolicy build() {
      if (max.compareTo(base) < 0) {
        throw new IllegalArgumentException("max backoff (" + max + ") must be >= base backoff (" + base + ")");
      }
      return new RetryPolicy(base, max);
    }
  }
}

package dev.tally.core.detect;

import java.time.Duration;

/**
 * The inactivity reaper: convicts a connection after one whole window with no frame at all.
 *
 * <p>Suspicion is the fraction of the window that has passed in silence ({@code silence / window}), so
 * conviction is at 1.0. The window must hold several heartbeat intervals: with an interval close to the
 * window, ordinary jitter reaps live workers; with a window far larger than needed, real deaths are found
 * late. Tally's default is a 500 ms interval in a 5 s window.
 *
 * <p>Draining starts after {@code drainAfter} of silence (suspicion {@code drainAfter / window}); the
 * default is {@link #DEFAULT_DRAIN_FRACTION} of the window, 3 s of the default 5 s: past the 2.0 s gap of
 * a 1.5 s GC pause on a 500 ms interval, so a paused worker is not starved of work, yet 2 s before the
 * reap, so a dead one stops being handed jobs first. In {@code tally bench-detectors} a live sender
 * reached it only on two heartbeats lost in a row (0.12 times an hour at 1% loss); draining after 2 s
 * instead idled workers 14 times an hour with GC pauses up to 1.5 s. Too low and every GC pause idles a
 * worker; too high (at the window) and there is no drain stage at all.
 *
 * <p>Thread-safety: not thread-safe; one instance per connection, touched only on its event loop.
 */
public final class FixedTimeoutDetector implements FailureDetector {
  /** The default detection window: five default heartbeat intervals. */
  public static final Duration DEFAULT_WINDOW = Duration.ofSeconds(5);

  /** The default drain point as a share of the window: 0.6, that is 3 s of the default 5 s window. */
  public static final double DEFAULT_DRAIN_FRACTION = 0.6;

  private final long windowNanos;
  private final long drainAfterNanos;
  private long lastArrivalNanos;

  /**
   * Creates a detector whose clock starts at {@code startNanos} (as if a frame arrived then), draining
   * after {@link #DEFAULT_DRAIN_FRACTION} of the window.
   *
   * @param window the silence that convicts; positive
   * @param startNanos the ticker reading when the connection opened
   * @throws IllegalArgumentException if {@code window} is zero or negative
   */
  public FixedTimeoutDetector(Duration window, long startNanos) {
    this(window, defaultDrainAfter(window), startNanos);
  }

  /**
   * Creates a detector whose clock starts at {@code startNanos} (as if a frame arrived then).
   *
   * @param window the silence that convicts; positive
   * @param drainAfter the silence after which the connection gets no new jobs; positive and at most
   *     {@code window} (equal means no separate drain stage)
   * @param startNanos the ticker reading when the connection opened
   * @throws IllegalArgumentException if {@code window} is zero or negative, or {@code drainAfter} is
   *     zero, negative or longer than {@code window}
   */
  public FixedTimeoutDetector(Duration window, Duration drainAfter, long startNanos) {
    if (window == null || window.isZero() || window.isNegative()) {
      throw new IllegalArgumentException("window must be positive, got " + window);
    }
    if (drainAfter == null || drainAfter.isZero() || drainAfter.isNegative()
        || drainAfter.compareTo(window) > 0) {
      throw new IllegalArgumentException(
          "drainAfter must be positive and at most the window (" + window + "), got " + drainAfter);
    }
    this.windowNanos = window.toNanos();
    this.drainAfterNanos = drainAfter.toNanos();
    this.lastArrivalNanos = startNanos;
  }

  /** {@link #DEFAULT_DRAIN_FRACTION} of {@code window}, at least one nanosecond; null stays null. */
  public static Duration defaultDrainAfter(Duration window) {
    if (window == null || window.isZero() || window.isNegative()) {
      return window; // the constructor rejects it with the window's own message
    }
    return Duration.ofNanos(Math.max(1, (long) (window.toNanos() * DEFAULT_DRAIN_FRACTION)));
  }

  @Override
  public void heartbeat(long nowNanos) {
    if (nowNanos > lastArrivalNanos) {
      lastArrivalNanos = nowNanos;
    }
  }

  @Override
  public double suspicion(long nowNanos) {
    long silence = Math.max(0, nowNanos - lastArrivalNanos);
    return (double) silence / windowNanos;
  }

  @Override
  public double convictionLevel() {
    return 1.0;
  }

  @Override
  public double drainLevel() {
    return (double) drainAfterNanos / windowNanos;
  }

  @Override
  public boolean convicted(long nowNanos) {
    return silence(nowNanos) >= windowNanos; // exact, free of the division's rounding
  }

  @Override
  public boolean draining(long nowNanos) {
    return silence(nowNanos) >= drainAfterNanos;
  }

  private long silence(long nowNanos) {
    return Math.max(0, nowNanos - lastArrivalNanos);
  }

  @Override
  public String describe() {
    return "fixed-timeout(window=" + Duration.ofNanos(windowNanos).toMillis() + "ms, drain after "
        + Duration.ofNanos(drainAfterNanos).toMillis() + "ms)";
  }
}

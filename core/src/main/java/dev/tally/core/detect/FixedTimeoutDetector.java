package dev.tally.core.detect;

import java.time.Duration;

/**
 * The inactivity reaper: convicts a connection after one whole window with no frame at all.
 *
 * <p>Suspicion is the fraction of the window that has passed in silence ({@code silence / window}), so
 * conviction is at 1.0. The window must hold several heartbeat intervals: with an interval close to the
 * window, ordinary jitter reaps live workers; with a window far larger than needed, real deaths are found
 * late. Tally's default is a 1 s interval in a 5 s window.
 *
 * <p>Thread-safety: not thread-safe; one instance per connection, touched only on its event loop.
 */
public final class FixedTimeoutDetector implements FailureDetector {
  /** The default detection window: five default heartbeat intervals. */
  public static final Duration DEFAULT_WINDOW = Duration.ofSeconds(5);

  private final long windowNanos;
  private long lastArrivalNanos;

  /**
   * Creates a detector whose clock starts at {@code startNanos} (as if a frame arrived then).
   *
   * @param window the silence that convicts; positive
   * @param startNanos the ticker reading when the connection opened
   * @throws IllegalArgumentException if {@code window} is zero or negative
   */
  public FixedTimeoutDetector(Duration window, long startNanos) {
    if (window == null || window.isZero() || window.isNegative()) {
      throw new IllegalArgumentException("window must be positive, got " + window);
    }
    this.windowNanos = window.toNanos();
    this.lastArrivalNanos = startNanos;
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
  public String describe() {
    return "fixed-timeout(window=" + Duration.ofNanos(windowNanos).toMillis() + "ms)";
  }
}

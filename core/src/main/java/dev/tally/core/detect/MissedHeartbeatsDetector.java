package dev.tally.core.detect;

import java.time.Duration;

/**
 * Convicts a connection after a set number of whole heartbeat intervals pass without a frame.
 *
 * <p>Suspicion is the number of intervals missed so far, as a fraction ({@code silence / interval}): 0
 * right after a frame, 2.5 after two and a half intervals of silence. The connection drains at
 * {@link Config#drainAfterMissed()} and is convicted at {@link Config#convictAfterMissed()}. This is the
 * {@link FixedTimeoutDetector} with its window counted in heartbeats rather than in seconds: the defaults
 * (a 500 ms interval, drain at 6, convict at 10) convict after the same 5 s of silence as the default fixed
 * window and drain after the same 3 s. Its worth is the unit: the setting survives a change of the
 * heartbeat interval, and the log says "5 missed heartbeats", which an operator can check against the
 * worker's heartbeat log.
 *
 * <p>Parameters, and what goes wrong when each is set badly:
 *
 * <ul>
 *   <li>{@code heartbeatInterval} (default {@link #DEFAULT_HEARTBEAT_INTERVAL}, 500 ms): must be the interval
 *       the workers are told to use. Set shorter than theirs and every worker looks late; longer and real
 *       deaths are found late.
 *   <li>{@code convictAfterMissed} (default {@link #DEFAULT_CONVICT_AFTER_MISSED}, 10): too low and one
 *       delayed heartbeat, a GC pause or a lost packet reaps a live worker: in {@code tally
 *       bench-detectors} at 500 ms, gaps reach 2.0 s (a 1.5 s GC pause) and 2.5 s (a 2 s GC pause), and 4
 *       missed intervals falsely reaped 19 times an hour with 2 s GC pauses. Too high and a dead worker
 *       keeps its leased jobs, and the run waits, for that many intervals. 10 is the default so that it
 *       matches the fixed window second for second (choosing a kind changes the unit, not the behaviour);
 *       5 (2.5 s) also made no false reap on any trace, and detects a stop in 2.3 s instead of 4.8 s.
 *   <li>{@code drainAfterMissed} (default {@link #DEFAULT_DRAIN_AFTER_MISSED}, 6): too low and every GC
 *       pause idles the worker for a moment (it gets no new jobs while drained); too high (at the
 *       conviction level) and there is no drain stage: a dying worker is handed new jobs until it is
 *       reaped. 6 (3 s) is past the 2.0 s gap of a 1.5 s GC pause and 2 s before the reap.
 * </ul>
 *
 * <p>Thread-safety: not thread-safe; one instance per connection, touched only on its event loop.
 */
public final class MissedHeartbeatsDetector implements FailureDetector {
  /** The default heartbeat interval, {@link DetectorSettings#DEFAULT_HEARTBEAT_INTERVAL}. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL;

  /** The default number of missed intervals that convicts: 10, i.e. 5 s at the default interval. */
  public static final int DEFAULT_CONVICT_AFTER_MISSED = 10;

  /** The default number of missed intervals that drains: 6, i.e. 3 s at the default interval. */
  public static final double DEFAULT_DRAIN_AFTER_MISSED = 6;

  /**
   * The most intervals a conviction may wait for. A worker silent for a thousand heartbeats is dead by
   * any measure; a larger setting is a typo (milliseconds where a count was meant).
   */
  public static final int MAX_CONVICT_AFTER_MISSED = 1_000;

  private final Config config;
  private final long intervalNanos;
  private final long convictAfterNanos;
  private long lastArrivalNanos;

  private MissedHeartbeatsDetector(Config config, long startNanos) {
    this.config = config;
    this.intervalNanos = config.heartbeatInterval.toNanos();
    this.convictAfterNanos = intervalNanos * config.convictAfterMissed;
    this.lastArrivalNanos = startNanos;
  }

  /** A builder holding every default. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public void heartbeat(long nowNanos) {
    if (nowNanos > lastArrivalNanos) {
      lastArrivalNanos = nowNanos;
    }
  }

  @Override
  public double suspicion(long nowNanos) {
    return (double) silence(nowNanos) / intervalNanos;
  }

  @Override
  public double convictionLevel() {
    return config.convictAfterMissed;
  }

  @Override
  public double drainLevel() {
    return config.drainAfterMissed;
  }

  /** Exact in nanoseconds: convicted once {@code convictAfterMissed} whole intervals have passed. */
  @Override
  public boolean convicted(long nowNanos) {
    return silence(nowNanos) >= convictAfterNanos;
  }

  private long silence(long nowNanos) {
    return Math.max(0, nowNanos - lastArrivalNanos);
  }

  @Override
  public String describe() {
    return config.describe();
  }

  /**
   * The validated, immutable settings of a {@link MissedHeartbeatsDetector}; a factory of detectors.
   * Built by {@link MissedHeartbeatsDetector#builder()}.
   */
  public static final class Config {
    private final Duration heartbeatInterval;
    private final int convictAfterMissed;
    private final double drainAfterMissed;

    private Config(Builder b) {
      this.heartbeatInterval = b.heartbeatInterval;
      this.convictAfterMissed = b.convictAfterMissed;
      this.drainAfterMissed = b.drainAfterMissed;
    }

    /** A new detector whose clock starts at {@code startNanos}, as if a frame arrived then. */
    public MissedHeartbeatsDetector newDetector(long startNanos) {
      return new MissedHeartbeatsDetector(this, startNanos);
    }

    /** The interval the workers heartbeat at. */
    public Duration heartbeatInterval() {
      return heartbeatInterval;
    }

    /** Missed intervals that convict. */
    public int convictAfterMissed() {
      return convictAfterMissed;
    }

    /** Missed intervals (possibly fractional) that drain. */
    public double drainAfterMissed() {
      return drainAfterMissed;
    }

    /** The silence that convicts: {@code convictAfterMissed x heartbeatInterval}. */
    public Duration detectionWindow() {
      return heartbeatInterval.multipliedBy(convictAfterMissed);
    }

    /** The silence that drains: {@code drainAfterMissed x heartbeatInterval}. */
    public Duration drainWindow() {
      return Duration.ofNanos(Math.round(heartbeatInterval.toNanos() * drainAfterMissed));
    }

    /** For logs, e.g. {@code missed-heartbeats(interval=1000ms, drain at 3 missed, convict at 5 missed)}. */
    public String describe() {
      return "missed-heartbeats(interval=" + heartbeatInterval.toMillis() + "ms, drain at "
          + formatCount(drainAfterMissed) + " missed, convict at " + convictAfterMissed + " missed)";
    }

    @Override
    public String toString() {
      return describe();
    }

    private static String formatCount(double d) {
      return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }
  }

  /**
   * Builds a {@link Config}; every setter validates its argument and says the rule it broke, and
   * {@link #build()} checks the rules between arguments.
   */
  public static final class Builder {
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private int convictAfterMissed = DEFAULT_CONVICT_AFTER_MISSED;
    private double drainAfterMissed = DEFAULT_DRAIN_AFTER_MISSED;

    private Builder() {}

    /** @throws IllegalArgumentException if null, zero or negative */
    public Builder heartbeatInterval(Duration interval) {
      if (interval == null || interval.isZero() || interval.isNegative()) {
        throw new IllegalArgumentException("heartbeatInterval must be positive, got " + interval);
      }
      this.heartbeatInterval = interval;
      return this;
    }

    /** @throws IllegalArgumentException if below 1 or above {@link #MAX_CONVICT_AFTER_MISSED} */
    public Builder convictAfterMissed(int missed) {
      if (missed < 1 || missed > MAX_CONVICT_AFTER_MISSED) {
        throw new IllegalArgumentException("convictAfterMissed must be between 1 and "
            + MAX_CONVICT_AFTER_MISSED + " heartbeat intervals, got " + missed);
      }
      this.convictAfterMissed = missed;
      return this;
    }

    /**
     * @throws IllegalArgumentException if not a finite number above 0 (whether it is at most
     *     {@code convictAfterMissed} is checked by {@link #build()})
     */
    public Builder drainAfterMissed(double missed) {
      if (!(missed > 0) || Double.isInfinite(missed)) {
        throw new IllegalArgumentException(
            "drainAfterMissed must be a finite number of heartbeat intervals above 0, got " + missed);
      }
      this.drainAfterMissed = missed;
      return this;
    }

    /**
     * @throws IllegalArgumentException if {@code drainAfterMissed > convictAfterMissed}, or the detection
     *     window ({@code convictAfterMissed x heartbeatInterval}) does not fit in a {@link Duration} of
     *     nanoseconds
     */
    public Config build() {
      if (drainAfterMissed > convictAfterMissed) {
        throw new IllegalArgumentException("drainAfterMissed must be at most convictAfterMissed ("
            + convictAfterMissed + "), got " + drainAfterMissed);
      }
      try {
        heartbeatInterval.multipliedBy(convictAfterMissed).toNanos();
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException("convictAfterMissed x heartbeatInterval must fit in a long of "
            + "nanoseconds (about 292 years), got " + convictAfterMissed + " x " + heartbeatInterval);
      }
      return new Config(this);
    }
  }
}

package dev.tally.core.detect;

import java.time.Duration;
import java.util.Objects;

/**
 * The allowance one worker is given for the scheduling lag it reports about itself: a worker whose own
 * timers ran 2 s late (its process starved of CPU, a long GC pause) can fall silent 2 s longer than its
 * heartbeat history suggests without being dead, so its silence is judged minus that much.
 *
 * <p>A worker measures how late its own session timer ran and sends the worst lateness since its previous
 * heartbeat in the next one ({@code Heartbeat.scheduling_lag_millis} in the protocol). The lag of the
 * very heartbeat that was late arrives with it, after the silence it caused, so the allowance protects
 * the <em>next</em> late beat: a worker that has been starved once is likely starved again (the same
 * overloaded machine), which is Lifeguard's point that a member's own slowness is information (Dadgar et
 * al., 2017; see {@link LocalHealth}).
 *
 * <p>The rule: the allowance is the largest lag reported, capped at {@link Config#maxAllowance()},
 * falling linearly to nothing over {@link Config#memory()} after it was reported; a new report replaces
 * it when larger than what is left of it. The cap bounds the cost: a worker that reported lag and then
 * died is convicted at most {@code maxAllowance} later.
 *
 * <p>Time is passed in (monotonic nanoseconds). Thread-safety: not thread-safe; one instance per
 * connection, touched only on its event loop.
 */
public final class PeerLag {
  /** The default {@link Config#maxAllowance()}: 5 s, the whole default fixed window again. */
  public static final Duration DEFAULT_MAX_ALLOWANCE = Duration.ofSeconds(5);

  /**
   * The default {@link Config#memory()}: 60 s. Starvation on a loaded machine comes in bouts seconds to
   * tens of seconds apart; a minute covers the next bout, and a worker whose machine has calmed down is
   * judged as before within a minute.
   */
  public static final Duration DEFAULT_MEMORY = Duration.ofSeconds(60);

  private final Config config;
  private long peakNanos;
  private long peakAtNanos;

  /** A worker that has reported no lag yet. */
  public PeerLag(Config config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /**
   * The worker reported, in a frame that arrived at {@code nowNanos}, that its timers ran up to {@code
   * lagNanos} late. Ignored when the allowance is off, or when it is not above what is left of the
   * current allowance.
   */
  public void report(long nowNanos, long lagNanos) {
    if (!config.enabled || lagNanos <= 0) {
      return;
    }
    long lag = Math.min(lagNanos, config.maxAllowanceNanos);
    if (lag > allowanceNanos(nowNanos)) {
      peakNanos = lag;
      peakAtNanos = nowNanos;
    }
  }

  /** The silence forgiven at {@code nowNanos}, in nanoseconds: 0 to {@link Config#maxAllowance()}. */
  public long allowanceNanos(long nowNanos) {
    if (peakNanos == 0) {
      return 0;
    }
    long age = Math.max(0, nowNanos - peakAtNanos);
    if (age >= config.memoryNanos) {
      return 0;
    }
    return (long) (peakNanos * (1 - (double) age / config.memoryNanos));
  }

  /** The settings of the allowance: an immutable value. */
  public static final class Config {
    private final boolean enabled;
    private final long maxAllowanceNanos;
    private final long memoryNanos;

    private Config(boolean enabled, Duration maxAllowance, Duration memory) {
      this.enabled = enabled;
      this.maxAllowanceNanos = maxAllowance.toNanos();
      this.memoryNanos = memory.toNanos();
    }

    /** {@link #DEFAULT_MAX_ALLOWANCE} remembered for {@link #DEFAULT_MEMORY}. */
    public static Config defaults() {
      return of(DEFAULT_MAX_ALLOWANCE, DEFAULT_MEMORY);
    }

    /** No allowance: reported lag is ignored. */
    public static Config off() {
      return new Config(false, Duration.ZERO, Duration.ofNanos(1));
    }

    /**
     * An allowance of at most {@code maxAllowance}, forgotten over {@code memory}.
     *
     * @throws IllegalArgumentException if {@code maxAllowance} is not positive or above a minute (a
     *     longer one is no failure detection), or {@code memory} is not positive or above an hour
     */
    public static Config of(Duration maxAllowance, Duration memory) {
      LocalHealth.Builder.between("maxAllowance", maxAllowance, Duration.ofNanos(1), Duration.ofMinutes(1));
      LocalHealth.Builder.between("memory", memory, Duration.ofNanos(1), Duration.ofHours(1));
      return new Config(true, maxAllowance, memory);
    }

    /** Whether reported lag is allowed for. */
    public boolean enabled() {
      return enabled;
    }

    /** The largest allowance. */
    public Duration maxAllowance() {
      return Duration.ofNanos(maxAllowanceNanos);
    }

    /** How long a reported lag takes to be forgotten. */
    public Duration memory() {
      return Duration.ofNanos(memoryNanos);
    }

    /** For logs. */
    public String describe() {
      return enabled
          ? "a worker's reported lag forgiven up to " + maxAllowance().toMillis() + " ms, forgotten over "
              + memory().toSeconds() + " s"
          : "workers' reported lag ignored";
    }
  }
}

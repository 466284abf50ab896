package dev.tally.core.detect;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * The observer's own health, as one multiplier that stretches every failure detector's judgement: when
 * the coordinator itself is starved (its timers run late) or many workers fall silent at once, silence
 * is more likely its own fault than theirs, so it waits longer before it convicts anyone.
 *
 * <p>Source: Lifeguard (Dadgar, Phillips and Currey, 2017, "Lifeguard: Local Health Awareness for More
 * Accurate Failure Detection", HashiCorp; also published as "Lifeguard: SWIM-ing with Situational
 * Awareness"). There a member keeps a saturating counter,
 * the <em>local health multiplier</em> (LHM, 0..8), raised by evidence that it is itself slow (a probe
 * it sent went unanswered, it had to refute a suspicion about itself) and lowered by evidence that it is
 * well (a probe answered in time); its probe timeouts are scaled by {@code LHM + 1}. In their tests this
 * made about 50x fewer false positives among members starved of CPU, for a small cost in detection
 * time. Tally keeps the counter and the scaling and changes the evidence, since a coordinator does not
 * probe:
 *
 * <ul>
 *   <li><b>Late ticks.</b> The driver calls {@link #tick} every {@link Config#tickPeriod()} (on the same
 *       event loops that read the workers' frames). A tick that comes at least {@link
 *       Config#lateTick()} later than asked shows this process is not getting the CPU it asks for: a
 *       frame that arrived may not yet have been read, and a heartbeat a worker meant to send may not
 *       have been scheduled either (the machine is shared). Score + 1.
 *   <li><b>Correlated silence.</b> Workers fail independently; a machine or a coordinator starves them
 *       all at once. A joined worker's connection is <em>silent</em> once no frame came from it for {@link
 *       Config#silentAfterHeartbeats()} heartbeat intervals ({@link #isSilent}): a busy or idle live
 *       worker sends something every interval, so two missed ones are already unusual, yet it is well
 *       before any detector convicts, leaving time to raise the score first. When at least {@link
 *       Config#minSessions()} connections are open and at least {@link Config#silentShare()} of them, and
 *       never fewer than {@value #MIN_SILENT_SESSIONS}, are silent at once, a tick raises the score by 1:
 *       one frozen worker is its own problem and is convicted on time, many at once are more likely the
 *       observer's.
 *   <li><b>Its own lag.</b> A late tick also says by how much: while this process was not running, frames
 *       that arrived went unread and heartbeats that were due may not have been sent either, so that much
 *       silence is forgiven every worker, on top of the multiplier, by the same rule a worker's reported
 *       lag is forgiven ({@link PeerLag}, with {@link Config#ownLag()}'s settings: the worst lateness,
 *       fading over a minute, capped). A starved machine stalls for seconds at a time (10 s at a load of
 *       90 on 2 cores), longer than any multiplier sensible for a healthy one covers.
 *   <li><b>Recovery.</b> The score falls by 1 for every {@link Config#decayAfter()} without a raise, so a
 *       healthy coordinator is back to judging with the detectors' own settings within {@code maxScore x
 *       decayAfter}.
 * </ul>
 *
 * <p>The multiplier is {@code 1 + score}, at most {@code 1 + maxScore} (9 by default): {@link HealthAwareDetector}
 * judges a silence of {@code s} as if it were {@code s / multiplier}, so every detector kind's conviction
 * and drain windows are stretched by it. That bounds the cost: a worker that is truly dead (and whose
 * socket stays open: a frozen process, a dropped network path) is convicted at most {@code 1 + maxScore}
 * times later than its detector alone would convict it (plus its own lag allowance, {@link PeerLag}). A
 * worker killed outright is found at once whatever the multiplier: its socket closes.
 *
 * <p>Parameters, and what goes wrong when each is set badly (the measurement is {@code tally
 * bench-failover --starved}):
 *
 * <ul>
 *   <li>{@code tickPeriod} (default {@link #DEFAULT_TICK_PERIOD}, 100 ms): how often lateness is sampled.
 *       Longer and a short starvation falls between two ticks unseen; shorter costs wake-ups for nothing.
 *       It matches the reaper's check period, so a starvation is seen before the next judgement.
 *   <li>{@code lateTick} (default {@link #DEFAULT_LATE_TICK}, 100 ms): too low and ordinary scheduling
 *       noise or a young GC (a few ms to tens of ms) keeps the multiplier up, so a frozen worker is found
 *       later for nothing; too high and a starved coordinator (whose ticks run a few hundred ms late at a
 *       load of 15 per core) is not noticed until it has already reaped.
 *   <li>{@code maxScore} (default {@link #DEFAULT_MAX_SCORE}, 8, Lifeguard's own: conviction waits at
 *       most 9 times its usual silence, about 23 s for phi at the defaults): too low and a machine starved
 *       for longer than the stretched window still reaps live workers (with 3, x4 or about 10 s, 30 worker
 *       JVMs starting on 2 cores at a load of 100 were silent 10.5 to 12 s each and 26 of them were
 *       reaped); too high and a frozen worker on a starved machine holds its jobs for that many windows.
 *       A killed worker is not concerned: its socket closes.
 *   <li>{@code decayAfter} (default {@link #DEFAULT_DECAY_AFTER}, 5 s): too short and the multiplier
 *       falls between two bouts of a sustained starvation (a loaded machine is late in bursts, seconds
 *       apart); too long and detection stays slow long after the machine has recovered.
 *   <li>{@code silentShare} (default {@link #DEFAULT_SILENT_SHARE}, a quarter) and {@code minSessions}
 *       (default {@link #DEFAULT_MIN_SESSIONS}, 3): too low and a few frozen workers make every other
 *       death slow to find; too high and a fleet starved together is reaped before it counts. Either
 *       way a single silent worker never counts ({@link #MIN_SILENT_SESSIONS}).
 *   <li>{@code silentAfterHeartbeats} (default {@link #DEFAULT_SILENT_AFTER_HEARTBEATS}): too low and
 *       ordinary jitter looks correlated; too high (near the detector's window) and the workers are
 *       reaped before their silence is seen to be shared.
 * </ul>
 *
 * <p>Time is passed in (monotonic nanoseconds); no clock, no I/O, so the simulation can drive it.
 *
 * <p>Thread-safety: thread-safe. One instance per worker port, shared by its sessions: they report
 * joins, ends and silence from their event loops, the driver ticks it from one of them, and {@link
 * #multiplier()} is a volatile read, cheap enough for every liveness check.
 */
public final class LocalHealth {
  /** The default {@link Config#tickPeriod()}: 100 ms, the reaper's check period at the defaults. */
  public static final Duration DEFAULT_TICK_PERIOD = Duration.ofMillis(100);

  /** The default {@link Config#lateTick()}: 100 ms, see the class doc. */
  public static final Duration DEFAULT_LATE_TICK = Duration.ofMillis(100);

  /** The default {@link Config#maxScore()}: 8, a multiplier of at most 9, Lifeguard's; see the class doc. */
  public static final int DEFAULT_MAX_SCORE = 8;

  /**
   * The largest {@code maxScore} allowed: 8, Lifeguard's own ceiling. Conviction waiting more than nine
   * times its usual silence is no longer failure detection.
   */
  public static final int MAX_MAX_SCORE = 8;

  /** The default {@link Config#decayAfter()}: 5 s, see the class doc. */
  public static final Duration DEFAULT_DECAY_AFTER = Duration.ofSeconds(5);

  /**
   * The largest silence forgiven for this process's own lateness by default: 10 s. The longest stalls
   * measured on a 2-core machine at a load of 90 ({@code tally bench-failover --starved} beside other
   * builds) left live workers silent for 10 s; a coordinator stalled longer than that is no longer
   * judging anything, and its workers' own detectors (10 s) give up on it too.
   */
  public static final Duration DEFAULT_OWN_LAG_ALLOWANCE = Duration.ofSeconds(10);

  /** The default {@link Config#silentShare()}: a quarter of the joined sessions. */
  public static final double DEFAULT_SILENT_SHARE = 0.25;

  /** The default {@link Config#minSessions()}: 3; with fewer, "many at once" means nothing. */
  public static final int DEFAULT_MIN_SESSIONS = 3;

  /**
   * The fewest silent sessions that are ever "many at once": 2. One frozen or dead worker, whatever the
   * fleet's size, must be convicted on its detector's own time (the failover promise), so it must never
   * stretch its own judgement.
   */
  public static final int MIN_SILENT_SESSIONS = 2;

  /**
   * The default {@link Config#silentAfterHeartbeats()}: 2 intervals (1 s at the default 500 ms), well
   * before the drain (about 2.1 s for phi) and conviction (about 2.5 s), so that correlated silence raises
   * the multiplier before anyone is reaped.
   */
  public static final int DEFAULT_SILENT_AFTER_HEARTBEATS = 2;

  private final Config config;
  private final Object lock = new Object();
  private volatile int score;
  /** Connections open, and those of them silent now ({@link #isSilent}); under {@link #lock}. */
  private int sessions;
  private int silent;
  private long lastTickNanos;
  private boolean ticked;
  private long lastChangeNanos;
  private long lateTicks;
  private long correlatedTicks;
  /** This process's own lag, by the rule of a worker's reported lag; under {@link #lock}. */
  private final PeerLag ownLag;

  /**
   * A healthy observer (multiplier 1) with {@code config}'s rule.
   *
   * @throws NullPointerException if {@code config} is null
   */
  public LocalHealth(Config config) {
    this.config = Objects.requireNonNull(config, "config");
    this.ownLag = new PeerLag(config.ownLag());
  }

  /** The rule this instance applies. */
  public Config config() {
    return config;
  }

  /**
   * The periodic tick at {@code nowNanos}, which the driver asked for {@link Config#tickPeriod()} after
   * the previous one ran (a fixed delay, so a starved loop does not run a burst of catch-up ticks). Raises
   * the score by 1 if this tick is late or the silence is correlated, else lets it decay (see the class
   * doc). The first tick only starts the clock. Does nothing when the rule is {@linkplain Config#enabled()
   * off}.
   *
   * @return what this tick found, for the driver's log
   */
  public Observation tick(long nowNanos) {
    synchronized (lock) {
      int before = score;
      if (!config.enabled) {
        return new Observation(0, false, false, before, before);
      }
      if (!ticked) {
        ticked = true;
        lastTickNanos = nowNanos;
        lastChangeNanos = nowNanos;
        return new Observation(0, false, false, before, before);
      }
      long lateNanos = Math.max(0, nowNanos - lastTickNanos - config.tickPeriodNanos);
      lastTickNanos = nowNanos;
      boolean late = lateNanos >= config.lateTickNanos;
      if (late) {
        ownLag.report(nowNanos, lateNanos);
      }
      boolean correlated = sessions >= config.minSessions
          && silent >= Math.max(MIN_SILENT_SESSIONS, Math.ceil(config.silentShare * sessions));
      if (late) {
        lateTicks++;
      }
      if (correlated) {
        correlatedTicks++;
      }
      int after = before;
      if (late || correlated) {
        after = Math.min(config.maxScore, before + 1);
        lastChangeNanos = nowNanos;
      } else if (before > 0 && nowNanos - lastChangeNanos >= config.decayAfterNanos) {
        after = before - 1;
        lastChangeNanos = nowNanos;
      }
      score = after;
      return new Observation(lateNanos, late, correlated, before, after);
    }
  }

  /**
   * A worker joined: its connection counts towards {@link Config#minSessions()} and the silent share from
   * now on. A connection still to say an accepted Hello does not count: it has proven nothing (a port
   * scanner, or anyone who reaches the port, can open many and stay silent), and it holds no job.
   */
  public void sessionOpened() {
    synchronized (lock) {
      sessions++;
    }
  }

  /**
   * A worker connection closed.
   *
   * @param wasSilent whether its last report ({@link #silenceChanged}) said it was silent
   */
  public void sessionClosed(boolean wasSilent) {
    synchronized (lock) {
      sessions = Math.max(0, sessions - 1);
      if (wasSilent) {
        silent = Math.max(0, silent - 1);
      }
    }
  }

  /**
   * Whether a session silent for {@code silenceNanos}, whose worker heartbeats every {@code
   * heartbeatIntervalNanos}, counts as silent for correlated silence: {@link
   * Config#silentAfterHeartbeats()} intervals or more.
   */
  public boolean isSilent(long silenceNanos, long heartbeatIntervalNanos) {
    return silenceNanos >= config.silentAfterHeartbeats * heartbeatIntervalNanos;
  }

  /**
   * An open connection became silent ({@code nowSilent}, by {@link #isSilent}) or was heard from again.
   * Each session reports only changes, so the count stays the number silent now.
   */
  public void silenceChanged(boolean nowSilent) {
    synchronized (lock) {
      silent = nowSilent ? silent + 1 : Math.max(0, silent - 1);
    }
  }

  /** The score, 0 (healthy) to {@link Config#maxScore()}. */
  public int score() {
    return score;
  }

  /**
   * How much longer than usual a silence must be to convict: {@code 1 + score}, 1 when healthy or when
   * the rule is off. Safe from any thread.
   */
  public double multiplier() {
    return 1 + score;
  }

  /**
   * The silence forgiven every worker at {@code nowNanos} for this process's own recent lag: 0 to {@link
   * Config#ownLag()}'s cap (0 when the rule is off). Safe from any thread.
   */
  public long ownLagAllowanceNanos(long nowNanos) {
    synchronized (lock) {
      return ownLag.allowanceNanos(nowNanos);
    }
  }

  /** For the API and logs: the multiplier, the score's causes so far, and the sessions silent now. */
  public Snapshot snapshot() {
    synchronized (lock) {
      return new Snapshot(config.enabled, multiplier(), score, lateTicks, correlatedTicks, sessions, silent);
    }
  }

  /**
   * What one {@link #tick} found.
   *
   * @param lateNanos how much later than asked the tick ran (0 if on time)
   * @param late whether that was at least {@link Config#lateTick()}
   * @param correlated whether the silent share was reached
   * @param scoreBefore the score before the tick
   * @param scoreAfter the score after it
   */
  public record Observation(long lateNanos, boolean late, boolean correlated, int scoreBefore, int scoreAfter) {
    /** Whether the score moved. */
    public boolean changed() {
      return scoreBefore != scoreAfter;
    }

    /** For the log: why the score moved, in words. */
    public String reason() {
      if (scoreAfter < scoreBefore) {
        return "healthy again";
      }
      StringBuilder s = new StringBuilder();
      if (late) {
        s.append("a timer ran ").append(Duration.ofNanos(lateNanos).toMillis()).append(" ms late");
      }
      if (correlated) {
        s.append(s.length() > 0 ? "; " : "").append("many workers silent at once");
      }
      return s.toString();
    }
  }

  /**
   * The state for a reader (the API, a bench).
   *
   * @param enabled whether the rule is on
   * @param multiplier the current multiplier
   * @param score the current score
   * @param lateTicks late ticks seen since start
   * @param correlatedTicks ticks that found correlated silence since start
   * @param sessions worker connections open now
   * @param silentSessions of them, silent past their drain level now
   */
  public record Snapshot(boolean enabled, double multiplier, int score, long lateTicks, long correlatedTicks,
      int sessions, int silentSessions) {}

  /**
   * The validated, immutable settings of local health, peer lag allowance included. Built by {@link
   * #builder()}; {@link #defaults()} and {@link #off()} are the two common ones.
   */
  public static final class Config {
    private final boolean enabled;
    private final long tickPeriodNanos;
    private final long lateTickNanos;
    private final int maxScore;
    private final long decayAfterNanos;
    private final double silentShare;
    private final int minSessions;
    private final int silentAfterHeartbeats;
    private final PeerLag.Config peerLag;
    private final PeerLag.Config ownLag;

    private Config(Builder b) {
      this.enabled = b.enabled;
      this.tickPeriodNanos = b.tickPeriod.toNanos();
      this.lateTickNanos = b.lateTick.toNanos();
      this.maxScore = b.maxScore;
      this.decayAfterNanos = b.decayAfter.toNanos();
      this.silentShare = b.silentShare;
      this.minSessions = b.minSessions;
      this.silentAfterHeartbeats = b.silentAfterHeartbeats;
      this.peerLag = b.enabled ? b.peerLag : PeerLag.Config.off();
      this.ownLag = b.enabled ? b.ownLag : PeerLag.Config.off();
    }

    /** Every default: the rule is on. */
    public static Config defaults() {
      return builder().build();
    }

    /**
     * The rule off: the multiplier stays 1 and workers' reported lag is ignored, so detectors judge
     * exactly as their own settings say (Tally before local health; a bench's baseline).
     */
    public static Config off() {
      return builder().enabled(false).build();
    }

    /** A builder holding every default. */
    public static Builder builder() {
      return new Builder();
    }

    /** Whether the rule is on. */
    public boolean enabled() {
      return enabled;
    }

    /** How often the driver ticks. */
    public Duration tickPeriod() {
      return Duration.ofNanos(tickPeriodNanos);
    }

    /** How late a tick must be to count against health. */
    public Duration lateTick() {
      return Duration.ofNanos(lateTickNanos);
    }

    /** The highest score; the multiplier is at most one more. */
    public int maxScore() {
      return maxScore;
    }

    /** How long without a raise before the score falls by one. */
    public Duration decayAfter() {
      return Duration.ofNanos(decayAfterNanos);
    }

    /** The share of joined sessions that, silent at once, count against health. */
    public double silentShare() {
      return silentShare;
    }

    /** The fewest joined sessions for correlated silence to count. */
    public int minSessions() {
      return minSessions;
    }

    /** How many heartbeat intervals without a frame make a session silent ({@link #isSilent}). */
    public int silentAfterHeartbeats() {
      return silentAfterHeartbeats;
    }

    /** How a worker's reported scheduling lag is allowed for ({@link PeerLag}). */
    public PeerLag.Config peerLag() {
      return peerLag;
    }

    /** How this process's own lateness (its late ticks) is allowed for, every worker alike. */
    public PeerLag.Config ownLag() {
      return ownLag;
    }

    /** For logs. */
    public String describe() {
      if (!enabled) {
        return "local health off";
      }
      return String.format(Locale.ROOT, "local health (tick %d ms, late at %d ms, multiplier up to %d, decay %d ms, "
              + "%.0f%% of at least %d sessions silent for %d heartbeats at once; %s", tickPeriod().toMillis(),
          lateTick().toMillis(), maxScore + 1, decayAfter().toMillis(), silentShare * 100, minSessions,
          silentAfterHeartbeats, peerLag.describe()) + "; own lateness forgiven up to "
          + ownLag.maxAllowance().toMillis() + " ms)";
    }

    @Override
    public String toString() {
      return describe();
    }
  }

  /** Builds a {@link Config}; every setter validates its argument and says the rule it broke. */
  public static final class Builder {
    private boolean enabled = true;
    private Duration tickPeriod = DEFAULT_TICK_PERIOD;
    private Duration lateTick = DEFAULT_LATE_TICK;
    private int maxScore = DEFAULT_MAX_SCORE;
    private Duration decayAfter = DEFAULT_DECAY_AFTER;
    private double silentShare = DEFAULT_SILENT_SHARE;
    private int minSessions = DEFAULT_MIN_SESSIONS;
    private int silentAfterHeartbeats = DEFAULT_SILENT_AFTER_HEARTBEATS;
    private PeerLag.Config peerLag = PeerLag.Config.defaults();
    private PeerLag.Config ownLag = PeerLag.Config.of(DEFAULT_OWN_LAG_ALLOWANCE, PeerLag.DEFAULT_MEMORY);

    private Builder() {}

    /** On (the default) or off; see {@link Config#off()}. */
    public Builder enabled(boolean enabled) {
      this.enabled = enabled;
      return this;
    }

    /** @throws IllegalArgumentException if not positive or above a minute */
    public Builder tickPeriod(Duration period) {
      this.tickPeriod = between("tickPeriod", period, Duration.ofNanos(1), Duration.ofMinutes(1));
      return this;
    }

    /** @throws IllegalArgumentException if not positive or above a minute */
    public Builder lateTick(Duration late) {
      this.lateTick = between("lateTick", late, Duration.ofNanos(1), Duration.ofMinutes(1));
      return this;
    }

    /** @throws IllegalArgumentException if not from 1 to {@link #MAX_MAX_SCORE} */
    public Builder maxScore(int maxScore) {
      if (maxScore < 1 || maxScore > MAX_MAX_SCORE) {
        throw new IllegalArgumentException("maxScore must be from 1 to " + MAX_MAX_SCORE
            + " (the multiplier is at most maxScore + 1), got " + maxScore);
      }
      this.maxScore = maxScore;
      return this;
    }

    /** @throws IllegalArgumentException if not positive or above an hour */
    public Builder decayAfter(Duration decayAfter) {
      this.decayAfter = between("decayAfter", decayAfter, Duration.ofNanos(1), Duration.ofHours(1));
      return this;
    }

    /** @throws IllegalArgumentException if not above 0 and at most 1 */
    public Builder silentShare(double share) {
      if (!(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("silentShare must be above 0 and at most 1, got " + share);
      }
      this.silentShare = share;
      return this;
    }

    /** @throws IllegalArgumentException if below 2 (one silent session is not a correlation) */
    public Builder minSessions(int minSessions) {
      if (minSessions < 2) {
        throw new IllegalArgumentException("minSessions must be at least 2 (one silent session correlates with"
            + " nothing), got " + minSessions);
      }
      this.minSessions = minSessions;
      return this;
    }

    /**
     * @throws IllegalArgumentException if below 2 (one late heartbeat is ordinary jitter) or above 100 (no
     *     detector waits that long)
     */
    public Builder silentAfterHeartbeats(int heartbeats) {
      if (heartbeats < 2 || heartbeats > 100) {
        throw new IllegalArgumentException("silentAfterHeartbeats must be from 2 to 100, got " + heartbeats);
      }
      this.silentAfterHeartbeats = heartbeats;
      return this;
    }

    /** @throws NullPointerException if null */
    public Builder peerLag(PeerLag.Config peerLag) {
      this.peerLag = Objects.requireNonNull(peerLag, "peerLag");
      return this;
    }

    /** @throws NullPointerException if null */
    public Builder ownLag(PeerLag.Config ownLag) {
      this.ownLag = Objects.requireNonNull(ownLag, "ownLag");
      return this;
    }

    /** The settings; off ({@link #enabled(boolean) enabled(false)}) also turns the peer lag allowance off. */
    public Config build() {
      return new Config(this);
    }

    static Duration between(String name, Duration d, Duration min, Duration max) {
      if (d == null || d.compareTo(min) < 0 || d.compareTo(max) > 0) {
        throw new IllegalArgumentException(name + " must be from " + min + " to " + max + ", got " + d);
      }
      return d;
    }
  }
}

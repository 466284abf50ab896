package dev.tally.core.schedule;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * When to start a backup attempt of a straggling case, which cases to copy and on which workers: the
 * decision of speculative execution, pure (no clock, no I/O: elapsed times are passed in), so that the
 * simulation and the tests drive it as the scheduler does. The store's half of speculation, recording
 * whichever live attempt reports first and abandoning the others, is {@code BatchRules}'.
 *
 * <p><b>Source.</b> Zaharia et al., "Improving MapReduce Performance in Heterogeneous Environments" (OSDI
 * 2008), the LATE scheduler: copy the running tasks with the <em>longest estimated time left</em>, only onto
 * <em>fast</em> nodes, and cap the copies in flight. Tally's workers report no progress within a case, so a
 * case's time left is estimated from its run's typical duration (the median of its recorded attempts) scaled
 * by its holder's slowness (how much longer than typical the holder's recorded attempts took: the median of
 * its last few ratios, so that one inherently long case does not mark a worker slow), less the time it has already run; once it has run past that, as much again as it has run (a case
 * that outlived its estimate is expected to last about as long again): {@code left = max(typical *
 * slowness(holder), 2 * elapsed) - elapsed}. An attempt on a worker ten times slower than the rest thus ranks
 * first even before it is far past typical, and among overdue attempts the longest-running does.
 *
 * <p><b>When.</b> Only near the end of a run, when nothing is left to lease (a free slot would otherwise
 * take new work: a backup never displaces a first attempt), and only for an attempt that has run past
 * {@link #slownessFactor()} times its run's typical duration and at least {@link #minElapsed()} on a holder
 * not known to be healthy (its slowness unknown, or at least {@link #slownessFactor()}: on a worker whose
 * cases take their usual time, a case that runs long is long itself, and a fresh copy would take as long
 * again, as CPython's {@code test_cmd_line} among its sub-second modules does), unless the attempt waits
 * in its holder's queue behind a running case (prefetched: it has not started, and a copy on an idle slot
 * starts at once); or, on a
 * worker known to be slow, at once if a fresh copy is expected to end at least {@link #minElapsed()} sooner
 * ({@code typical * slowness(holder) - elapsed - typical >= minElapsed}: LATE copies a task as soon as its
 * progress rate marks it slow, not when it is already late).
 *
 * <p><b>Where.</b> A worker with a free slot that holds no attempt of the case and is not slow: its slowness
 * is at most the {@value #FAST_WORKER_QUANTILE} quantile of the fleet's known slownesses (LATE's
 * SlowNodeThreshold: the slowest quarter takes no copies). A worker with no recorded attempt yet counts as
 * fast.
 *
 * <p><b>How many.</b> At most {@link #maxBackups(int)} backups in flight at once (LATE's SpeculativeCap: a
 * share of the fleet's slots, at least {@value #MIN_BACKUPS}), and one per case ({@code
 * BatchRules.MAX_BACKUPS_PER_JOB}).
 *
 * <p><b>Which runs.</b> {@link Mode#AUTO} copies cases of every run but those whose evaluator is paid per
 * call ({@link #PAID_EVALUATORS}: a backup of a model call pays twice); {@link Mode#ON} copies every run's,
 * {@link Mode#OFF} none.
 *
 * <p>Immutable; thread-safe.
 *
 * @param mode which runs' cases may be copied
 * @param slownessFactor an attempt is a straggler once it has run this many times its run's typical
 *     duration; at least 1. Too low, and the normal spread of case durations is copied (paying slots for
 *     nothing); too high, and a straggler holds the run's end for longer
 * @param minElapsed an attempt younger than this is never copied: for cases of milliseconds, the copy's
 *     dispatch costs more than waiting
 * @param capShare the share of the fleet's slots that backups may take at once, in (0, 1]
 * @param minSamples a run's typical duration is known once this many of its attempts were recorded
 */
public record SpeculationPolicy(Mode mode, double slownessFactor, Duration minElapsed, double capShare, int minSamples) {

  /** Which runs' cases may be copied. */
  public enum Mode {
    /** Every run's but those of {@link #PAID_EVALUATORS} (the default). */
    AUTO,
    /** Every run's, paid evaluators' included. */
    ON,
    /** None: no backup attempt is ever started. */
    OFF;

    /**
     * The mode for a command-line word: {@code on} is {@link #ON}, {@code off} is {@link #OFF}, {@code auto}
     * is {@link #AUTO}.
     *
     * @throws IllegalArgumentException naming the word and the choices if it is none of them
     */
    public static Mode parse(String word) {
      return switch (word.toLowerCase(Locale.ROOT)) {
        case "on" -> ON;
        case "off" -> OFF;
        case "auto" -> AUTO;
        default -> throw new IllegalArgumentException("speculation must be on, off or auto, got '" + word + "'");
      };
    }
  }

  /** Evaluators whose every call is paid: {@link Mode#AUTO} copies none of their cases. */
  public static final Set<String> PAID_EVALUATORS = Set.of("model");

  /**
   * 2: twice the run's median. LATE copies a task whose progress rate is well below the others'; with no
   * progress reports, twice the median leaves the normal spread of a run's cases alone (in the CPython test
   * suite and in model evals the slowest tenth of cases take 2-3x the median) while catching a 10x worker
   * long before its case would end.
   */
  public static final double DEFAULT_SLOWNESS_FACTOR = 2.0;

  /** 1 second: below that a backup's dispatch and a slot's turnover cost as much as the wait they save. */
  public static final Duration DEFAULT_MIN_ELAPSED = Duration.ofSeconds(1);

  /** 10% of the fleet's slots, LATE's SpeculativeCap (at least {@value #MIN_BACKUPS} are always allowed). */
  public static final double DEFAULT_CAP_SHARE = 0.1;

  /**
   * Backups allowed at once however small the fleet: 2, because a straggling worker holds two assignments
   * per slot by default (its running case and the one prefetched behind it, which waits as long), and both
   * hold the run's end. Copying them one after the other would add a case's time to the tail. Speculation
   * only uses slots that have nothing else to do (the run has nothing left to lease).
   */
  public static final int MIN_BACKUPS = 2;

  /** 5 recorded attempts: a median of fewer moves with every case. */
  public static final int DEFAULT_MIN_SAMPLES = 5;

  /** The quantile of the fleet's slownesses above which a worker is slow and takes no copies (LATE: 25%). */
  static final double FAST_WORKER_QUANTILE = 0.75;

  /**
   * @throws IllegalArgumentException if the factor is below 1 or not finite, the minimum elapsed time is
   *     negative, the cap share is not in (0, 1], or the sample count is below 1
   */
  public SpeculationPolicy {
    java.util.Objects.requireNonNull(mode, "mode");
    if (!(slownessFactor >= 1) || Double.isInfinite(slownessFactor)) {
      throw new IllegalArgumentException("slownessFactor must be a finite number >= 1, got " + slownessFactor);
    }
    if (minElapsed.isNegative()) {
      throw new IllegalArgumentException("minElapsed must be >= 0, got " + minElapsed);
    }
    if (!(capShare > 0 && capShare <= 1)) {
      throw new IllegalArgumentException("capShare must be in (0, 1], got " + capShare);
    }
    if (minSamples < 1) {
      throw new IllegalArgumentException("minSamples must be >= 1, got " + minSamples);
    }
  }

  /** The defaults ({@link Mode#AUTO} and the named constants). */
  public static SpeculationPolicy defaults() {
    return new SpeculationPolicy(Mode.AUTO, DEFAULT_SLOWNESS_FACTOR, DEFAULT_MIN_ELAPSED, DEFAULT_CAP_SHARE,
        DEFAULT_MIN_SAMPLES);
  }

  /** This policy with another mode. */
  public SpeculationPolicy withMode(Mode m) {
    return new SpeculationPolicy(m, slownessFactor, minElapsed, capShare, minSamples);
  }

  /** Whether cases of a run with this evaluator kind may be copied. */
  public boolean copies(String evaluatorKind) {
    return switch (mode) {
      case ON -> true;
      case OFF -> false;
      case AUTO -> !PAID_EVALUATORS.contains(evaluatorKind);
    };
  }

  /**
   * How many backups may be in flight at once in a fleet of {@code totalSlots} slots: {@link #capShare()} of
   * them, at least {@value #MIN_BACKUPS}.
   */
  public int maxBackups(int totalSlots) {
    return Math.max(MIN_BACKUPS, (int) Math.floor(capShare * totalSlots));
  }

  /**
   * How long an attempt must have run before it is a straggler, for a run whose typical attempt takes
   * {@code typicalMillis}.
   */
  public long stragglerAfterMillis(long typicalMillis) {
    return Math.max(minElapsed.toMillis(), (long) Math.ceil(slownessFactor * typicalMillis));
  }

  /**
   * Whether an attempt is worth copying now: it has run past {@link #stragglerAfterMillis}, or its holder is
   * so slow that a fresh copy is expected to end at least {@link #minElapsed()} before it.
   */
  public boolean isStraggler(Candidate c) {
    double saved = c.typicalMillis() * c.slownessOrOne() - c.elapsedMillis() - c.typicalMillis();
    boolean holderMayBeSlow = Double.isNaN(c.holderSlowness()) || c.holderSlowness() >= slownessFactor;
    return ((holderMayBeSlow || c.queued()) && c.elapsedMillis() >= stragglerAfterMillis(c.typicalMillis())) || saved >= minElapsed.toMillis();
  }

  /**
   * A case's only live attempt, a candidate for a copy.
   *
   * @param jobId the job
   * @param holder the worker that runs it (its id)
   * @param elapsedMillis how long since it was leased
   * @param typicalMillis its run's typical attempt duration (the median of its recorded attempts)
   * @param holderSlowness how many times typical the holder's attempts take, or NaN if none was recorded yet
   * @param queued whether it waits in its holder's queue behind running cases (prefetched, not started): its
   *     wait says nothing of its holder's health, and a copy on an idle slot starts at once
   */
  public record Candidate(long jobId, String holder, long elapsedMillis, long typicalMillis, double holderSlowness, boolean queued) {
    /** A candidate that is running on its holder. */
    public Candidate(long jobId, String holder, long elapsedMillis, long typicalMillis, double holderSlowness) {
      this(jobId, holder, elapsedMillis, typicalMillis, holderSlowness, false);
    }

    /**
     * LATE's estimate of the time left, in ms: typical scaled by the holder's slowness, less what has run; at
     * least as much again as has run.
     */
    double estimatedLeftMillis() {
      return Math.max(typicalMillis * slownessOrOne(), 2.0 * elapsedMillis) - elapsedMillis;
    }

    /** The holder's slowness, 1 (typical) when unknown. */
    double slownessOrOne() {
      return Double.isNaN(holderSlowness) ? 1 : holderSlowness;
    }
  }

  /**
   * A worker with free slots that could take copies.
   *
   * @param worker its id
   * @param freeSlots how many more attempts it can take now
   * @param slowness how many times typical its attempts take, or NaN if none was recorded yet
   */
  public record Target(String worker, int freeSlots, double slowness) {}

  /**
   * One copy to start.
   *
   * @param jobId the case's job
   * @param worker the target worker's id
   */
  public record Backup(long jobId, String worker) {}

  /**
   * The copies to start now: the stragglers among {@code candidates} with the longest estimated time left
   * first, each onto the fast target with the most free slots left (not its holder), until the targets'
   * slots or the cap run out.
   *
   * @param candidates the cases with one live attempt, of runs whose cases may be copied
   * @param targets the workers with free slots
   * @param backupsInFlight backups already running
   * @param totalSlots the fleet's slots, for the cap
   * @return the copies, in the order chosen; empty when none is due
   */
  public List<Backup> choose(List<Candidate> candidates, List<Target> targets, int backupsInFlight, int totalSlots) {
    int room = maxBackups(totalSlots) - backupsInFlight;
    if (room <= 0 || targets.isEmpty() || candidates.isEmpty()) {
      return List.of();
    }
    double slowAbove = slowThreshold(targets, candidates);
    List<Candidate> stragglers = new ArrayList<>();
    for (Candidate c : candidates) {
      if (isStraggler(c)) {
        stragglers.add(c);
      }
    }
    stragglers.sort(Comparator.comparingDouble(Candidate::estimatedLeftMillis).reversed()
        .thenComparing(Comparator.comparingLong(Candidate::elapsedMillis).reversed())
        .thenComparingLong(Candidate::jobId));
    int[] free = new int[targets.size()];
    for (int i = 0; i < free.length; i++) {
      free[i] = targets.get(i).freeSlots();
    }
    List<Backup> out = new ArrayList<>();
    for (Candidate c : stragglers) {
      if (out.size() >= room) {
        break;
      }
      int best = -1;
      for (int i = 0; i < targets.size(); i++) {
        Target t = targets.get(i);
        boolean fast = Double.isNaN(t.slowness()) || t.slowness() <= slowAbove;
        if (free[i] > 0 && fast && !t.worker().equals(c.holder()) && (best < 0 || free[i] > free[best])) {
          best = i;
        }
      }
      if (best >= 0) {
        free[best]--;
        out.add(new Backup(c.jobId(), targets.get(best).worker()));
      }
    }
    return out;
  }

  /**
   * The slowness above which a worker is slow: the {@value #FAST_WORKER_QUANTILE} quantile (nearest rank)
   * of the known slownesses of the workers in view (targets and holders).
   */
  private static double slowThreshold(List<Target> targets, List<Candidate> candidates) {
    java.util.Map<String, Double> known = new java.util.HashMap<>();
    for (Candidate c : candidates) {
      if (!Double.isNaN(c.holderSlowness())) {
        known.put(c.holder(), c.holderSlowness());
      }
    }
    for (Target t : targets) {
      if (!Double.isNaN(t.slowness())) {
        known.put(t.worker(), t.slowness());
      }
    }
    if (known.isEmpty()) {
      return Double.POSITIVE_INFINITY;
    }
    double[] s = known.values().stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(s);
    int rank = (int) Math.ceil(FAST_WORKER_QUANTILE * s.length);
    return s[Math.max(0, rank - 1)];
  }
}

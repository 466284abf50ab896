package dev.tally.core.schedule;

import dev.tally.core.Assignment;
import dev.tally.core.schedule.Fleet.Holdings;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.schedule.SpeculationPolicy.Backup;
import dev.tally.core.schedule.SpeculationPolicy.Candidate;
import dev.tally.core.schedule.SpeculationPolicy.Target;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.LiveLease;
import dev.tally.core.store.StoreBatch.BackupRequest;
import dev.tally.core.store.StoreBatchResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty of speculative execution: near the end of a run, starts backup attempts of its stragglers on
 * idle fast workers ({@link SpeculationPolicy} decides which and where), and after a commit tells the
 * holders of attempts that lost the race to abandon them (the store ended them when another attempt of their
 * case was recorded: {@code BatchRules}).
 *
 * <p>It learns what it needs from the results the scheduler records: each run's typical attempt duration
 * (the median of its last {@value #SAMPLES_PER_RUN} recorded attempts' run times) and each worker's
 * slowness (a running average of its attempts' run time over their run's typical duration).
 *
 * <p>Thread-safety: the scheduler's thread.
 */
final class Speculations implements Duty {
  private static final Logger log = LoggerFactory.getLogger(Speculations.class);

  /**
   * 101 recorded attempts per run: a median over the recent past that follows a run whose cases change
   * character, at 800 bytes a run.
   */
  static final int SAMPLES_PER_RUN = 101;

  /** The weight of one attempt in a worker's slowness: about the last five attempts count. */
  static final double SLOWNESS_WEIGHT = 0.3;

  /** Why the holder of an attempt that lost the race is told to abandon it. */
  static final String ABANDON_REASON = "another attempt of the case was recorded first";

  private final Fleet fleet;
  private final Runs runs;
  private final LeaseOffers offers;
  private final OutlierWatch outliers;
  private final RunGovernor governor;
  private final SpeculationPolicy policy;
  private final Duration leaseDuration;
  private final Map<Long, Samples> durations = new HashMap<>();
  private final Map<String, Double> slowness = new HashMap<>();
  private final List<WorkerHandle> planned = new ArrayList<>();
  private long dueMillis = Long.MAX_VALUE;

  Speculations(Fleet fleet, Runs runs, LeaseOffers offers, OutlierWatch outliers, RunGovernor governor,
      SpeculationPolicy policy, Duration leaseDuration) {
    this.fleet = fleet;
    this.runs = runs;
    this.offers = offers;
    this.outliers = outliers;
    this.governor = governor;
    this.policy = policy;
    this.leaseDuration = leaseDuration;
  }

  /** The last {@value #SAMPLES_PER_RUN} run times of a run's recorded attempts, as a ring. */
  private static final class Samples {
    final long[] millis = new long[SAMPLES_PER_RUN];
    int count;
    int next;

    void add(long m) {
      millis[next] = m;
      next = (next + 1) % millis.length;
      count = Math.min(count + 1, millis.length);
    }

    long median() {
      long[] s = Arrays.copyOf(millis, count);
      Arrays.sort(s);
      return s[count / 2];
    }
  }

  /**
   * One of this scheduler's attempts was reported with an outcome.
   *
   * @param worker the holder's name
   * @param runMillis how long the evaluator ran, or {@link AttemptTiming#UNKNOWN}
   * @param elapsedMillis lease to report, used when the run time is unknown
   */
  void recorded(String worker, long runId, long runMillis, long elapsedMillis) {
    if (policy.mode() == SpeculationPolicy.Mode.OFF) {
      return;
    }
    long m = runMillis != AttemptTiming.UNKNOWN ? runMillis : elapsedMillis;
    Samples s = durations.computeIfAbsent(runId, r -> new Samples());
    if (s.count >= policy.minSamples()) {
      double ratio = (double) Math.max(1, m) / Math.max(1, s.median());
      slowness.merge(worker, ratio, (old, r) -> old + SLOWNESS_WEIGHT * (r - old));
    }
    s.add(m);
  }

  @Override
  public void plan(Step step) {
    planned.clear();
    dueMillis = Long.MAX_VALUE;
    if (policy.mode() == SpeculationPolicy.Mode.OFF || offers.mayLeaseMore() || !runs.anyActive()) {
      return; // a free slot takes a first attempt before any copy
    }
    if (durations.size() > 1) {
      durations.keySet().retainAll(new java.util.HashSet<>(runs.activeIds())); // ended runs' samples go
    }
    Map<Long, Integer> attemptsPerJob = new HashMap<>();
    int totalSlots = 0;
    for (Map.Entry<WorkerHandle, Holdings> e : fleet.entries()) {
      totalSlots += e.getKey().slots();
      for (Long jobId : e.getValue().inFlight.keySet()) {
        attemptsPerJob.merge(jobId, 1, Integer::sum);
      }
    }
    int backupsInFlight = 0;
    for (int n : attemptsPerJob.values()) {
      backupsInFlight += n - 1;
    }
    List<Candidate> candidates = new ArrayList<>();
    List<Target> targets = new ArrayList<>();
    Map<String, WorkerHandle> byName = new HashMap<>();
    for (Map.Entry<WorkerHandle, Holdings> e : fleet.entries()) {
      WorkerHandle w = e.getKey();
      int free = w.dispatchWindow() - e.getValue().inFlight.size();
      if (free > 0 && w.acceptingWork() && !outliers.isEjected(w, step.nowMillis)) {
        targets.add(new Target(w.name(), free, slowness.getOrDefault(w.name(), Double.NaN)));
        byName.putIfAbsent(w.name(), w);
      }
      for (Map.Entry<Long, InFlight> f : e.getValue().inFlight.entrySet()) {
        long typical = typicalMillis(f.getValue().runId());
        if (typical < 0 || attemptsPerJob.get(f.getKey()) > 1) {
          continue;
        }
        long elapsed = f.getValue().elapsedMillis(step.nowNanos);
        long after = policy.stragglerAfterMillis(typical);
        if (elapsed < after) {
          dueMillis = Math.min(dueMillis, step.nowMillis + (after - elapsed));
        }
        candidates.add(new Candidate(f.getKey(), w.name(), elapsed, typical, slowness.getOrDefault(w.name(), 1.0)));
      }
    }
    long expiry = step.nowMillis + leaseDuration.toMillis();
    for (Backup b : policy.choose(candidates, targets, backupsInFlight, totalSlots)) {
      WorkerHandle target = byName.get(b.worker());
      step.backup(new BackupRequest(b.jobId(), target.name(), expiry));
      planned.add(target);
    }
  }

  /** A run's typical attempt duration in ms, or -1 if its cases may not be copied or it is not yet known. */
  private long typicalMillis(long runId) {
    Samples s = durations.get(runId);
    if (s == null || s.count < policy.minSamples() || governor.governs(runId)
        || !policy.copies(runs.view(runId).spec().evaluator().kind())) {
      return -1; // a run with fleet-wide limits is not copied: its concurrency is the user's cap
    }
    return s.median();
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    List<Optional<Assignment>> issued = result.backups();
    for (int i = 0; i < issued.size(); i++) {
      if (issued.get(i).isEmpty()) {
        continue;
      }
      Assignment a = issued.get(i).get();
      WorkerHandle target = planned.get(i);
      Holdings h = fleet.holdings(target);
      h.inFlight.put(a.jobId(), new InFlight(a.runId(), a.token(), a.attempt(), step.nowMillis, step.nowNanos));
      target.assign(List.of(a));
      log.info("job {}: backup attempt {} started on {} (a straggler near the run's end)", a.jobId(), a.token(),
          target.name());
    }
    for (LiveLease lost : result.abandoned()) {
      for (WorkerHandle holder : fleet.holdersOf(lost.jobId(), lost.token())) {
        fleet.holdings(holder).inFlight.remove(lost.jobId());
        holder.abandon(lost.jobId(), lost.token(), ABANDON_REASON);
      }
    }
    planned.clear();
  }

  /** When a step is next due for speculation's sake: when the next candidate becomes a straggler. */
  long dueMillis() {
    return dueMillis;
  }

}

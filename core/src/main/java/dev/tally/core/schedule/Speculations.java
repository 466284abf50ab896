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
 * ({@link RunDurations}, which it feeds) and each worker's
 * slowness (the median of its last {@value #SLOWNESS_SAMPLES} attempts' run time over their run's typical
 * duration: a median, not a mean, so that one long case among short ones, as a test suite has, does not
 * mark its worker slow, while a worker whose every case runs ten times long is ten times slow).
 *
 * <p>Thread-safety: the scheduler's thread.
 */
final class Speculations implements Duty {
  private static final Logger log = LoggerFactory.getLogger(Speculations.class);

  /** A worker's slowness is the median of its last 5 ratios: a robust "how slow lately", after LATE's per-node rate. */
  static final int SLOWNESS_SAMPLES = 5;

  /** Why the holder of an attempt that lost the race is told to abandon it. */
  static final String ABANDON_REASON = "another attempt of the case was recorded first";

  private final Fleet fleet;
  private final Runs runs;
  private final LeaseOffers offers;
  private final OutlierWatch outliers;
  private final RunGovernor governor;
  private final SpeculationPolicy policy;
  private final Duration leaseDuration;
  private final RunDurations durations;
  /** Each worker's last {@value #SLOWNESS_SAMPLES} ratios (run time over typical), as a ring, and how many. */
  private final Map<String, double[]> ratios = new HashMap<>();
  private final Map<String, Double> slowness = new HashMap<>();
  private final List<WorkerHandle> planned = new ArrayList<>();
  private long dueMillis = Long.MAX_VALUE;

  Speculations(Fleet fleet, Runs runs, LeaseOffers offers, OutlierWatch outliers, RunGovernor governor,
      SpeculationPolicy policy, Duration leaseDuration, RunDurations durations) {
    this.durations = durations;
    this.fleet = fleet;
    this.runs = runs;
    this.offers = offers;
    this.outliers = outliers;
    this.governor = governor;
    this.policy = policy;
    this.leaseDuration = leaseDuration;
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
    long typical = durations.typicalMillis(runId, policy.minSamples());
    if (typical >= 0) {
      double ratio = (double) Math.max(1, m) / Math.max(1, typical);
      double[] ring = ratios.computeIfAbsent(worker, w -> new double[SLOWNESS_SAMPLES + 1]);
      int n = (int) ring[SLOWNESS_SAMPLES];
      ring[n % SLOWNESS_SAMPLES] = ratio;
      ring[SLOWNESS_SAMPLES] = n + 1;
      double[] last = Arrays.copyOf(ring, Math.min(n + 1, SLOWNESS_SAMPLES));
      Arrays.sort(last);
      slowness.put(worker, last[(last.length - 1) / 2]); // the lower median: of two, the usual one
    }
    durations.recorded(runId, m); // after the ratio: an attempt is judged against the typical before it
  }

  @Override
  public void plan(Step step) {
    planned.clear();
    dueMillis = Long.MAX_VALUE;
    if (policy.mode() == SpeculationPolicy.Mode.OFF || offers.mayLeaseMore() || !runs.anyActive()) {
      return; // a free slot takes a first attempt before any copy
    }
    durations.retain(runs.activeIds()); // ended runs' samples go
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
      // Free slots, not prefetch room: a copy queued behind a running case starts no sooner than that
      // case ends, and holds the run's end as long as the straggler it copies.
      int free = Math.min(w.dispatchWindow(), w.slots()) - e.getValue().inFlight.size();
      if (free > 0 && w.acceptingWork() && !outliers.isEjected(w, step.nowMillis)) {
        targets.add(new Target(w.name(), free, slowness.getOrDefault(w.name(), Double.NaN)));
        byName.putIfAbsent(w.name(), w);
      }
      // A worker runs its assignments in the order they came: those beyond its slots, the latest leased, wait
      // in its queue behind running cases (prefetched), and have not started.
      List<Long> queued = queuedOn(w, e.getValue());
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
        candidates.add(new Candidate(f.getKey(), w.name(), elapsed, typical, slowness.getOrDefault(w.name(), Double.NaN),
            queued.contains(f.getKey())));
      }
    }
    long expiry = step.nowMillis + leaseDuration.toMillis();
    for (Backup b : policy.choose(candidates, targets, backupsInFlight, totalSlots)) {
      WorkerHandle target = byName.get(b.worker());
      step.backup(new BackupRequest(b.jobId(), target.name(), expiry));
      planned.add(target);
    }
  }

  /** The jobs {@code w} holds beyond its slots, the latest leased: queued on it, not started. */
  private static List<Long> queuedOn(WorkerHandle w, Holdings h) {
    int beyond = h.inFlight.size() - w.slots();
    if (beyond <= 0) {
      return List.of();
    }
    List<Map.Entry<Long, InFlight>> byLease = new ArrayList<>(h.inFlight.entrySet());
    byLease.sort(java.util.Comparator.comparingLong((Map.Entry<Long, InFlight> f) -> f.getValue().leasedAtNanos()).reversed());
    List<Long> out = new ArrayList<>(beyond);
    for (int i = 0; i < beyond; i++) {
      out.add(byLease.get(i).getKey());
    }
    return out;
  }

  /** A run's typical attempt duration in ms, or -1 if its cases may not be copied or it is not yet known. */
  private long typicalMillis(long runId) {
    if (governor.governs(runId) || !policy.copies(runs.view(runId).spec().evaluator().kind())) {
      return -1; // a run with fleet-wide limits is not copied: its concurrency is the user's cap
    }
    return durations.typicalMillis(runId, policy.minSamples());
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

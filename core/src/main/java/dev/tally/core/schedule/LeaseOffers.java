package dev.tally.core.schedule;

import dev.tally.core.Assignment;
import dev.tally.core.schedule.Fleet.Holdings;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.schedule.Step.Leased;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatchResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The duty that fills every eligible worker's dispatch window: a worker that is connected, accepting work
 * (its suspicion is below the drain level), not ejected as an outlier, with room in its window. An
 * assignment leaves only after its lease and fencing token are committed (I3).
 *
 * <p>It asks the store only when a lease may be found: after an event that can free a job or a window,
 * or once the earliest backoff has passed; the store's answer says whether anything leasable is left.
 */
final class LeaseOffers implements Duty {
  private final Fleet fleet;
  private final Runs runs;
  private final OutlierWatch outliers;
  private final Duration leaseDuration;
  private final RunGovernor governor;
  /** Set (from any thread) when the coordinator stops: no lease is offered after it. */
  private volatile boolean stopped;
  private boolean pendingMayBeAvailable = true;
  private long nextNotBeforeMillis = Long.MAX_VALUE;

  LeaseOffers(Fleet fleet, Runs runs, OutlierWatch outliers, Duration leaseDuration, RunGovernor governor) {
    this.governor = governor;
    this.fleet = fleet;
    this.runs = runs;
    this.outliers = outliers;
    this.leaseDuration = leaseDuration;
  }

  /** Offers no lease from the next step on; results are still recorded. Safe from any thread. */
  void stop() {
    stopped = true;
  }

  /** Something happened that may make a lease possible (a worker joined, a run was activated). */
  void wake() {
    pendingMayBeAvailable = true;
  }

  @Override
  public void plan(Step step) {
    if (step.nowMillis >= nextNotBeforeMillis
        || (governor.any() && step.nowMillis >= governor.nextChangeMillis(step.nowMillis))) {
      pendingMayBeAvailable = true;
    }
    if (stopped || !pendingMayBeAvailable || !runs.anyActive()) {
      return;
    }
    long expiry = step.nowMillis + leaseDuration.toMillis();
    // Free slots first, then the prefetch windows: a case leased to a worker whose slots are all busy waits
    // in its queue behind a running case, so while any slot of the fleet is free (a run held to a share of
    // the fleet by its max-concurrency, a run with fewer cases left than slots) the leases go to free slots,
    // and a case starts as soon as its assignment arrives. The store grants requests in order.
    List<WorkerHandle> withPrefetchRoom = new ArrayList<>();
    for (Map.Entry<WorkerHandle, Holdings> e : fleet.entries()) {
      WorkerHandle w = e.getKey();
      int held = e.getValue().inFlight.size();
      int free = w.dispatchWindow() - held;
      if (free > 0 && w.acceptingWork() && !outliers.isEjected(w, step.nowMillis)) {
        int freeSlots = Math.min(free, Math.max(0, w.slots() - held));
        if (freeSlots > 0) {
          step.lease(w, new LeaseRequest(w.name(), freeSlots, expiry));
        }
        if (free > freeSlots) {
          withPrefetchRoom.add(w);
        }
      }
    }
    for (WorkerHandle w : withPrefetchRoom) {
      int held = fleet.holdings(w).inFlight.size();
      int prefetch = w.dispatchWindow() - Math.max(held, w.slots());
      step.lease(w, new LeaseRequest(w.name(), prefetch, expiry));
    }
    if (governor.any()) {
      governor.limits(step.nowMillis).forEach(step::limitLeases);
    }
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    for (Leased l : step.leased(result)) {
      if (l.assignments().isEmpty()) {
        continue;
      }
      Holdings h = fleet.holdings(l.holder());
      for (Assignment a : l.assignments()) {
        governor.leased(a.runId(), 1);
        runs.leased(a.runId());
        h.inFlight.put(a.jobId(), new InFlight(a.runId(), a.token(), a.attempt(), step.nowMillis, step.nowNanos));
      }
      l.holder().assign(l.assignments());
    }
    pendingMayBeAvailable = result.pendingLeft();
    nextNotBeforeMillis = result.nextNotBeforeMillis();
  }

  /**
   * When a step is next due for leasing's sake: now if jobs may be waiting and a window has room, else
   * when the earliest backoff ends ({@link Long#MAX_VALUE} if only an event can make work).
   */
  long dueMillis(long nowMillis) {
    return !stopped && pendingMayBeAvailable && fleet.hasFreeWindow() ? nowMillis
        : Math.min(nextNotBeforeMillis, governor.any() ? governor.nextChangeMillis(nowMillis) : Long.MAX_VALUE);
  }

  /**
   * Whether a lease may still be found for a free slot: false once the last commit said nothing of the
   * active runs is leasable now (a run's end, when idle slots may take backup attempts), or leasing stopped.
   */
  boolean mayLeaseMore() {
    return pendingMayBeAvailable && !stopped;
  }

  /** When the earliest backoff ends, as of the last commit. */
  long nextNotBeforeMillis() {
    return nextNotBeforeMillis;
  }
}

package dev.tally.core.schedule;

import dev.tally.core.outlier.WorkerHealth;
import dev.tally.core.schedule.Fleet.Holdings;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that saves how the workers look (suspicion, drain, ejection, jobs in flight) for {@code tally
 * status}: every {@link #INTERVAL_MILLIS}, and at once when a worker joined or left, so that status lists
 * every worker even of a short run and shows who left and why. Once, at the first step, it marks the
 * workers an earlier (killed) coordinator on this store left as connected as left, and tells the restart
 * grace which workers to wait for. These statuses are a view: a store failure here is logged, never
 * allowed to stop the run.
 */
final class WorkerStatusReports implements Duty {
  private static final Logger log = LoggerFactory.getLogger(WorkerStatusReports.class);

  /** How often the statuses are saved while workers are connected. */
  static final long INTERVAL_MILLIS = dev.tally.core.store.WorkerStatus.REPORT_INTERVAL_MILLIS;

  /** Why workers left when their coordinator stopped cleanly. */
  static final String COORDINATOR_STOPPED = "the coordinator stopped";

  /** How a coordinator marks the workers a killed predecessor left connected. */
  static final String COORDINATOR_KILLED = "its coordinator stopped without a word";

  private final Store store;
  private final Fleet fleet;
  private final OutlierWatch outliers;
  private final RestartGrace grace;
  private final java.time.Duration leaseDuration;
  private final List<WorkerStatus> departed = new ArrayList<>();
  private long lastSaveMillis;
  private boolean changed;
  private boolean earlierSettled;

  private final SchedulerObserver observer;

  WorkerStatusReports(Store store, Fleet fleet, OutlierWatch outliers, RestartGrace grace, java.time.Duration leaseDuration,
      SchedulerObserver observer) {
    this.observer = observer;
    this.leaseDuration = leaseDuration;
    this.store = store;
    this.fleet = fleet;
    this.outliers = outliers;
    this.grace = grace;
  }

  /** A worker joined: save at the next step. */
  void joined() {
    changed = true;
  }

  /** A worker left: its last status, saved at the next step. */
  void left(WorkerHandle worker, Holdings holdings, long nowMillis, String reason) {
    departed.add(statusOf(worker, holdings, outliers.snapshot(nowMillis), nowMillis).left(nowMillis, reason));
  }

  /** At the start of every step, before its events: the first one settles the earlier coordinator's workers. */
  void beforeEvents(long nowMillis) {
    if (!earlierSettled) {
      settleEarlierWorkers(nowMillis);
    }
  }

  @Override
  public void plan(Step step) {}

  /** After every step that did not fail: saves if due. */
  void afterStep(long nowMillis) {
    boolean due = !fleet.isEmpty() && nowMillis - lastSaveMillis >= INTERVAL_MILLIS;
    if (!due && !changed && departed.isEmpty()) {
      return;
    }
    List<WorkerStatus> statuses = new ArrayList<>(departed);
    Map<String, WorkerHealth> health = outliers.snapshot(nowMillis);
    for (Map.Entry<WorkerHandle, Holdings> e : fleet.entries()) {
      statuses.add(statusOf(e.getKey(), e.getValue(), health, nowMillis));
    }
    try {
      store.saveWorkerStatuses(statuses);
      lastSaveMillis = nowMillis;
      changed = false;
      departed.clear();
    } catch (StoreException ex) {
      lastSaveMillis = nowMillis; // not again before the interval: the store is the run's, this is only a view
      if (Thread.currentThread().isInterrupted()) {
        // The scheduler is being stopped (a coordinator that stepped down): its driver's words are no failure.
        log.debug("saving worker statuses was interrupted: the scheduler is stopping ({})", ex.getMessage());
      } else {
        log.warn("could not save worker statuses for tally status (the run goes on)", ex);
      }
    }
    observer.workersChanged(List.copyOf(statuses));
  }

  /** Records that every worker still connected left because this coordinator is stopping. */
  void stopping(long nowMillis) {
    Map<String, WorkerHealth> health = outliers.snapshot(nowMillis);
    for (WorkerHandle w : List.copyOf(fleet.handles())) {
      departed.add(statusOf(w, fleet.leave(w), health, nowMillis).left(nowMillis, COORDINATOR_STOPPED));
    }
    afterStep(nowMillis);
  }

  private WorkerStatus statusOf(WorkerHandle w, Holdings holdings, Map<String, WorkerHealth> health, long now) {
    WorkerHealth h = health.get(w.workerId());
    long ejectedUntil = h == null ? 0 : h.ejectedUntilMillis().orElse(0);
    return new WorkerStatus(w.workerId(), w.name(), w.suspicion(), w.acceptingWork(), ejectedUntil,
        outliers.lastEjectionReason(w.workerId()), h == null ? 0 : h.timesEjected(), holdings.inFlight.size(), now, null,
        w.suspicionLevel(), w.slots());
  }

  /**
   * Marks, once, the workers an earlier coordinator on this store still had as connected (it was killed
   * before it could say they left) as left, so that {@code tally status} shows only this coordinator's
   * workers as connected; and tells the restart grace to wait for the workers the earlier coordinator had
   * at its end (connected, or left when it stopped): they may come back to reclaim their leases.
   */
  private void settleEarlierWorkers(long now) {
    earlierSettled = true; // once either way: this is only a view, the run goes on
    try {
      List<WorkerStatus> stale = new ArrayList<>();
      Set<String> awaited = new HashSet<>();
      for (WorkerStatus w : store.workerStatuses()) {
        if (w.connected()) {
          awaited.add(w.workerId());
          stale.add(w.left(now, COORDINATOR_KILLED + " (killed?) at most "
              + (now - w.reportedAtMillis()) / 1000 + " s after its last report"));
        } else if (COORDINATOR_STOPPED.equals(w.leftReason())) {
          awaited.add(w.workerId());
        } else if (w.leftReason() != null && w.leftReason().startsWith(COORDINATOR_KILLED)
            && now - w.reportedAtMillis() <= leaseDuration.toMillis()) {
          // Marked so by a coordinator that itself died moments later: this worker may still be on its
          // way back to the leases it held under the one before.
          awaited.add(w.workerId());
        }
      }
      grace.awaiting(awaited);
      store.saveWorkerStatuses(stale);
    } catch (StoreException e) {
      log.warn("could not mark an earlier coordinator's workers as left (tally status may show them as silent)", e);
    }
  }
}

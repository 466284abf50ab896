package dev.tally.core.schedule;

import dev.tally.core.outlier.Ending;
import dev.tally.core.outlier.OutlierDetector;
import dev.tally.core.outlier.OutlierEvent;
import dev.tally.core.outlier.WorkerHealth;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.store.StoreBatchResult;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that watches real traffic for gray failure: it feeds the {@link OutlierDetector} every ended
 * attempt of this scheduler's own assignments (a case's own verdict never counts against its worker), logs
 * its ejections after each commit, and answers whether a worker is ejected (an ejected worker keeps its
 * connection and its jobs but gets no new ones).
 */
final class OutlierWatch implements Duty {
  private static final Logger log = LoggerFactory.getLogger(OutlierWatch.class);

  private final OutlierDetector detector;
  private final Runs runs;
  private final Map<String, String> lastEjectionReason = new HashMap<>();
  /** Worker names by id, for log lines people read. */
  private final Map<String, String> names = new HashMap<>();

  private final SchedulerObserver observer;

  OutlierWatch(OutlierDetector detector, Runs runs, SchedulerObserver observer) {
    this.detector = detector;
    this.runs = runs;
    this.observer = observer;
  }

  void joined(WorkerHandle worker, long nowMillis) {
    names.put(worker.workerId(), worker.name());
    detector.workerJoined(worker.workerId(), nowMillis);
  }

  /** The worker's last session left. */
  void left(WorkerHandle worker) {
    detector.workerLeft(worker.workerId());
  }

  /** An attempt this scheduler assigned ended as reported. */
  void ended(WorkerHandle worker, InFlight attempt, AttemptReport report, long nowMillis, long nowNanos) {
    long durationMillis = report.outcome() != null ? report.outcome().durationMillis() : attempt.elapsedMillis(nowNanos);
    Ending ending = report.outcome() != null ? Ending.SUCCESS : Ending.of(report.failure().kind());
    detector.attemptEnded(worker.workerId(), runs.caseKind(attempt.runId()), ending, durationMillis, nowMillis);
  }

  boolean isEjected(WorkerHandle worker, long nowMillis) {
    return detector.isEjected(worker.workerId(), nowMillis);
  }

  /** Every worker's health now. */
  Map<String, WorkerHealth> snapshot(long nowMillis) {
    return detector.snapshot(nowMillis);
  }

  /** Why the worker was last ejected, or null. */
  String lastEjectionReason(String workerId) {
    return lastEjectionReason.get(workerId);
  }

  @Override
  public void plan(Step step) {}

  @Override
  public void settle(Step step, StoreBatchResult result) {
    for (OutlierEvent e : detector.poll(step.nowMillis)) {
      String name = names.getOrDefault(e.workerId(), e.workerId());
      log.warn("outlier detection: {}", e.describe(name));
      observer.outlier(name, e);
      if (e.type() == OutlierEvent.Type.EJECTED) {
        lastEjectionReason.put(e.workerId(), e.reason());
      }
    }
  }
}

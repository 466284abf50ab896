package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.RecordStatus;
import dev.tally.core.outlier.OutlierEvent;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.WorkerStatus;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduler's observers as one: each hook goes to every observer in turn, and one that throws is
 * logged and skipped, so a broken watcher neither stops the runs nor keeps news from the others.
 *
 * <p>Thread-safety: the scheduler's thread.
 */
final class Observers implements SchedulerObserver {
  private static final Logger log = LoggerFactory.getLogger(Observers.class);

  private final List<SchedulerObserver> observers;

  Observers(List<SchedulerObserver> observers) {
    this.observers = List.copyOf(observers);
  }

  private void each(String hook, Consumer<SchedulerObserver> call) {
    for (SchedulerObserver o : observers) {
      try {
        call.accept(o);
      } catch (RuntimeException e) {
        log.warn("scheduler observer {} failed in {}; ignored", o, hook, e);
      }
    }
  }

  boolean isEmpty() {
    return observers.isEmpty();
  }

  @Override
  public void recorded(RecordStatus status, long dispatchLatencyNanos) {
    each("recorded", o -> o.recorded(status, dispatchLatencyNanos));
  }

  @Override
  public void leased(long jobId, long token, long committedAtNanos) {
    each("leased", o -> o.leased(jobId, token, committedAtNanos));
  }

  @Override
  public void redelivered(long jobId, InfraFailure.Kind why) {
    each("redelivered", o -> o.redelivered(jobId, why));
  }

  @Override
  public void outlier(String workerName, OutlierEvent event) {
    each("outlier", o -> o.outlier(workerName, event));
  }

  @Override
  public void workersChanged(List<WorkerStatus> statuses) {
    each("workersChanged", o -> o.workersChanged(statuses));
  }

  @Override
  public void runCounters(long runId, RunCounters counters) {
    each("runCounters", o -> o.runCounters(runId, counters));
  }

  @Override
  public void committed(int evals, long commitNanos) {
    each("committed", o -> o.committed(evals, commitNanos));
  }
}

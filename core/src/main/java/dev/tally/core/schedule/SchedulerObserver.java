package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.RecordStatus;
import dev.tally.core.outlier.OutlierEvent;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.WorkerStatus;
import java.util.List;

/**
 * What a scheduler tells whoever watches it (metrics, a dashboard's event stream): every hook is called on
 * the scheduler's own thread, after the commit it reports on, so it must return at once and never block
 * (hand the news to another thread if there is work to do). A hook that throws is logged and ignored: a
 * watcher must not stop the runs. Every hook does nothing by default. The core has no metrics library;
 * whoever binds this to one (Micrometer, SSE) lives outside it.
 *
 * <p>Thread-safety: called from the scheduler's thread only.
 */
public interface SchedulerObserver {

  /** Watches nothing. */
  SchedulerObserver NONE = new SchedulerObserver() {};

  /**
   * A reported result was judged by the store.
   *
   * @param status recorded, duplicate or fenced
   * @param dispatchLatencyNanos from the lease to the result's arrival at the scheduler, on the monotonic
   *     clock; -1 when the lease was not this scheduler's (a result re-sent from an earlier session)
   */
  default void recorded(RecordStatus status, long dispatchLatencyNanos) {}

  /**
   * A lease was issued: its commit returned, and its assignment is about to go to its worker. With the
   * worker's own record of when the case started, on the same host's monotonic clock, this gives the
   * dispatch latency from lease to start ({@code tally bench-connections} pairs the two).
   *
   * @param jobId the job
   * @param token the lease's fencing token
   * @param committedAtNanos when the commit that issued it returned, on the scheduler's monotonic clock
   */
  default void leased(long jobId, long token, long committedAtNanos) {}

  /**
   * An attempt ended retryably and its job went back to the queue (a redelivery).
   *
   * @param jobId the job
   * @param why how the attempt ended
   */
  default void redelivered(long jobId, InfraFailure.Kind why) {}

  /**
   * The outlier detector ejected a worker, or let one back.
   *
   * @param workerName the worker's name
   * @param event what happened, with its reason
   */
  default void outlier(String workerName, OutlierEvent event) {}

  /**
   * Workers joined, left or changed (suspicion, drain, ejection, jobs in flight): their statuses as saved
   * for {@code tally status}, a departed worker's with why it left. Called at a join or a departure and
   * every few seconds while workers are connected.
   */
  default void workersChanged(List<WorkerStatus> statuses) {}

  /** A run's counters after a commit that touched them (its state follows from them: finished, cancelled). */
  default void runCounters(long runId, RunCounters counters) {}

  /**
   * One store transaction committed a scheduler step.
   *
   * @param evals results the commit carried (records, whatever their status)
   * @param commitNanos how long the commit took, on the monotonic clock
   */
  default void committed(int evals, long commitNanos) {}
}

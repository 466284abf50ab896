package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.store.AttemptTiming;

/**
 * How a worker says one attempt ended: exactly one of {@code outcome} (final, recorded) and
 * {@code failure} (retryable) is set.
 *
 * @param jobId the job
 * @param token the lease's fencing token, as the worker received it
 * @param outcome the evaluator's outcome, or null
 * @param failure the infrastructure failure, or null
 * @param queuedMillis how long the job waited on the worker before its case started (ms, the worker's
 *     monotonic clock), or {@link AttemptTiming#UNKNOWN}
 * @param runMillis how long the case ran (ms), or {@link AttemptTiming#UNKNOWN}
 */
public record AttemptReport(
    long jobId, long token, Outcome outcome, InfraFailure failure, long queuedMillis, long runMillis) {
  /**
   * @throws IllegalArgumentException if not exactly one of outcome and failure is set, or a duration is
   *     below {@link AttemptTiming#UNKNOWN}
   */
  public AttemptReport {
    if ((outcome == null) == (failure == null)) {
      throw new IllegalArgumentException("exactly one of outcome and failure must be set (job " + jobId + ")");
    }
    if (queuedMillis < AttemptTiming.UNKNOWN || runMillis < AttemptTiming.UNKNOWN) {
      throw new IllegalArgumentException("durations must be >= 0 or UNKNOWN (job " + jobId + ")");
    }
  }

  /** A report of a final outcome; its run time is the outcome's duration, its queue time unknown. */
  public static AttemptReport of(long jobId, long token, Outcome outcome) {
    return new AttemptReport(jobId, token, outcome, null, AttemptTiming.UNKNOWN, outcome.durationMillis());
  }

  /** A report of a retryable failure, with no timing. */
  public static AttemptReport failed(long jobId, long token, InfraFailure failure) {
    return new AttemptReport(jobId, token, null, failure, AttemptTiming.UNKNOWN, AttemptTiming.UNKNOWN);
  }

  /** This report with the worker's timing. */
  public AttemptReport withTiming(long queuedMillis, long runMillis) {
    return new AttemptReport(jobId, token, outcome, failure, queuedMillis, runMillis);
  }
}

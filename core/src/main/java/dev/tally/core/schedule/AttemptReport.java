package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;

/**
 * How a worker says one attempt ended: exactly one of {@code outcome} (final, recorded) and
 * {@code failure} (retryable) is set.
 *
 * @param jobId the job
 * @param token the lease's fencing token, as the worker received it
 * @param outcome the evaluator's outcome, or null
 * @param failure the infrastructure failure, or null
 */
public record AttemptReport(long jobId, long token, Outcome outcome, InfraFailure failure) {
  public AttemptReport {
    if ((outcome == null) == (failure == null)) {
      throw new IllegalArgumentException("exactly one of outcome and failure must be set (job " + jobId + ")");
    }
  }

  /** A report of a final outcome. */
  public static AttemptReport of(long jobId, long token, Outcome outcome) {
    return new AttemptReport(jobId, token, outcome, null);
  }

  /** A report of a retryable failure. */
  public static AttemptReport failed(long jobId, long token, InfraFailure failure) {
    return new AttemptReport(jobId, token, null, failure);
  }
}

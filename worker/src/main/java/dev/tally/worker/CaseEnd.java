package dev.tally.worker;

import dev.tally.worker.eval.Evaluation;
import java.util.Objects;

/**
 * How a case that a {@link CaseRunner} started came out: what its runner reports to the session core.
 * Only cases that ran to an evaluation are reported; a cancelled or withdrawn one never is.
 *
 * @param key the attempt
 * @param evaluation its outcome or retryable failure
 * @param startedNanos the worker's monotonic clock when its slot started it (on the same clock as
 *     {@link AssignedJob#assignedNanos()})
 */
public record CaseEnd(JobKey key, Evaluation evaluation, long startedNanos) {
  /** @throws NullPointerException if {@code key} or {@code evaluation} is null */
  public CaseEnd {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(evaluation, "evaluation");
  }
}

package dev.tally.core.store;

import dev.tally.core.EvaluatorSpec;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import java.util.Objects;

/**
 * What a run was submitted with.
 *
 * @param dataset where the cases came from (a path, for people and for resuming)
 * @param evaluator how the cases are evaluated
 * @param limits how many attempts, and how many retries after a timeout, a job gets before it ends
 *     {@code failed} (applied by {@link dev.tally.core.RedeliveryPolicy})
 * @param datasetDigest a digest of the cases' content (e.g. SHA-256 in hex), so that a run is resumed only
 *     for the same cases, not for an edited file at the same path; empty when not known
 */
public record RunSpec(String dataset, EvaluatorSpec evaluator, AttemptLimits limits, String datasetDigest) {

  /** A run spec with the default timeout retries and no dataset digest. */
  public RunSpec(String dataset, EvaluatorSpec evaluator, int maxAttempts) {
    this(dataset, evaluator, maxAttempts, "");
  }

  /** A run spec with the default timeout retries. */
  public RunSpec(String dataset, EvaluatorSpec evaluator, int maxAttempts, String datasetDigest) {
    this(dataset, evaluator, new AttemptLimits(maxAttempts, AttemptLimits.DEFAULT_TIMEOUT_RETRIES), datasetDigest);
  }

  public RunSpec {
    Objects.requireNonNull(dataset, "dataset");
    Objects.requireNonNull(evaluator, "evaluator");
    Objects.requireNonNull(limits, "limits");
    Objects.requireNonNull(datasetDigest, "datasetDigest");
  }

  /** The attempts a job gets before it ends {@code failed}; at least 1. */
  public int maxAttempts() {
    return limits.maxAttempts();
  }
}

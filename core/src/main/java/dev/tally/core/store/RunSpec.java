package dev.tally.core.store;

import dev.tally.core.EvaluatorSpec;
import java.util.Objects;

/**
 * What a run was submitted with.
 *
 * @param dataset where the cases came from (a path, for people and for resuming)
 * @param evaluator how the cases are evaluated
 * @param maxAttempts how many attempts a job gets before it ends {@code failed}; at least 1
 * @param datasetDigest a digest of the cases' content (e.g. SHA-256 in hex), so that a run is resumed only
 *     for the same cases, not for an edited file at the same path; empty when not known
 */
public record RunSpec(String dataset, EvaluatorSpec evaluator, int maxAttempts, String datasetDigest) {
  /** The limit on attempts per job: enough to ride out several worker deaths, few enough to stop a poison case. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;

  /** A run spec with no dataset digest. */
  public RunSpec(String dataset, EvaluatorSpec evaluator, int maxAttempts) {
    this(dataset, evaluator, maxAttempts, "");
  }

  public RunSpec {
    Objects.requireNonNull(dataset, "dataset");
    Objects.requireNonNull(evaluator, "evaluator");
    Objects.requireNonNull(datasetDigest, "datasetDigest");
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1, got " + maxAttempts);
    }
  }
}

package dev.tally.core.store;

import dev.tally.core.EvaluatorSpec;
import java.util.Objects;

/**
 * What a run was submitted with.
 *
 * @param dataset where the cases came from (a path, for people and for resuming)
 * @param evaluator how the cases are evaluated
 * @param maxAttempts how many attempts a job gets before it ends {@code failed}; at least 1
 */
public record RunSpec(String dataset, EvaluatorSpec evaluator, int maxAttempts) {
  /** The limit on attempts per job: enough to ride out several worker deaths, few enough to stop a poison case. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;

  public RunSpec {
    Objects.requireNonNull(dataset, "dataset");
    Objects.requireNonNull(evaluator, "evaluator");
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1, got " + maxAttempts);
    }
  }
}

package dev.tally.worker;

import dev.tally.worker.eval.Evaluator;
import java.time.Duration;
import java.util.Objects;

/**
 * How one run evaluates its cases on this worker, built from its {@code RunConfig} (or, for an in-process
 * worker, its evaluator spec); or, when that could not be used here, why not.
 *
 * <p>Exactly one of {@code evaluator} and {@code problem} is non-null. A usable setup's case timeout is
 * positive; an unusable one's may be anything (it never reaches a slot).
 *
 * @param runId the run
 * @param evaluator the run's evaluator, or null if unusable
 * @param caseTimeout one attempt's wall-clock budget
 * @param problem why the run cannot be evaluated here, or null if usable
 */
public record RunSetup(long runId, Evaluator evaluator, Duration caseTimeout, String problem) {
  /**
   * @throws IllegalArgumentException if both or neither of {@code evaluator} and {@code problem} are
   *     set, or a usable setup's timeout is not positive
   * @throws NullPointerException if {@code caseTimeout} is null
   */
  public RunSetup {
    Objects.requireNonNull(caseTimeout, "caseTimeout");
    if ((evaluator == null) == (problem == null)) {
      throw new IllegalArgumentException("exactly one of evaluator and problem must be set");
    }
    if (evaluator != null && (caseTimeout.isZero() || caseTimeout.isNegative())) {
      throw new IllegalArgumentException("caseTimeout must be positive, got " + caseTimeout);
    }
  }

  /** A run whose cases this worker can evaluate. */
  public static RunSetup usable(long runId, Evaluator evaluator, Duration caseTimeout) {
    return new RunSetup(runId, Objects.requireNonNull(evaluator, "evaluator"), caseTimeout, null);
  }

  /** A run whose configuration is unusable here; every Assign of it is refused with {@code problem}. */
  public static RunSetup unusable(long runId, Duration caseTimeout, String problem) {
    return new RunSetup(runId, null, caseTimeout, Objects.requireNonNull(problem, "problem"));
  }

  /** True if this worker can evaluate the run's cases. */
  public boolean usable() {
    return problem == null;
  }
}

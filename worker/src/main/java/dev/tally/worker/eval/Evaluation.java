package dev.tally.worker.eval;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import java.util.Objects;

/**
 * How one attempt ended, as an evaluator reports it: a final {@link Outcome} or a retryable {@link
 * InfraFailure}. A value, never an exception.
 */
public sealed interface Evaluation {

  /** The evaluator judged the case; the outcome is recorded and never retried. */
  record Finished(Outcome outcome) implements Evaluation {
    public Finished {
      Objects.requireNonNull(outcome, "outcome");
    }
  }

  /**
   * The attempt failed for a reason that is not the case's own; the job is retried elsewhere.
   *
   * @param failure what happened
   * @param durationMillis how long the attempt ran, in milliseconds (the core {@link InfraFailure} has
   *     no duration of its own, the wire's {@code InfraFailure} does)
   * @throws IllegalArgumentException if {@code durationMillis} is negative, or the failure's kind is the
   *     coordinator's to decide ({@link InfraFailure.Kind#reportedByWorkers()})
   */
  record Failed(InfraFailure failure, long durationMillis) implements Evaluation {
    public Failed {
      Objects.requireNonNull(failure, "failure");
      if (!failure.kind().reportedByWorkers()) {
        throw new IllegalArgumentException("an evaluator cannot report " + failure.kind() + ": the coordinator decides it");
      }
      if (durationMillis < 0) {
        throw new IllegalArgumentException("durationMillis must be >= 0, got " + durationMillis);
      }
    }
  }

  /** A final outcome. */
  static Evaluation finished(Verdict verdict, Double score, String outputTail, long durationMillis) {
    return new Finished(new Outcome(verdict, score, outputTail, durationMillis));
  }

  /** A final {@code error} outcome: the case cannot be evaluated for a reason of its own. */
  static Evaluation error(String message, long durationMillis) {
    return finished(Verdict.ERROR, null, message, durationMillis);
  }

  /** A retryable failure. */
  static Evaluation failed(InfraFailure.Kind kind, String detail, long durationMillis) {
    return new Failed(new InfraFailure(kind, detail), durationMillis);
  }
}

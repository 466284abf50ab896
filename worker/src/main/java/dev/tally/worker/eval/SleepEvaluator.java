package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.InfraFailure;
import dev.tally.core.Verdict;
import java.time.Duration;

/**
 * {@code sleep}: waits the case's integer {@code millis} field if it has one, else the run's {@code millis}
 * option (default 0), then passes. For tests and benchmarks that need cases of a known length.
 *
 * <p>The wait ends early, without an outcome worth reporting, when the attempt is cancelled; a sleep
 * longer than the case timeout ends at the timeout with {@link InfraFailure.Kind#TIMEOUT}, like a slow
 * {@code exec} case would.
 */
final class SleepEvaluator implements Evaluator {
  private final long defaultMillis;

  /** @throws IllegalArgumentException if {@code defaultMillis} is negative */
  SleepEvaluator(long defaultMillis) {
    if (defaultMillis < 0) {
      throw new IllegalArgumentException("sleep option millis must be >= 0, got " + defaultMillis);
    }
    this.defaultMillis = defaultMillis;
  }

  @Override
  public Evaluation evaluate(EvalContext ctx) {
    long millis = defaultMillis;
    JsonNode field;
    try {
      field = CaseJson.parseObject(ctx.caseJson()).get("millis");
    } catch (IllegalArgumentException e) {
      return Evaluation.error(e.getMessage(), ctx.elapsedMillis());
    }
    if (field != null) {
      if (!field.canConvertToLong() || !field.isIntegralNumber() || field.asLong() < 0) {
        return Evaluation.error(
            "case field millis must be a non-negative integer, got " + field, ctx.elapsedMillis());
      }
      millis = field.asLong();
    }
    boolean pastTimeout = millis > ctx.timeout().toMillis();
    Duration wait = pastTimeout ? ctx.timeout() : Duration.ofMillis(millis);
    try {
      if (ctx.awaitCancellation(wait)) {
        return Evaluation.failed(
            InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled: " + ctx.cancelReason(), ctx.elapsedMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Evaluation.failed(
          InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted while sleeping", ctx.elapsedMillis());
    }
    if (pastTimeout) {
      return Evaluation.failed(
          InfraFailure.Kind.TIMEOUT,
          "sleep of " + millis + " ms ran past the case timeout of " + ctx.timeout().toMillis() + " ms",
          ctx.elapsedMillis());
    }
    return Evaluation.finished(Verdict.PASS, null, "", ctx.elapsedMillis());
  }
}

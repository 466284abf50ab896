package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.InfraFailure;
import dev.tally.core.Verdict;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * {@code sleep}: waits the case's integer {@code millis} field if it has one, else the run's {@code millis}
 * option (default 0), then passes. For tests and benchmarks that need cases of a known length.
 *
 * <p>The wait ends early, without an outcome worth reporting, when the attempt is cancelled; a sleep
 * longer than the case timeout ends at the timeout with {@link InfraFailure.Kind#TIMEOUT}, like a slow
 * {@code exec} case would.
 *
 * <p>With option {@code burn=true} the case spends its time on the CPU instead of waiting: a busy loop on
 * the slot's thread for the same length of wall time, so that a fleet of such workers on fewer cores
 * starves its machine ({@code tally bench-failover --starved}). It still ends early when cancelled.
 */
final class SleepEvaluator implements Evaluator {
  /** How often a burning case looks whether it was cancelled: often enough that a cancel is prompt. */
  private static final long BURN_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private final long defaultMillis;
  private final boolean burn;

  /** @throws IllegalArgumentException if {@code defaultMillis} is negative */
  SleepEvaluator(long defaultMillis) {
    this(defaultMillis, false);
  }

  /**
   * @param burn whether to busy-loop on the CPU instead of waiting
   * @throws IllegalArgumentException if {@code defaultMillis} is negative
   */
  SleepEvaluator(long defaultMillis, boolean burn) {
    if (defaultMillis < 0) {
      throw new IllegalArgumentException("sleep option millis must be >= 0, got " + defaultMillis);
    }
    this.defaultMillis = defaultMillis;
    this.burn = burn;
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
      if (burn ? burnUntilCancelled(ctx, wait) : ctx.awaitCancellation(wait)) {
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

  /** Keeps the CPU busy for {@code wait} of the context's time; true if cancelled first. */
  private static boolean burnUntilCancelled(EvalContext ctx, Duration wait) {
    long end = ctx.ticker().nanos() + wait.toNanos();
    long x = 0x9E3779B97F4A7C15L;
    for (long now = ctx.ticker().nanos(); now - end < 0; now = ctx.ticker().nanos()) {
      if (ctx.cancelled()) {
        return true;
      }
      for (long stop = now + BURN_CHECK_NANOS; ctx.ticker().nanos() - stop < 0; ) {
        x ^= x << 13; // xorshift: work the JIT cannot drop, since x is published below
        x ^= x >>> 7;
        x ^= x << 17;
      }
    }
    sink = x;
    return ctx.cancelled();
  }

  /** Where the busy loop's result goes, so that it is not dead code. */
  @SuppressWarnings("unused")
  private static volatile long sink;
}

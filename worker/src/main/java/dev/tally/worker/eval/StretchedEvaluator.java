package dev.tally.worker.eval;

import dev.tally.core.InfraFailure;
import java.time.Duration;
import java.util.Objects;

/**
 * An evaluator made {@code factor} times slower: after the evaluator it wraps answers, it waits {@code
 * (factor - 1)} times as long as the answer took before handing it back, as a worker that much slower (a
 * throttled CPU, a noisy neighbour) would. For benchmarks and tests of stragglers ({@code tally worker
 * --stretch}, {@code tally bench-stragglers}); no product path uses it.
 *
 * <p>The wait ends early when the attempt is cancelled (an abandon), like {@code sleep}'s, and the attempt
 * then ends without an outcome. The wait is capped by the case timeout: a stretched case ends at its timeout
 * as a slow one would.
 *
 * <p>Thread-safety: as the wrapped evaluator's; the wait holds no state.
 */
public final class StretchedEvaluator implements Evaluator {
  /** A factor above this is a typo, not a slow machine: 1,000x turns a second into a quarter of an hour. */
  public static final double MAX_FACTOR = 1_000;

  private final Evaluator inner;
  private final double factor;

  /**
   * @param inner the evaluator to slow down
   * @param factor how many times slower, from 1 (not at all) to {@link #MAX_FACTOR}
   * @throws IllegalArgumentException if {@code factor} is outside [1, {@link #MAX_FACTOR}] or not a number
   */
  public StretchedEvaluator(Evaluator inner, double factor) {
    this.inner = Objects.requireNonNull(inner, "inner");
    if (!(factor >= 1 && factor <= MAX_FACTOR)) {
      throw new IllegalArgumentException("stretch factor must be from 1 to " + (long) MAX_FACTOR + ", got " + factor);
    }
    this.factor = factor;
  }

  @Override
  public Evaluation evaluate(EvalContext ctx) {
    Evaluation answer = inner.evaluate(ctx);
    long took = ctx.elapsedMillis();
    long extra = Math.round((factor - 1) * took);
    long room = Math.max(0, ctx.timeout().toMillis() - took);
    try {
      if (ctx.awaitCancellation(Duration.ofMillis(Math.min(extra, room)))) {
        return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled: " + ctx.cancelReason(),
            ctx.elapsedMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted while stretched", ctx.elapsedMillis());
    }
    if (extra > room) {
      return Evaluation.failed(InfraFailure.Kind.TIMEOUT, "stretched " + factor + "x, the case ran past its timeout of "
          + ctx.timeout().toMillis() + " ms", ctx.elapsedMillis());
    }
    // The attempt took this long, and says so, as a slow machine's would: its duration is what the
    // coordinator judges a worker's slowness by (speculative execution copies a slow worker's cases). The
    // wrapped evaluator's own figure leaves the stretch out.
    long tookMillis = ctx.elapsedMillis();
    if (answer instanceof Evaluation.Finished f) {
      return new Evaluation.Finished(f.outcome().withDurationMillis(Math.max(f.outcome().durationMillis(), tookMillis)));
    }
    Evaluation.Failed failed = (Evaluation.Failed) answer;
    return new Evaluation.Failed(failed.failure(), Math.max(failed.durationMillis(), tookMillis));
  }
}

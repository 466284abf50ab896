package dev.tally.worker.eval;

/**
 * The work of one case: turns a case into an {@link Evaluation}.
 *
 * <p>Threading: one instance serves a whole run and is called concurrently from every slot thread, so
 * implementations must be thread-safe (the built-in ones are stateless). {@link #evaluate} runs on a
 * long-lived slot thread and may block for as long as the case takes; it must return promptly once
 * {@link EvalContext#cancelled()} becomes true (an Abandon, or the worker closing), and must not run past
 * {@link EvalContext#timeout()} by much: the slot does not police the timeout itself.
 */
public interface Evaluator {

  /**
   * Evaluates one case.
   *
   * @return the case's outcome (final) or an infrastructure failure (retryable elsewhere); never null.
   *     An unexpected exception is treated by the caller as {@link
   *     dev.tally.core.InfraFailure.Kind#EVALUATOR_CRASHED}.
   */
  Evaluation evaluate(EvalContext ctx);
}

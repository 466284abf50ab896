/**
 * Evaluators: the work of one case. {@link dev.tally.worker.eval.Evaluator} is the role;
 * {@link dev.tally.worker.eval.EvaluatorFactory} builds the built-in kinds ({@code exec}, {@code sleep},
 * {@code noop}) from a run's configuration.
 *
 * <p>An evaluator turns an {@link dev.tally.worker.eval.EvalContext} into an
 * {@link dev.tally.worker.eval.Evaluation}: either a final {@link dev.tally.core.Outcome} (recorded, never
 * retried) or a retryable {@link dev.tally.core.InfraFailure}.
 */
package dev.tally.worker.eval;

package dev.tally.worker;

import dev.tally.core.InfraFailure;
import dev.tally.core.Ticker;
import dev.tally.worker.eval.EvalContext;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One assignment the worker holds, from its Assign until its result is handed to the outbox (or it is
 * abandoned).
 *
 * <p>Its {@link State} moves {@code QUEUED -> RUNNING -> DONE}, or to {@code ABANDONED} from either of the
 * first two; every move is a compare-and-set, so an Abandon (event loop) and the slot finishing the case
 * (slot thread) race safely: exactly one of them wins, and only a {@code DONE} job is reported.
 */
final class HeldJob {
  private static final Logger log = LoggerFactory.getLogger(HeldJob.class);

  /** A job and the lease token it was assigned under: the identity of one attempt. */
  record Key(long jobId, long token) {}

  enum State {
    QUEUED,
    RUNNING,
    DONE,
    ABANDONED
  }

  final Key key;
  final long runId;
  final String caseId;
  final String caseJson;
  final RunSetup setup;
  final AtomicReference<State> state = new AtomicReference<>(State.QUEUED);
  /** Set by the slot thread before the job becomes RUNNING; read by an Abandon after it saw RUNNING. */
  volatile EvalContext context;

  HeldJob(Key key, long runId, String caseId, String caseJson, RunSetup setup) {
    this.key = key;
    this.runId = runId;
    this.caseId = caseId;
    this.caseJson = caseJson;
    this.setup = setup;
  }

  /**
   * Stops the job if it is still queued or running: a queued job will not start; a running one has its
   * context cancelled (which kills an exec case's process tree).
   *
   * @return true if this call abandoned it, false if it had already ended or been abandoned
   */
  boolean abandon(String reason) {
    if (state.compareAndSet(State.QUEUED, State.ABANDONED)) {
      return true;
    }
    if (state.compareAndSet(State.RUNNING, State.ABANDONED)) {
      context.cancel(reason);
      return true;
    }
    return false;
  }

  /**
   * Runs the case on the calling slot thread, unless it was abandoned while queued.
   *
   * @return how the attempt ended (an evaluator that throws or returns nothing is a retryable
   *     {@code EVALUATOR_CRASHED}), or null if the job was abandoned before it started
   */
  Evaluation run(Ticker ticker) {
    EvalContext ctx = new EvalContext(caseId, caseJson, setup.caseTimeout(), ticker);
    context = ctx;
    if (!state.compareAndSet(State.QUEUED, State.RUNNING)) {
      return null;
    }
    try {
      Evaluation evaluation = setup.evaluator().evaluate(ctx);
      return evaluation != null
          ? evaluation
          : Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "the evaluator returned nothing", ctx.elapsedMillis());
    } catch (RuntimeException | StackOverflowError | LinkageError e) {
      log.warn("evaluator crashed on job {}: {}", key, e.toString(), e);
      return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, e.toString(), ctx.elapsedMillis());
    }
  }

  boolean active() {
    State s = state.get();
    return s == State.QUEUED || s == State.RUNNING;
  }

  /**
   * How a run evaluates its cases, from its RunConfig; or, when the RunConfig could not be used, why
   * ({@code problem} non-null, {@code evaluator} null).
   */
  record RunSetup(long runId, Evaluator evaluator, Duration caseTimeout, String problem) {}
}

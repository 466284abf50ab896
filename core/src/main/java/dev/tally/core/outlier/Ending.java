package dev.tally.core.outlier;

import dev.tally.core.InfraFailure;
import java.util.Objects;

/**
 * How an attempt ended, as far as judging its <em>worker</em> goes.
 *
 * <p>A case's own verdict is never held against its worker: an evaluator that produced an outcome, even
 * {@code fail} or {@code error}, ended in {@link #SUCCESS}. Only the worker's (or its environment's)
 * failure to produce an outcome counts.
 */
public enum Ending {
  /** The evaluator produced an outcome, whatever its verdict. Breaks a run of failures; feeds latency. */
  SUCCESS,
  /** Timeout, crash or unasked-for signal on the worker: counts against it. */
  INFRA_FAILURE,
  /**
   * The attempt was lost with its connection, or with a coordinator restart, or handed back unstarted by
   * a draining worker. Ignored: it neither counts as a failure nor breaks a run of them. Silence is the
   * failure detectors' to judge (DESIGN.md section 4), and counting it here too would punish one death
   * twice; a hand-back says nothing about the worker's health at all.
   */
  LOST;

  /**
   * The ending of an attempt that failed for {@code kind}.
   *
   * @throws NullPointerException if {@code kind} is null
   */
  public static Ending of(InfraFailure.Kind kind) {
    Objects.requireNonNull(kind, "kind");
    switch (kind) {
      case TIMEOUT:
      case SIGNALED:
      case EVALUATOR_CRASHED:
        return INFRA_FAILURE;
      case WORKER_LOST:
      case COORDINATOR_RESTARTED:
      case LEASE_EXPIRED:
      case HANDED_BACK: // a draining worker gave it back unstarted: nothing to judge
      case RATE_LIMITED: // the endpoint's state, shared by the whole fleet: nothing to judge the worker by
        return LOST;
      default:
        throw new IllegalArgumentException("unknown infrastructure failure kind " + kind);
    }
  }
}

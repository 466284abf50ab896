package dev.tally.core;

import java.util.Objects;

/**
 * An attempt that ended for a reason that is not the case's own: the job is retried on another worker,
 * up to its run's attempt limit.
 *
 * @param kind what happened
 * @param detail a sentence for the attempt history (never null)
 */
public record InfraFailure(Kind kind, String detail) {
  /** The retryable ways an attempt can end. */
  public enum Kind {
    /** The case ran past its run's case timeout and was killed. */
    TIMEOUT,
    /** The case's process was killed by a signal it did not ask for. */
    SIGNALED,
    /** The evaluator itself failed (a bug or a broken environment on the worker). */
    EVALUATOR_CRASHED,
    /** The worker's connection closed, or it was reaped for silence, with the attempt in flight. */
    WORKER_LOST,
    /** The coordinator restarted while the attempt was leased. */
    COORDINATOR_RESTARTED,
    /** Nobody renewed the lease before it expired (its holder was not heard from). */
    LEASE_EXPIRED,
    /**
     * The worker gave the job back without starting it: it is draining (shutting down gracefully, or
     * told to by the coordinator) and will not run it. Neither the case's failure nor the worker's: the
     * job is simply free to run elsewhere, and the attempt is not charged (see {@code RedeliveryPolicy}).
     */
    HANDED_BACK;

    /**
     * Whether a worker may report this kind. {@code TIMEOUT}, {@code SIGNALED}, {@code EVALUATOR_CRASHED}
     * and {@code HANDED_BACK} happen on the worker; the other kinds are the coordinator's judgement of a
     * worker or a lease, and no worker can say them about itself (they have no wire form).
     */
    public boolean reportedByWorkers() {
      return this == TIMEOUT || this == SIGNALED || this == EVALUATOR_CRASHED || this == HANDED_BACK;
    }
  }

  public InfraFailure {
    Objects.requireNonNull(kind, "kind");
    detail = detail == null ? "" : detail;
  }
}

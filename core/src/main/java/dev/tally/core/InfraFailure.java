package dev.tally.core;

import java.util.Objects;

/**
 * An attempt that ended for a reason that is not the case's own: the job is retried on another worker,
 * up to its run's attempt limit.
 *
 * @param kind what happened
 * @param detail a sentence for the attempt history (never null)
 * @param retryAfterMillis for {@link Kind#RATE_LIMITED}, the wait the endpoint asked for ({@code
 *     Retry-After}) in milliseconds, 0 when it asked for none; 0 for every other kind
 */
public record InfraFailure(Kind kind, String detail, long retryAfterMillis) {
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
    HANDED_BACK,
    /**
     * The endpoint the evaluator calls said it is overloaded or rate limited (HTTP 429 or 503), with the
     * wait it asked for if any ({@link InfraFailure#retryAfterMillis}). The endpoint's condition, not the
     * case's: the attempt is not charged, and the coordinator backs off the whole run's fleet together
     * (see {@code dev.tally.core.schedule.RunGovernor}).
     */
    RATE_LIMITED;

    /**
     * Whether a worker may report this kind. {@code TIMEOUT}, {@code SIGNALED}, {@code EVALUATOR_CRASHED}
     * and {@code HANDED_BACK} happen on the worker; the other kinds are the coordinator's judgement of a
     * worker or a lease, and no worker can say them about itself (they have no wire form).
     */
    public boolean reportedByWorkers() {
      return this == TIMEOUT || this == SIGNALED || this == EVALUATOR_CRASHED || this == HANDED_BACK
          || this == RATE_LIMITED;
    }
  }

  /**
   * The longest wait a rate-limited attempt may ask for: a day. Endpoints ask for seconds or minutes; a
   * larger value is a mistake (a date read as seconds), not a wait worth stopping a run for.
   */
  public static final long MAX_RETRY_AFTER_MILLIS = 86_400_000L;

  /**
   * @throws IllegalArgumentException if {@code retryAfterMillis} is negative, above {@link
   *     #MAX_RETRY_AFTER_MILLIS}, or set for a kind other than
   *     {@link Kind#RATE_LIMITED}
   */
  public InfraFailure {
    Objects.requireNonNull(kind, "kind");
    detail = detail == null ? "" : detail;
    if (retryAfterMillis < 0 || retryAfterMillis > MAX_RETRY_AFTER_MILLIS
        || (retryAfterMillis > 0 && kind != Kind.RATE_LIMITED)) {
      throw new IllegalArgumentException("retryAfterMillis must be >= 0, and 0 unless RATE_LIMITED; got "
          + retryAfterMillis + " for " + kind);
    }
  }

  /** A failure of any kind without a requested wait. */
  public InfraFailure(Kind kind, String detail) {
    this(kind, detail, 0);
  }
}

package dev.tally.core.store;

import java.util.List;
import java.util.Objects;

/**
 * What cancelling a run did (the rule is {@link BatchRules#cancelRun}).
 *
 * @param runId the run
 * @param status what happened
 * @param pendingCancelled jobs cancelled while waiting for a lease
 * @param leases leases cancelled: their holders are told to abandon them, and a result they send later is
 *     fenced
 */
public record CancelResult(long runId, Status status, long pendingCancelled, List<CancelledLease> leases) {
  public CancelResult {
    Objects.requireNonNull(status, "status");
    leases = List.copyOf(leases);
  }

  /** What a cancel did. */
  public enum Status {
    /** The run was running and is cancelled now. */
    CANCELLED,
    /** The run was cancelled already: nothing changed (cancelling twice is one cancel). */
    ALREADY_CANCELLED,
    /** The run had finished: it is refused, nothing changed. */
    FINISHED,
    /** There is no such run. */
    NO_SUCH_RUN
  }

  /**
   * One lease the cancel ended.
   *
   * @param jobId the job
   * @param token its lease
   * @param worker its holder's name
   */
  public record CancelledLease(long jobId, long token, String worker) {}

  /** A cancel that changed nothing. */
  static CancelResult unchanged(long runId, Status status) {
    return new CancelResult(runId, status, 0, List.of());
  }
}

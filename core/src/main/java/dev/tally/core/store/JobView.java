package dev.tally.core.store;

import dev.tally.core.Outcome;

/**
 * A job as read back from the store, for results files and status.
 *
 * @param jobId the store's id
 * @param runId its run
 * @param position its 0-based place in the dataset
 * @param caseId the case's {@code id}
 * @param state where it is
 * @param token its current (latest issued) fencing token; 0 before its first lease
 * @param attempts how many leases it has been given
 * @param worker the worker that holds it (leased) or whose outcome was recorded (done); may be null
 * @param outcome the recorded outcome, or null unless {@code state == DONE}
 * @param failureReason why it ended failed, or null unless {@code state == FAILED}
 */
public record JobView(
    long jobId,
    long runId,
    int position,
    String caseId,
    JobState state,
    long token,
    int attempts,
    String worker,
    Outcome outcome,
    String failureReason) {
  /** The verdict word of a cancelled case (not judged: neither an error of the case nor counted as one). */
  public static final String CANCELLED = "cancelled";

  /**
   * The case's verdict as everything reports it (results.jsonl, the API's case objects, {@code ?verdict=},
   * the chaos check): the recorded verdict ({@code pass}, {@code fail}, {@code error}); {@code error} for a
   * case that ran out of attempts (it counts among the errored); {@value #CANCELLED} for a cancelled one;
   * null while it has not ended. The one rule: a case out of attempts was an error in the results and the
   * counts but missing from {@code ?verdict=error}, and a cancelled case had no verdict in the API.
   */
  public String reportedVerdict() {
    return switch (state) {
      case DONE -> outcome == null ? null : outcome.verdict().wireName();
      case FAILED -> dev.tally.core.Verdict.ERROR.wireName();
      case CANCELLED -> CANCELLED;
      default -> null;
    };
  }
}

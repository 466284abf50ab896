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
    String failureReason) {}

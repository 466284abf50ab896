package dev.tally.http.dto;

/**
 * One ended attempt at a case.
 *
 * @param worker the worker that held the lease
 * @param fencingToken the lease's fencing token
 * @param startedAt when the lease was issued, ISO-8601 UTC
 * @param endedAt when the attempt ended, ISO-8601 UTC
 * @param ending how it ended: {@code recorded}, or the infrastructure failure in lower case ({@code
 *     worker_lost}, {@code timed_out}, {@code lease_expired}, ...); {@code abandoned} when another attempt of
 *     the case (a backup, or the attempt a backup copied) was recorded first, {@code dropped} when it ended
 *     while another attempt of the case went on (the detail says why), {@code cancelled} when its run was
 *     cancelled
 * @param detail a sentence about the ending (may be empty)
 * @param runMillis how long the case ran on the worker, or null if unknown
 * @param queuedMillis how long it waited on the worker before it started, or null if unknown
 * @param duplicateResults results of this attempt that arrived again after it was recorded (suppressed)
 * @param fencedResults results of this attempt that arrived after its lease had ended (refused by fencing)
 */
public record AttemptObject(
    String worker,
    long fencingToken,
    String startedAt,
    String endedAt,
    String ending,
    String detail,
    Long runMillis,
    Long queuedMillis,
    int duplicateResults,
    int fencedResults) {}

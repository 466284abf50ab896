package dev.tally.core.schedule;

/**
 * A lease a reconnecting worker says it still holds: a job it is running, or whose result waits in its
 * outbox.
 *
 * @param jobId the job
 * @param token the lease's fencing token
 */
public record HeldLease(long jobId, long token) {}

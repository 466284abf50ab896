package dev.tally.core.store;

/**
 * One live attempt of a job: a lease issued and not yet ended. A job has one live attempt in the usual
 * case; while a backup attempt runs (speculative execution) it has two, and either one's result may be
 * recorded ({@link BatchRules}: fencing by the set of live attempts).
 *
 * @param jobId the job
 * @param runId its run
 * @param token the attempt's fencing token
 * @param owner the worker that holds the lease
 * @param leasedAtMillis when the lease was issued, epoch ms
 * @param leaseExpiryMillis when it expires unless renewed, epoch ms
 */
public record LiveLease(long jobId, long runId, long token, String owner, long leasedAtMillis, long leaseExpiryMillis) {}

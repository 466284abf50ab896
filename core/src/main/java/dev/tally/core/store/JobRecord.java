package dev.tally.core.store;

import dev.tally.core.RedeliveryPolicy.JobHistory;

/**
 * One job's row as the store's rules read it inside a write transaction.
 *
 * @param jobId the job
 * @param runId its run
 * @param state where it is
 * @param token its current (latest issued) fencing token
 * @param owner the lease holder's name while leased, else null
 * @param leasedAtMillis when its current lease was issued, epoch ms (0 if never)
 * @param leaseExpiryMillis when its current lease expires unless renewed, epoch ms (0 unless leased)
 * @param history its attempts, lost streak and timeouts
 */
public record JobRecord(
    long jobId, long runId, JobState state, long token, String owner, long leasedAtMillis, long leaseExpiryMillis,
    JobHistory history) {}

package dev.tally.core.store;

import dev.tally.core.RedeliveryPolicy.JobHistory;

/**
 * One job's row as the store's rules read it inside a write transaction.
 *
 * @param jobId the job
 * @param runId its run
 * @param state where it is
 * @param token the fencing token of the job's own lease while leased (its first live attempt); of the attempt
 *     that recorded it when done; else of its last lease. Backup attempts ({@link #backups}) have greater
 *     tokens, and every new lease's token is above every token issued before
 * @param owner the lease holder's name while leased, else null
 * @param leasedAtMillis when its current lease was issued, epoch ms (0 if never)
 * @param leaseExpiryMillis when its current lease expires unless renewed, epoch ms (0 unless leased)
 * @param history its attempts (backups included: every lease is an attempt), lost streak and timeouts
 * @param backups how many backup attempts of the job are live besides its own lease (0 unless leased;
 *     {@link StoreTransaction#backups} lists them)
 */
public record JobRecord(
    long jobId, long runId, JobState state, long token, String owner, long leasedAtMillis, long leaseExpiryMillis,
    JobHistory history, int backups) {

  /** A job with no live backup attempt. */
  public JobRecord(long jobId, long runId, JobState state, long token, String owner, long leasedAtMillis,
      long leaseExpiryMillis, JobHistory history) {
    this(jobId, runId, state, token, owner, leasedAtMillis, leaseExpiryMillis, history, 0);
  }

  /** The job's own lease as a live attempt (meaningful only while it is leased). */
  public LiveLease lease() {
    return new LiveLease(jobId, runId, token, owner, leasedAtMillis, leaseExpiryMillis);
  }
}

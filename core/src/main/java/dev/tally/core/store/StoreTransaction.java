package dev.tally.core.store;

import dev.tally.core.Assignment;
import dev.tally.core.Outcome;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.RedeliveryPolicy.JobHistory;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import java.util.List;

/**
 * The primitive reads and writes of one open write transaction: what a database must provide so that
 * {@link BatchRules} can apply a batch. Each store implements it once (a few SQL statements each, or map
 * operations); the rules (order, fencing, redelivery, counters) live in {@link BatchRules} alone.
 *
 * <p>Every method runs inside the caller's transaction: if any throws, the store rolls the whole
 * transaction back. Implementations throw {@link StoreException} (or any runtime exception) on failure.
 *
 * <p>Thread-safety: one transaction, one thread.
 */
public interface StoreTransaction {

  /** The job's row, or null if there is no such job. */
  JobRecord job(long jobId);

  /**
   * The fencing check and the write as one step: if the job is leased under exactly {@code token}, it
   * becomes done with {@code outcome} (recorded as {@code worker}'s) and its lease ends.
   *
   * @return the job's row as it was before (leased), or null if the job was not leased under that token
   *     (nothing changed)
   */
  JobRecord recordIfCurrent(long jobId, long token, String worker, Outcome outcome);

  /**
   * Ends the job's lease and puts it back to pending, not before {@code notBeforeMillis}, with its new
   * history; the lease's owner is remembered as the job's last worker (see {@link #lease}).
   */
  void requeue(long jobId, long notBeforeMillis, JobHistory history);

  /** Ends the job's lease and the job: {@code failed}, with why, and its new history. */
  void fail(long jobId, String reason, JobHistory history);

  /** Appends one ended attempt to the history; (job, token) is unique. */
  void addAttempt(AttemptView attempt);

  /**
   * Leases up to {@code maxJobs} pending jobs of {@code runId} whose backoff has passed, in dataset order:
   * each gets the next fencing token (strictly above every token before it), one more attempt, the owner
   * and the expiry.
   *
   * @param avoidOwnRetries skip the jobs whose last attempt was leased to {@code worker} (see {@link
   *     #requeue}), so that a retry goes to another worker when one has room
   * @return the assignments, in dataset order; fewer than {@code maxJobs} when the run has no more
   */
  List<Assignment> lease(long runId, String worker, int maxJobs, long nowMillis, long leaseExpiryMillis,
      boolean avoidOwnRetries);

  /** Extends a lease if the job is still leased under the token (see {@link RenewRequest}). */
  RenewResult renew(RenewRequest request);

  /** The run's leases whose expiry is before {@code nowMillis}, by expiry, then job id. */
  List<JobRecord> expiredLeases(long runId, long nowMillis);

  /** The run's leases issued before {@code beforeMillis}, by job id. */
  List<JobRecord> leasesIssuedBefore(long runId, long beforeMillis);

  /**
   * The run's attempt limits.
   *
   * @throws StoreException if there is no such run
   */
  AttemptLimits limits(long runId);

  /**
   * Applies a delta to the run's counters and marks the run finished at {@code nowMillis} when every job
   * has ended; returns the counters after it. A store keeps I2 (a run never counts more ended jobs than it
   * has) as a constraint that aborts the transaction.
   *
   * @throws StoreException if there is no such run, or the delta would break I2
   */
  RunCounters addCounters(long runId, CounterDelta delta, long nowMillis);

  /**
   * The run's counters as they stand in this transaction.
   *
   * @throws StoreException if there is no such run
   */
  RunCounters counters(long runId);

  /**
   * What is left to lease in the run.
   *
   * @return the earliest backoff end among its pending jobs that cannot be leased yet (epoch ms, or
   *     {@link Long#MAX_VALUE} when none), and whether any pending job can be leased now
   */
  PendingSummary pending(long runId, long nowMillis);

  /**
   * @param nextNotBeforeMillis the earliest backoff end in the future, or {@link Long#MAX_VALUE}
   * @param leasableNow whether a pending job's backoff has passed
   */
  record PendingSummary(long nextNotBeforeMillis, boolean leasableNow) {}
}

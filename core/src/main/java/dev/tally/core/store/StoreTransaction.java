package dev.tally.core.store;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.Outcome;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.RedeliveryPolicy.JobHistory;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import java.util.List;

/**
 * The primitive reads and writes of one open write transaction: what a database must provide so that
 * {@link BatchRules} can apply a batch, {@link RunCreation} create a run and {@link IdempotencyRules} keep
 * keys. Each store implements it once (a few SQL statements each, or map operations); the rules (order,
 * fencing, redelivery, counters, fair share, cancel, keys) live in those classes alone.
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
   * The fencing check and the write as one step: if the job is leased and {@code token} is one of its live
   * attempts (its own lease or a live backup's), it becomes done with {@code outcome} under that token
   * (recorded as {@code worker}'s), and every live attempt of the job ends.
   *
   * @return the recorded attempt as it was (its lease, the job's run and history as before) and the other
   *     live attempts it ended, or null if the token is not a live attempt of a leased job (nothing changed)
   */
  RecordedAttempt recordIfLive(long jobId, long token, String worker, Outcome outcome);

  /**
   * {@link #recordIfLive} for each of {@code requests}, with the same result as calling it for each in
   * order: a store may apply them in fewer statements (a SQL store writes a batch's records in a few
   * multi-row statements) as long as a job's later request sees what its earlier one did.
   *
   * @return one entry per request, in order: what {@link #recordIfLive} would have returned (null where
   *     nothing changed)
   */
  default List<RecordedAttempt> recordAllIfLive(List<StoreBatch.RecordRequest> requests) {
    List<RecordedAttempt> out = new java.util.ArrayList<>(requests.size());
    for (StoreBatch.RecordRequest r : requests) {
      out.add(recordIfLive(r.jobId(), r.token(), r.worker(), r.outcome()));
    }
    return out;
  }

  /**
   * What {@link #recordIfLive} recorded.
   *
   * @param job the job's row before the record, with the winning attempt's lease in its lease fields (its
   *     token, owner, lease times)
   * @param abandoned the job's other live attempts, ended by the record (their holders are to abandon them)
   */
  record RecordedAttempt(JobRecord job, List<LiveLease> abandoned) {
    public RecordedAttempt {
      abandoned = List.copyOf(abandoned);
    }
  }

  // ---- backup attempts (speculative execution) -----------------------------------------------------

  /** The live backup attempts of a job, by token; empty for a job that has none. */
  List<LiveLease> backups(long jobId);

  /** The live backup attempts of a run's jobs, by job id, then token. */
  List<LiveLease> runBackups(long runId);

  /**
   * Issues a backup attempt of a leased job to {@code worker}: a new fencing token (above every token issued
   * for the job before), one more attempt, the owner and the expiry; the job's other live attempts stay.
   * The caller has checked that the job is leased.
   *
   * @return the assignment, with the job's case and run's evaluator, as {@link #lease} makes them
   */
  Assignment leaseBackup(long jobId, String worker, long nowMillis, long leaseExpiryMillis);

  /** Ends one live backup attempt of a job; the job and its other live attempts stay as they are. */
  void endBackup(long jobId, long token);

  /**
   * Ends the job's own lease while one of its backups goes on: the backup attempt {@code token} becomes the
   * job's lease (its token, owner and lease times), and is no longer a backup.
   */
  void promoteBackup(long jobId, long token);

  /**
   * Ends the job's lease (it has no live backup) and puts it back to pending, not before {@code notBeforeMillis}, with its new
   * history; the lease's owner is remembered as the job's last worker (see {@link #lease}).
   */
  void requeue(long jobId, long notBeforeMillis, JobHistory history);

  /** Ends the job's lease (it has no live backup) and the job: {@code failed}, with why, and its new history. */
  void fail(long jobId, String reason, JobHistory history);

  /** Appends one ended attempt to the history; (job, token) is unique. */
  void addAttempt(AttemptView attempt);

  /**
   * Notes on the ended attempt (job, token) that a result of it arrived late: a duplicate of its recorded
   * result, or fenced because its lease had ended. Nothing if there is no such attempt row.
   */
  void noteLateResult(long jobId, long token, boolean duplicate);

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

  /**
   * Extends a lease if the token is still a live attempt of the job, its own lease or a backup's (see {@link
   * RenewRequest}).
   */
  RenewResult renew(RenewRequest request);

  /** The run's jobs whose own lease expires before {@code nowMillis}, by expiry, then job id (backups: {@link #runBackups}). */
  List<JobRecord> expiredLeases(long runId, long nowMillis);

  /** The run's jobs whose own lease was issued before {@code beforeMillis}, by job id (backups: {@link #runBackups}). */
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

  // ---- the response journal ---------------------------------------------------------------------

  /**
   * Keeps a paid response under the job's run and case and the request's digest, unless that key already
   * has one (the first response stays: a second attempt's is the same request answered again).
   *
   * @param jobId an existing job (its run and case id are the key's)
   * @param response at most {@link dev.tally.core.JournalEntry#MAX_RESPONSE_BYTES} in UTF-8
   * @param nowMillis when it is journalled, epoch ms
   * @return true if it was stored, false if the key already had a response (nothing changed)
   */
  boolean insertResponse(long jobId, String requestDigest, String response, long nowMillis);

  /**
   * The responses journalled for a case, by request digest, in the order they were journalled, up to
   * {@code maxBytes} (digests and responses in UTF-8): a response that would pass it is left out, and so
   * is every later one.
   */
  java.util.Map<String, String> responses(long runId, String caseId, int maxBytes);

  // ---- fair share and cancel ----------------------------------------------------------------------

  /** How many of the run's jobs are leased now (in this transaction). */
  int leasedCount(long runId);

  /** The run's state, or null if there is no such run. */
  RunState runState(long runId);

  /** Sets (or, with null, clears) a running run's pause; a run that has ended is left alone. */
  void setPause(long runId, String reason);

  /** The run's leased jobs, by job id. */
  List<JobRecord> leasedJobs(long runId);

  /** Ends a leased job as {@code cancelled}: its lease and its backups' end with it. */
  void cancelLeased(long jobId);

  /**
   * Cancels every pending job of the run.
   *
   * @return how many were cancelled
   */
  long cancelPending(long runId);

  /** Sets the run's state, and its end time to {@code nowMillis} (the run is cancelled). */
  void cancelRunRow(long runId, long nowMillis);

  /**
   * Puts back in the queue every job of the run that ended in error: done with verdict {@code error}, or
   * failed (out of attempts, poison). Each becomes pending with fresh attempts (its attempt count, loss and
   * timeout streaks and backoff cleared) and keeps its fencing token, so every new lease's token is still
   * greater than any before; a done job keeps its earlier outcome's columns until a new outcome is
   * recorded over them. Counters are not touched: the caller gives back what the result says.
   */
  RequeuedErrors requeueErrors(long runId);

  /** Marks an ended run running again (its finish time cleared), for {@link BatchRules#retryErrors}. */
  void reopenRunRow(long runId);

  // ---- rescore -------------------------------------------------------------------------------------

  /**
   * Up to {@code maxCases} of the run's done jobs whose position is above {@code afterPosition}, by position,
   * each with its case and its recorded outcome ({@link BatchRules#rescore} reads them a page at a time).
   */
  List<RecordedCase> recordedCases(long runId, int afterPosition, int maxCases);

  /**
   * Writes {@code outcome} over a done job's recorded outcome (verdict, score, output, answer, fields, exit
   * code, stderr, duration); its state, worker, attempts and token stay. Counters are not touched: the caller
   * moves them.
   *
   * @throws StoreException (or any runtime exception) if the job is not done
   */
  void replaceOutcome(long jobId, Outcome outcome);

  /**
   * Sets one of the run's evaluator options (its spec's {@link dev.tally.core.EvaluatorSpec#options}),
   * adding it or replacing its value; readers see it from the commit on.
   */
  void setEvaluatorOption(long runId, String key, String value);

  /** One of the run's evaluator options, as this transaction sees it; null if the run has no such option. */
  String evaluatorOption(long runId, String key);

  // ---- run creation -------------------------------------------------------------------------------

  /**
   * Inserts a run ({@code running}, no jobs yet, total 0) with its evaluator options.
   *
   * @return its id
   */
  long insertRun(NewRun run, long nowMillis);

  /**
   * Inserts one pending job of a run being created.
   *
   * @return false, inserting nothing, if the run already has a job with this case id or this position (the
   *     store's unique constraints), so the caller can say which
   */
  boolean insertJob(long runId, CaseRecord c);

  /** The position of the run's job with case id {@code caseId}, or -1. */
  int positionOfCase(long runId, String caseId);

  /** Sets a new run's total; a run of 0 jobs is finished at {@code nowMillis}. */
  void setRunTotal(long runId, long total, long nowMillis);

  // ---- idempotency keys ---------------------------------------------------------------------------

  /** The key's row, or null. */
  IdempotencyKey key(String scope, String key);

  /**
   * Inserts a key's row.
   *
   * @throws StoreException (or any runtime exception) if the key has a row: the primary key (scope, key)
   */
  void insertKey(IdempotencyKey row);

  /** Replaces the row of the key {@code row} names. */
  void updateKey(IdempotencyKey row);

  /** Deletes the key's row, if any. */
  void deleteKey(String scope, String key);

  /**
   * Deletes the completed rows that expired at or before {@code completedExpiredBy} and the in-progress rows
   * whose hold ended before {@code heldUntilBefore}.
   *
   * @return how many were deleted
   */
  int deleteKeys(long completedExpiredBy, long heldUntilBefore);

  /**
   * Deletes every in-progress row.
   *
   * @return how many were deleted
   */
  int deleteHeldKeys();

  /** A new reservation token, different from every other this store issued. */
  String newReservationToken();
}

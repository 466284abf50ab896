package dev.tally.core.store;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import java.util.List;
import java.util.Objects;

/**
 * Everything one scheduler step asks of the store, applied in one transaction by {@link Store#apply}:
 * first the records, then the releases, then the leases (so a job released in this batch may be leased
 * again in it, to another worker, once its backoff allows).
 *
 * <p>Leases come only from the runs in {@code runIds}, in that order: a coordinator serves the runs it
 * was given, never another process's runs that happen to share the store. Records and releases are not
 * limited (a late result for any run is still judged by the fencing rule).
 *
 * @param nowMillis the step's wall time, epoch milliseconds (lease start, attempt end, backoff checks)
 * @param runIds the runs leases may come from, in priority order; also the runs that {@link
 *     StoreBatchResult#nextNotBeforeMillis()} and {@link StoreBatchResult#pendingLeft()} describe
 * @param records outcomes to record
 * @param releases attempts that ended retryably, to put back or to end
 * @param leases requests for new leases
 * @param renewals leases to extend (their holders are alive), applied after the leases
 * @param sweepExpiredLeases whether to end, after everything else, every lease of the batch's runs whose
 *     expiry has passed ({@link InfraFailure.Kind#LEASE_EXPIRED}): the job goes back to pending, or ends
 *     failed if it has used its run's attempts
 */
public record StoreBatch(
    long nowMillis,
    List<Long> runIds,
    List<RecordRequest> records,
    List<ReleaseRequest> releases,
    List<LeaseRequest> leases,
    List<RenewRequest> renewals,
    boolean sweepExpiredLeases) {
  public StoreBatch {
    runIds = List.copyOf(runIds);
    records = List.copyOf(records);
    releases = List.copyOf(releases);
    leases = List.copyOf(leases);
    renewals = List.copyOf(renewals);
  }

  /** A batch with no renewals and no sweep. */
  public StoreBatch(
      long nowMillis,
      List<Long> runIds,
      List<RecordRequest> records,
      List<ReleaseRequest> releases,
      List<LeaseRequest> leases) {
    this(nowMillis, runIds, records, releases, leases, List.of(), false);
  }

  /** Whether the batch asks for nothing at all. */
  public boolean isEmpty() {
    return records.isEmpty() && releases.isEmpty() && leases.isEmpty() && renewals.isEmpty() && !sweepExpiredLeases;
  }

  /**
   * Extend a lease to {@code leaseExpiryMillis}, if the job is still leased under {@code token}.
   *
   * @param jobId the job
   * @param token the lease
   * @param leaseExpiryMillis the new expiry, epoch ms
   */
  public record RenewRequest(long jobId, long token, long leaseExpiryMillis) {}

  /**
   * What a renewal found.
   *
   * @param current whether the job was still leased under the token (and so was renewed)
   * @param runId the job's run, or 0 if the job does not exist
   * @param attempt the lease's attempt number (1-based), or 0 if the job does not exist
   */
  public record RenewResult(boolean current, long runId, int attempt) {}

  /**
   * A lease the sweep ended because its expiry passed.
   *
   * @param jobId the job
   * @param token the expired lease
   * @param runId the job's run
   * @param failed whether the job ended failed (out of attempts) instead of going back to pending
   */
  public record ExpiredLease(long jobId, long token, long runId, boolean failed) {}

  /**
   * Record an outcome reported under a lease.
   *
   * @param jobId the job
   * @param token the token the worker reported; checked against the job's current lease (fencing)
   * @param worker the reporting worker's name, kept with the outcome
   * @param outcome what the evaluator made of the case
   */
  public record RecordRequest(long jobId, long token, String worker, Outcome outcome) {
    public RecordRequest {
      Objects.requireNonNull(worker, "worker");
      Objects.requireNonNull(outcome, "outcome");
    }
  }

  /**
   * End an attempt retryably. Applied only while the job is still leased under {@code token}; otherwise
   * it is {@link ReleaseStatus#STALE} and nothing changes.
   *
   * <p>Poison cases: the store counts, per job, the attempts in a row that ended with their worker dying
   * while the case ran ({@code diedRunning}). A {@code WORKER_LOST} release of a job that was only queued
   * on the worker leaves the count as it is; any other failure resets it. When the count reaches
   * {@code poisonLimit} (if above 0), the job ends failed as poison, whatever {@code terminal} says.
   *
   * @param jobId the job
   * @param token the lease being ended
   * @param failure why the attempt ended
   * @param notBeforeMillis the job may not be leased again before this wall time (backoff), epoch ms
   * @param terminal true to end the job {@code failed} instead of putting it back (out of attempts)
   * @param diedRunning whether its worker died (or was reaped) while this case was running on it
   * @param poisonLimit deaths in a row that make the case poison; 0 to not judge
   */
  public record ReleaseRequest(
      long jobId, long token, InfraFailure failure, long notBeforeMillis, boolean terminal, boolean diedRunning, int poisonLimit) {
    public ReleaseRequest {
      Objects.requireNonNull(failure, "failure");
      if (poisonLimit < 0) {
        throw new IllegalArgumentException("poisonLimit must be >= 0, got " + poisonLimit);
      }
    }

    /** A release that does not judge poison. */
    public ReleaseRequest(long jobId, long token, InfraFailure failure, long notBeforeMillis, boolean terminal) {
      this(jobId, token, failure, notBeforeMillis, terminal, false, 0);
    }
  }

  /**
   * Lease up to {@code maxJobs} pending jobs of the batch's runs (in the batch's run order, then dataset
   * order) whose backoff has passed.
   *
   * @param worker the worker's name, stored as the lease's owner
   * @param maxJobs at most this many; at least 1
   * @param leaseExpiryMillis the leases expire at this wall time unless renewed, epoch ms
   */
  public record LeaseRequest(String worker, int maxJobs, long leaseExpiryMillis) {
    public LeaseRequest {
      Objects.requireNonNull(worker, "worker");
      if (maxJobs < 1) {
        throw new IllegalArgumentException("maxJobs must be >= 1, got " + maxJobs);
      }
    }
  }

  /** What a release did. */
  public enum ReleaseStatus {
    /** The job is pending again. */
    RELEASED,
    /** The job ended failed. */
    FAILED,
    /** The lease was no longer current (recorded, released or re-leased already); nothing changed. */
    STALE
  }
}

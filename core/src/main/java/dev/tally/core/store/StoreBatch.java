package dev.tally.core.store;

import dev.tally.core.InfraFailure;
import dev.tally.core.JournalEntry;
import dev.tally.core.Outcome;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.CaseState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Everything one scheduler step asks of the store, applied in one transaction by {@link Store#apply}
 * (the order and the rules are {@link BatchRules}'s): first the journal entries, then the records, then the releases, then the
 * cancels, then the leases (so a job released in this batch may be leased again in it, to another worker,
 * once its backoff allows, and no job of a run cancelled in it is), then the renewals, then the release of
 * orphaned leases and the sweep of expired ones.
 *
 * <p>Leases come only from the runs in {@code runIds}, in that order: a coordinator serves the runs it
 * was given, never another process's runs that happen to share the store. Records and releases are not
 * limited (a late result for any run is still judged by the fencing rule).
 *
 * @param nowMillis the step's wall time, epoch milliseconds (lease start, attempt end, backoff checks)
 * @param runIds the runs leases may come from, in priority order; also the runs that {@link
 *     StoreBatchResult#nextNotBeforeMillis()} and {@link StoreBatchResult#pendingLeft()} describe
 * @param redelivery the rules that decide whether a released job goes back to the queue or ends
 * @param records outcomes to record
 * @param releases attempts that ended retryably, to put back or to end
 * @param leases requests for new leases
 * @param renewals leases to extend (their holders are alive), applied after the leases
 * @param orphans leases from before this coordinator that nobody claimed, to release; or null
 * @param sweepExpiredLeases whether to end, after everything else, every lease of the batch's runs whose
 *     expiry has passed ({@link InfraFailure.Kind#LEASE_EXPIRED})
 * @param cancels runs to cancel ({@link BatchRules#cancelRun}), in order; any run of the store
 * @param journal paid responses to journal, each under its attempt's lease (fenced like a record)
 * @param leaseLimits per run, how far this batch's leases may go ({@link LeaseLimit}); a run absent is
 *     limited only by the requests' sizes
 * @param pauses runs to pause, with why ({@link RunView#pausedReason}); a run that has ended is left alone
 * @param backups backup attempts to issue (speculative execution), applied after the leases
 */
public record StoreBatch(
    long nowMillis,
    List<Long> runIds,
    RedeliveryPolicy redelivery,
    List<RecordRequest> records,
    List<ReleaseRequest> releases,
    List<LeaseRequest> leases,
    List<RenewRequest> renewals,
    OrphanRelease orphans,
    boolean sweepExpiredLeases,
    List<Long> cancels,
    List<JournalEntry> journal,
    Map<Long, LeaseLimit> leaseLimits,
    Map<Long, String> pauses,
    List<BackupRequest> backups) {
  public StoreBatch {
    backups = List.copyOf(backups);
    leaseLimits = Map.copyOf(leaseLimits);
    pauses = Map.copyOf(pauses);
    journal = List.copyOf(journal);
    cancels = List.copyOf(cancels);
    runIds = List.copyOf(runIds);
    Objects.requireNonNull(redelivery, "redelivery");
    records = List.copyOf(records);
    releases = List.copyOf(releases);
    leases = List.copyOf(leases);
    renewals = List.copyOf(renewals);
  }

  /** A batch that issues no backup attempt. */
  public StoreBatch(long nowMillis, List<Long> runIds, RedeliveryPolicy redelivery, List<RecordRequest> records,
      List<ReleaseRequest> releases, List<LeaseRequest> leases, List<RenewRequest> renewals, OrphanRelease orphans,
      boolean sweepExpiredLeases, List<Long> cancels, List<JournalEntry> journal, Map<Long, LeaseLimit> leaseLimits,
      Map<Long, String> pauses) {
    this(nowMillis, runIds, redelivery, records, releases, leases, renewals, orphans, sweepExpiredLeases, cancels,
        journal, leaseLimits, pauses, List.of());
  }

  /** A batch that limits no run's leases. */
  public StoreBatch(long nowMillis, List<Long> runIds, RedeliveryPolicy redelivery, List<RecordRequest> records,
      List<ReleaseRequest> releases, List<LeaseRequest> leases, List<RenewRequest> renewals, OrphanRelease orphans,
      boolean sweepExpiredLeases, List<Long> cancels, List<JournalEntry> journal) {
    this(nowMillis, runIds, redelivery, records, releases, leases, renewals, orphans, sweepExpiredLeases, cancels,
        journal, Map.of(), Map.of());
  }

  /**
   * How far one batch's leases may go in one run: the fleet-wide limits of a run ({@code
   * dev.tally.core.schedule.RunGovernor} computes them), applied by {@link BatchRules} inside the batch's
   * transaction, where the run's leased jobs are counted exactly.
   *
   * @param maxLeased after the batch, at most this many of the run's jobs leased at once (its concurrency)
   * @param maxNew at most this many new leases of the run in this batch (its request budget)
   */
  public record LeaseLimit(int maxLeased, int maxNew) {
    /** @throws IllegalArgumentException if either is negative */
    public LeaseLimit {
      if (maxLeased < 0 || maxNew < 0) {
        throw new IllegalArgumentException("lease limits must be >= 0, got maxLeased " + maxLeased + ", maxNew " + maxNew);
      }
    }
  }

  /** A batch that journals nothing. */
  public StoreBatch(long nowMillis, List<Long> runIds, RedeliveryPolicy redelivery, List<RecordRequest> records,
      List<ReleaseRequest> releases, List<LeaseRequest> leases, List<RenewRequest> renewals, OrphanRelease orphans,
      boolean sweepExpiredLeases, List<Long> cancels) {
    this(nowMillis, runIds, redelivery, records, releases, leases, renewals, orphans, sweepExpiredLeases, cancels,
        List.of());
  }

  /** A batch that cancels no run and journals nothing. */
  public StoreBatch(long nowMillis, List<Long> runIds, RedeliveryPolicy redelivery, List<RecordRequest> records,
      List<ReleaseRequest> releases, List<LeaseRequest> leases, List<RenewRequest> renewals, OrphanRelease orphans,
      boolean sweepExpiredLeases) {
    this(nowMillis, runIds, redelivery, records, releases, leases, renewals, orphans, sweepExpiredLeases, List.of());
  }

  /** A builder of a batch at {@code nowMillis} for the given runs, under the given rules. */
  public static Builder builder(long nowMillis, List<Long> runIds, RedeliveryPolicy redelivery) {
    return new Builder(nowMillis, runIds, redelivery);
  }

  /** Whether the batch asks for nothing at all. */
  public boolean isEmpty() {
    return records.isEmpty() && releases.isEmpty() && leases.isEmpty() && renewals.isEmpty() && orphans == null
        && !sweepExpiredLeases && cancels.isEmpty() && journal.isEmpty() && pauses.isEmpty() && backups.isEmpty();
  }

  /**
   * Extend a lease to {@code leaseExpiryMillis}, if the job is still leased under {@code token}. A
   * renewal ignores the lease's current expiry: a lease not yet swept can be renewed even after it expired
   * (that is how a worker reclaims its leases after a coordinator restart).
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
  public record RenewResult(boolean current, long runId, int attempt) {
    /** What a renewal of a lease that is not current finds. */
    public static final RenewResult NOT_CURRENT = new RenewResult(false, 0, 0);
  }

  /**
   * A lease the store ended without a report from its holder: swept because its expiry passed, or
   * released as an orphan of an earlier coordinator.
   *
   * @param jobId the job
   * @param token the ended lease
   * @param runId the job's run
   * @param why {@code LEASE_EXPIRED} or {@code COORDINATOR_RESTARTED}
   * @param status {@link ReleaseStatus#RELEASED} (back to the queue) or {@link ReleaseStatus#FAILED}
   */
  public record ExpiredLease(long jobId, long token, long runId, InfraFailure.Kind why, ReleaseStatus status) {}

  /**
   * Release every lease of the batch's runs that was issued before {@code leasedBeforeMillis} (by an
   * earlier coordinator) and is not one of {@code claimedJobIds} (those a reconnecting worker reclaimed),
   * as {@link InfraFailure.Kind#COORDINATOR_RESTARTED}: nobody will report them.
   *
   * @param leasedBeforeMillis leases issued at or after this wall time are kept, epoch ms
   * @param claimedJobIds jobs whose leases are held by this coordinator's workers
   */
  public record OrphanRelease(long leasedBeforeMillis, Set<Long> claimedJobIds) {
    public OrphanRelease {
      claimedJobIds = Set.copyOf(claimedJobIds);
    }
  }

  /**
   * Record an outcome reported under a lease.
   *
   * @param jobId the job
   * @param token the token the worker reported; checked against the job's current lease (fencing)
   * @param worker the reporting worker's name, kept with the outcome
   * @param outcome what the evaluator made of the case
   * @param timing how long the attempt took
   */
  public record RecordRequest(long jobId, long token, String worker, Outcome outcome, AttemptTiming timing) {
    public RecordRequest {
      Objects.requireNonNull(worker, "worker");
      Objects.requireNonNull(outcome, "outcome");
      Objects.requireNonNull(timing, "timing");
    }

    /** A record with no timing. */
    public RecordRequest(long jobId, long token, String worker, Outcome outcome) {
      this(jobId, token, worker, outcome, AttemptTiming.NONE);
    }
  }

  /**
   * End an attempt retryably. Applied only while the job is still leased under {@code token}; otherwise
   * it is {@link ReleaseStatus#STALE} and nothing changes. Whether the job goes back to the queue or ends
   * failed is the batch's {@link RedeliveryPolicy}'s judgement, made with the job's stored history.
   *
   * @param jobId the job
   * @param token the lease being ended
   * @param failure why the attempt ended
   * @param notBeforeMillis the job may not be leased again before this wall time (backoff), epoch ms
   * @param where where the case was on its worker when the attempt ended (the poison rule counts deaths
   *     while running)
   * @param timing how long the attempt took
   */
  public record ReleaseRequest(
      long jobId, long token, InfraFailure failure, long notBeforeMillis, CaseState where, AttemptTiming timing) {
    public ReleaseRequest {
      Objects.requireNonNull(failure, "failure");
      Objects.requireNonNull(where, "where");
      Objects.requireNonNull(timing, "timing");
    }

    /** A release whose case's state on its worker is not known, with no timing. */
    public ReleaseRequest(long jobId, long token, InfraFailure failure, long notBeforeMillis) {
      this(jobId, token, failure, notBeforeMillis, CaseState.UNKNOWN, AttemptTiming.NONE);
    }
  }

  /**
   * Lease up to {@code maxJobs} pending jobs of the batch's runs whose backoff has passed: shared among the
   * runs fairly ({@link BatchRules}), each run's in dataset order.
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

  /**
   * Issue a backup attempt of a leased job to another worker (speculative execution): applied only if the
   * job is still leased, has fewer than {@link BatchRules#MAX_BACKUPS_PER_JOB} live backups, and {@code
   * worker} holds none of its live attempts; else nothing is issued. Which job and which worker is the
   * scheduler's choice ({@code dev.tally.core.schedule.SpeculationPolicy}).
   *
   * @param jobId the job to copy
   * @param worker the worker's name, stored as the backup lease's owner
   * @param leaseExpiryMillis the backup lease expires at this wall time unless renewed, epoch ms
   */
  public record BackupRequest(long jobId, String worker, long leaseExpiryMillis) {
    public BackupRequest {
      Objects.requireNonNull(worker, "worker");
    }
  }

  /** What a release did. */
  public enum ReleaseStatus {
    /** The job is pending again. */
    RELEASED,
    /**
     * The attempt ended, and the job goes on under another of its live attempts (a backup, or the attempt
     * a backup copied): nothing goes back to the queue.
     */
    DROPPED,
    /** The job ended failed. */
    FAILED,
    /** The lease was no longer current (recorded, released or re-leased already); nothing changed. */
    STALE
  }

  /** Gathers a batch request by request. Not thread-safe. */
  public static final class Builder {
    private final long nowMillis;
    private final List<Long> runIds;
    private final RedeliveryPolicy redelivery;
    private final List<RecordRequest> records = new ArrayList<>();
    private final List<ReleaseRequest> releases = new ArrayList<>();
    private final List<LeaseRequest> leases = new ArrayList<>();
    private final List<RenewRequest> renewals = new ArrayList<>();
    private final List<Long> cancels = new ArrayList<>();
    private final List<JournalEntry> journal = new ArrayList<>();
    private final Map<Long, LeaseLimit> leaseLimits = new java.util.HashMap<>();
    private final Map<Long, String> pauses = new java.util.HashMap<>();
    private final List<BackupRequest> backups = new ArrayList<>();
    private OrphanRelease orphans;
    private boolean sweep;

    private Builder(long nowMillis, List<Long> runIds, RedeliveryPolicy redelivery) {
      this.nowMillis = nowMillis;
      this.runIds = List.copyOf(runIds);
      this.redelivery = Objects.requireNonNull(redelivery, "redelivery");
    }

    public Builder record(RecordRequest r) {
      records.add(r);
      return this;
    }

    public Builder release(ReleaseRequest r) {
      releases.add(r);
      return this;
    }

    public Builder lease(LeaseRequest r) {
      leases.add(r);
      return this;
    }

    public Builder renew(RenewRequest r) {
      renewals.add(r);
      return this;
    }

    public Builder cancel(long runId) {
      cancels.add(runId);
      return this;
    }

    /** Pauses a run, saying why. */
    public Builder pause(long runId, String reason) {
      pauses.put(runId, java.util.Objects.requireNonNull(reason, "reason"));
      return this;
    }

    /** Limits this batch's leases of {@code runId}. */
    public Builder limitLeases(long runId, LeaseLimit limit) {
      leaseLimits.put(runId, limit);
      return this;
    }

    /** Issues a backup attempt (see {@link BackupRequest}). */
    public Builder backup(BackupRequest r) {
      backups.add(r);
      return this;
    }

    public Builder journal(JournalEntry e) {
      journal.add(e);
      return this;
    }

    public Builder releaseOrphans(OrphanRelease o) {
      orphans = o;
      return this;
    }

    public Builder sweepExpiredLeases() {
      sweep = true;
      return this;
    }

    public StoreBatch build() {
      return new StoreBatch(nowMillis, runIds, redelivery, records, releases, leases, renewals, orphans, sweep, cancels, journal,
          leaseLimits, pauses, backups);
    }
  }
}

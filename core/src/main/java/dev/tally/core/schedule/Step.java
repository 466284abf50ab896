package dev.tally.core.schedule;

import dev.tally.core.Assignment;
import dev.tally.core.RecordStatus;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatch.OrphanRelease;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatch.ReleaseStatus;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import dev.tally.core.store.StoreBatchResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One scheduler step's requests, each kept with whom it is for (the worker a record's ack goes to, the
 * worker a lease is for, the claim a renewal settles), so that after the commit every answer finds its
 * recipient without parallel lists matched by index elsewhere. Made by the scheduler, filled by its
 * duties, turned into one {@link StoreBatch}.
 *
 * <p>Thread-safety: none; the scheduler's thread.
 */
final class Step {
  final long nowMillis;
  final long nowNanos;
  private final List<Long> runIds;
  private final RedeliveryPolicy redelivery;

  /**
   * A record and the session that reported it.
   *
   * @param latencyNanos lease to report on the monotonic clock, or -1 if the lease was not this scheduler's
   */
  record PendingRecord(RecordRequest request, WorkerHandle sender, long latencyNanos) {}

  /** A journal entry and the session that sent it. */
  record PendingJournal(dev.tally.core.JournalEntry entry, WorkerHandle sender) {}

  /** A release and the session to tell, or null when nobody is to be told (the session is gone). */
  record PendingRelease(ReleaseRequest request, WorkerHandle sender) {}

  /** A reconnecting worker's claim on a lease it says it still holds. */
  record Claim(WorkerHandle worker, HeldLease lease) {}

  /** New assignments for one worker. */
  record Leased(WorkerHandle holder, List<Assignment> assignments) {}

  /** What became of one claim. */
  record ClaimResult(Claim claim, RenewResult renewal) {}

  private final List<PendingRecord> records = new ArrayList<>();
  private final List<PendingRelease> releases = new ArrayList<>();
  private final List<PendingJournal> journal = new ArrayList<>();
  private final List<WorkerHandle> leaseHolders = new ArrayList<>();
  private final List<LeaseRequest> leases = new ArrayList<>();
  private final List<RenewRequest> renewals = new ArrayList<>();
  /** The claim each renewal settles, or null for a routine renewal of a connected worker's lease. */
  private final List<Claim> renewalClaims = new ArrayList<>();
  private final List<Long> cancels = new ArrayList<>();
  private final List<StoreBatch.BackupRequest> backups = new ArrayList<>();
  private OrphanRelease orphans;
  private final Map<Long, StoreBatch.LeaseLimit> leaseLimits = new java.util.HashMap<>();
  private final Map<Long, String> pauses = new java.util.LinkedHashMap<>();
  private boolean sweep;

  Step(long nowMillis, long nowNanos, List<Long> runIds, RedeliveryPolicy redelivery) {
    this.nowMillis = nowMillis;
    this.nowNanos = nowNanos;
    this.runIds = List.copyOf(runIds);
    this.redelivery = redelivery;
  }

  void record(PendingRecord r) {
    records.add(r);
  }

  void release(PendingRelease r) {
    releases.add(r);
  }

  void journal(PendingJournal j) {
    journal.add(j);
  }

  void lease(WorkerHandle holder, LeaseRequest request) {
    leaseHolders.add(holder);
    leases.add(request);
  }

  /** A routine renewal of a lease a connected worker holds. */
  void renew(long jobId, InFlight f, long expiryMillis) {
    renewals.add(new RenewRequest(jobId, f.token(), expiryMillis));
    renewalClaims.add(null);
  }

  /** A renewal that settles a reconnecting worker's claim. */
  void claim(Claim claim, long expiryMillis) {
    renewals.add(new RenewRequest(claim.lease().jobId(), claim.lease().token(), expiryMillis));
    renewalClaims.add(claim);
  }

  /** Pauses a run in this step's batch. */
  void pause(long runId, String reason) {
    pauses.put(runId, reason);
  }

  /** Limits this step's leases of a run (its fleet-wide limits). */
  void limitLeases(long runId, StoreBatch.LeaseLimit limit) {
    leaseLimits.put(runId, limit);
  }

  void releaseOrphans(OrphanRelease o) {
    orphans = o;
  }

  /** A backup attempt to issue (index for index with the result's {@code backups}). */
  void backup(StoreBatch.BackupRequest request) {
    backups.add(request);
  }

  void cancel(long runId) {
    cancels.add(runId);
  }

  /** The records of this step, in order (index for index with the result's statuses). */
  List<PendingRecord> records() {
    return records;
  }

  /** The releases of this step, in order (index for index with the result's statuses). */
  List<PendingRelease> releases() {
    return releases;
  }

  void sweepExpiredLeases() {
    sweep = true;
  }

  boolean sweeps() {
    return sweep;
  }

  /** The store batch of everything the duties asked. */
  StoreBatch toBatch() {
    StoreBatch.Builder b = StoreBatch.builder(nowMillis, runIds, redelivery);
    records.forEach(r -> b.record(r.request()));
    releases.forEach(r -> b.release(r.request()));
    leases.forEach(b::lease);
    leaseLimits.forEach(b::limitLeases);
    pauses.forEach(b::pause);
    renewals.forEach(b::renew);
    if (orphans != null) {
      b.releaseOrphans(orphans);
    }
    if (sweep) {
      b.sweepExpiredLeases();
    }
    cancels.forEach(b::cancel);
    backups.forEach(b::backup);
    journal.forEach(j -> b.journal(j.entry()));
    return b.build();
  }

  // ---- after the commit ----

  /** The acks of this step's records and releases, per session to tell (in report order). */
  Map<WorkerHandle, List<Ack>> acks(StoreBatchResult result) {
    Map<WorkerHandle, List<Ack>> acks = new LinkedHashMap<>();
    for (int i = 0; i < records.size(); i++) {
      PendingRecord r = records.get(i);
      RecordStatus status = result.recordStatuses().get(i);
      acks.computeIfAbsent(r.sender(), w -> new ArrayList<>())
          .add(new Ack(r.request().jobId(), r.request().token(), AckStatus.valueOf(status.name())));
    }
    for (int i = 0; i < releases.size(); i++) {
      PendingRelease r = releases.get(i);
      if (r.sender() != null) {
        // A dropped attempt (its case goes on under another) is released as far as its worker is concerned.
        AckStatus status = result.releaseStatuses().get(i) == ReleaseStatus.STALE ? AckStatus.FENCED : AckStatus.RELEASED;
        acks.computeIfAbsent(r.sender(), w -> new ArrayList<>())
            .add(new Ack(r.request().jobId(), r.request().token(), status));
      }
    }
    return acks;
  }

  /** The acks of this step's journal entries, per session to tell (in the order they came). */
  Map<WorkerHandle, List<JournalAck>> journalAcks(StoreBatchResult result) {
    Map<WorkerHandle, List<JournalAck>> acks = new LinkedHashMap<>();
    for (int i = 0; i < journal.size(); i++) {
      PendingJournal j = journal.get(i);
      acks.computeIfAbsent(j.sender(), w -> new ArrayList<>()).add(new JournalAck(j.entry().jobId(),
          j.entry().token(), j.entry().requestDigest(), result.journalStatuses().get(i)));
    }
    return acks;
  }

  /** The new assignments of each worker that asked. */
  List<Leased> leased(StoreBatchResult result) {
    List<Leased> out = new ArrayList<>(leases.size());
    for (int i = 0; i < leases.size(); i++) {
      out.add(new Leased(leaseHolders.get(i), result.leases().get(i)));
    }
    return out;
  }

  /** What became of each claim. */
  List<ClaimResult> claims(StoreBatchResult result) {
    List<ClaimResult> out = new ArrayList<>();
    for (int i = 0; i < renewals.size(); i++) {
      Claim c = renewalClaims.get(i);
      if (c != null) {
        out.add(new ClaimResult(c, result.renewals().get(i)));
      }
    }
    return out;
  }
}

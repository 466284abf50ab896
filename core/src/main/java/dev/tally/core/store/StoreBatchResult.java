package dev.tally.core.store;

import dev.tally.core.Assignment;
import dev.tally.core.RecordStatus;
import java.util.List;
import java.util.Map;

/**
 * What {@link Store#apply} did, index for index with the batch's lists. Returned only after the
 * transaction committed.
 *
 * @param recordStatuses one status per {@link StoreBatch#records()} entry, in order
 * @param releaseStatuses one status per {@link StoreBatch#releases()} entry, in order
 * @param leases one list of new assignments per {@link StoreBatch#leases()} entry, in order (possibly
 *     empty)
 * @param counters the counters, after the commit, of every run the batch touched
 * @param nextNotBeforeMillis the earliest backoff time among the batch's runs' pending jobs that could
 *     not be leased yet, epoch ms, or {@link Long#MAX_VALUE} when there is none
 * @param pendingLeft whether jobs of the batch's runs that were eligible for a lease are still pending
 *     after this batch
 * @param renewals one result per {@link StoreBatch#renewals()} entry, in order
 * @param expired the leases the sweep ended (empty unless the batch asked for a sweep)
 * @param cancels one result per {@link StoreBatch#cancels()} entry, in order
 * @param journalStatuses one status per {@link StoreBatch#journal()} entry, in order
 * @param backups one entry per {@link StoreBatch#backups()} request, in order: the backup's assignment, or
 *     empty if none was issued
 * @param abandoned the live attempts this batch's records ended because another attempt of the same job was
 *     recorded first: their holders are to abandon them (their late results are fenced)
 */
public record StoreBatchResult(
    List<RecordStatus> recordStatuses,
    List<StoreBatch.ReleaseStatus> releaseStatuses,
    List<List<Assignment>> leases,
    Map<Long, RunCounters> counters,
    long nextNotBeforeMillis,
    boolean pendingLeft,
    List<StoreBatch.RenewResult> renewals,
    List<StoreBatch.ExpiredLease> expired,
    List<CancelResult> cancels,
    List<dev.tally.core.JournalEntry.Status> journalStatuses,
    List<java.util.Optional<Assignment>> backups,
    List<LiveLease> abandoned) {
  public StoreBatchResult {
    backups = List.copyOf(backups);
    abandoned = List.copyOf(abandoned);
    journalStatuses = List.copyOf(journalStatuses);
    recordStatuses = List.copyOf(recordStatuses);
    releaseStatuses = List.copyOf(releaseStatuses);
    leases = List.copyOf(leases);
    counters = Map.copyOf(counters);
    renewals = List.copyOf(renewals);
    expired = List.copyOf(expired);
    cancels = List.copyOf(cancels);
  }

  /** The result of a batch that issued no backup and abandoned no attempt. */
  public StoreBatchResult(List<RecordStatus> recordStatuses, List<StoreBatch.ReleaseStatus> releaseStatuses,
      List<List<Assignment>> leases, Map<Long, RunCounters> counters, long nextNotBeforeMillis, boolean pendingLeft,
      List<StoreBatch.RenewResult> renewals, List<StoreBatch.ExpiredLease> expired, List<CancelResult> cancels,
      List<dev.tally.core.JournalEntry.Status> journalStatuses) {
    this(recordStatuses, releaseStatuses, leases, counters, nextNotBeforeMillis, pendingLeft, renewals, expired,
        cancels, journalStatuses, List.of(), List.of());
  }

  /** The result of a batch that journalled nothing. */
  public StoreBatchResult(List<RecordStatus> recordStatuses, List<StoreBatch.ReleaseStatus> releaseStatuses,
      List<List<Assignment>> leases, Map<Long, RunCounters> counters, long nextNotBeforeMillis, boolean pendingLeft,
      List<StoreBatch.RenewResult> renewals, List<StoreBatch.ExpiredLease> expired, List<CancelResult> cancels) {
    this(recordStatuses, releaseStatuses, leases, counters, nextNotBeforeMillis, pendingLeft, renewals, expired,
        cancels, List.of());
  }
}

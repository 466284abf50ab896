package dev.tally.core.store;

import dev.tally.core.Assignment;
import dev.tally.core.InfraFailure;
import dev.tally.core.JournalEntry;
import dev.tally.core.RecordStatus;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.RedeliveryPolicy.CaseState;
import dev.tally.core.RedeliveryPolicy.Judgement;
import dev.tally.core.store.StoreBatch.ExpiredLease;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatch.OrphanRelease;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatch.ReleaseStatus;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The store's semantics, written once: how a {@link StoreBatch} is applied, on top of the primitive reads
 * and writes a database provides ({@link StoreTransaction}). Every {@link Store} calls this inside one
 * transaction, so the rules below cannot drift between SQLite, the in-memory store the simulation runs,
 * and any later database.
 *
 * <h2>Rules</h2>
 *
 * <ul>
 *   <li><b>Order.</b> Journal entries, then records, then releases, then cancels, then leases, then backup
 *       attempts, then renewals, then orphaned leases, then the sweep of expired leases; then each touched
 *       run's counters are written once. Two requests for one job behave as if applied one after the other.
 *   <li><b>Fencing by the set of live attempts (I3) and idempotent recording (I2).</b> A job has a set of
 *       live attempts: leases issued and not yet ended. Usually one; while a backup attempt runs
 *       (speculative execution, {@link StoreBatch.BackupRequest}) two. An outcome is {@link
 *       RecordStatus#RECORDED} only if its job is leased and the token reported is one of its live attempts
 *       (the store's compare-and-set, {@link StoreTransaction#recordIfLive}); recording it ends every other
 *       live attempt of the job ({@value #ABANDONED_ENDING} in the history, named in {@link
 *       StoreBatchResult#abandoned()} so their holders are told to abandon). It is {@link
 *       RecordStatus#DUPLICATE} if the job is done under that token (the accepted attempt's resend); anything
 *       else, including a job that does not exist and an abandoned attempt's result, is {@link
 *       RecordStatus#FENCED}. Only RECORDED advances a run's ended count, so a job is counted once however many
 *       of its attempts finish. With one live attempt this is the rule of the job's latest token.
 *   <li><b>Backup attempts.</b> A backup is issued only for a leased job with fewer than {@value
 *       #MAX_BACKUPS_PER_JOB} live backups, to a worker that holds none of its live attempts; it gets a token
 *       above every token issued for the job and counts as an attempt. An attempt that ends retryably (lost,
 *       expired, released, orphaned) while another attempt of its job is live ends alone ({@value
 *       #DROPPED_ENDING} in the history, {@link StoreBatch.ReleaseStatus#DROPPED}): the job stays leased
 *       under the others, is not redelivered and not judged by the redelivery policy; only the end of its
 *       last live attempt puts it back or fails it.
 *   <li><b>The response journal.</b> A journal entry is kept only if its job is leased under the very
 *       token reported ({@link JournalEntry.Status#STORED}), else it is {@link JournalEntry.Status#FENCED}
 *       and nothing is kept: a stale holder's response is refused like its result. A second response for
 *       the same run, case and request digest changes nothing ({@link JournalEntry.Status#ALREADY_STORED}):
 *       the first stays. Journal entries come first in the batch, so that a worker's entry and the result
 *       it sends after it are judged in that order. Every lease carries its case's journalled responses
 *       (up to {@link JournalEntry#MAX_ASSIGNMENT_JOURNAL_BYTES}), so every later attempt of the case, on
 *       any worker and after any restart, finds them without asking.
 *   <li><b>Releases</b> apply only while the job is leased under their token (else STALE, nothing
 *       changes); whether the job goes back to the queue or ends failed is the batch's {@link
 *       RedeliveryPolicy}'s judgement with the job's stored history.
 *   <li><b>Fair share.</b> Each lease request's slots are divided among the batch's runs that have
 *       leasable jobs, max-min fair: slot by slot, to the run with the fewest jobs leased at that moment
 *       (ties to the earlier run in the batch's order: the scheduler's lease order, which puts the run leased
 *       from least recently first), so a run of a million cases cannot starve a run of
 *       ten submitted after it: the small run's jobs go out in the first request after its activation.
 *       Within a run, dataset order. A run that yields fewer jobs than its share leaves the rest to the
 *       others. With one run this is plain dataset order.
 *   <li><b>Fleet-wide limits.</b> A run with a {@link StoreBatch.LeaseLimit} gets no lease that would put
 *       more than {@code maxLeased} of its jobs under lease at once (every holder's, counted in this
 *       transaction) or more than {@code maxNew} new ones in this batch; its share goes to the other runs.
 *       Such a run does not count as having jobs leasable now ({@link StoreBatchResult#pendingLeft()}).
 *   <li><b>Retries elsewhere.</b> A retried job goes to another worker than its last attempt's when one
 *       asks for work in the same batch; only a worker that still has room after every request was served
 *       takes its own retries back.
 *   <li><b>Cancel</b> ({@link #cancelRun}): a running run's pending and leased jobs all end {@code
 *       cancelled} (a leased one's attempt ends {@value #CANCELLED_ENDING} in the history), its counters
 *       count them, and the run is {@code cancelled}; its holders are named so they can be told to abandon,
 *       and their late results are fenced (the job is no longer leased). Cancelling a cancelled run changes
 *       nothing; a finished run is refused.
 *   <li><b>Rescore</b> ({@link #rescore}): an ended run's recorded outcomes judged again with new scorers,
 *       a page of cases per transaction; each changed outcome replaces the old one and the counters move
 *       from the old to the new in the same transaction, so they always equal what the jobs say.
 *   <li><b>Orphans and expiry.</b> A lease from before this coordinator that nobody claimed ends as
 *       {@code COORDINATOR_RESTARTED}; a lease past its expiry ends as {@code LEASE_EXPIRED}. Both go
 *       through the release path (policy, history, counters), with nobody to tell.
 *   <li><b>Every ended attempt</b> gets one history row: when its lease began and ended (wall clock), how
 *       it ended, and its durations (monotonic clocks; the wall-clock difference, never negative, only when
 *       nobody measured it).
 * </ul>
 *
 * <p>Stateless; thread-safe.
 */
public final class BatchRules {
  private BatchRules() {}

  /**
   * The most backup attempts one job may have live at once. One, as Hadoop and LATE copy a task: a second
   * copy of a straggler rarely beats the first copy and costs another slot.
   */
  public static final int MAX_BACKUPS_PER_JOB = 1;

  /** How an attempt ended by another attempt's recorded outcome ends in the attempt history. */
  public static final String ABANDONED_ENDING = "abandoned";

  /**
   * How an attempt that ended retryably while another attempt of its job was live ends in the attempt
   * history (its job went on; the detail says why it ended).
   */
  public static final String DROPPED_ENDING = "dropped";

  /** How a lease ended by its run's cancel ends in the attempt history. */
  public static final String CANCELLED_ENDING = "cancelled";

  /** The detail of an orphaned lease's ending. */
  static final String ORPHAN_DETAIL = "the coordinator restarted while the attempt was leased, and no worker claimed it";

  /**
   * Applies a batch inside the caller's open transaction.
   *
   * @return what each request did
   * @throws StoreException (or any runtime exception from {@code tx}) if a primitive fails or I2 would
   *     break; the caller must roll the transaction back
   */
  public static StoreBatchResult apply(StoreBatch batch, StoreTransaction tx) {
    Applier a = new Applier(batch.nowMillis(), batch.redelivery(), tx);
    a.leaseLimits.putAll(batch.leaseLimits());

    List<JournalEntry.Status> journalStatuses = new ArrayList<>(batch.journal().size());
    for (JournalEntry e : batch.journal()) {
      journalStatuses.add(a.journal(e));
    }
    List<RecordStatus> recordStatuses = new ArrayList<>(batch.records().size());
    // The store's compare-and-sets for the whole batch at once (in as few statements as it can), then each
    // request judged in order by what its own did.
    List<StoreTransaction.RecordedAttempt> recorded = tx.recordAllIfLive(batch.records());
    for (int i = 0; i < batch.records().size(); i++) {
      recordStatuses.add(a.record(batch.records().get(i), recorded.get(i)));
    }
    List<ReleaseStatus> releaseStatuses = new ArrayList<>(batch.releases().size());
    for (ReleaseRequest r : batch.releases()) {
      releaseStatuses.add(a.release(r));
    }
    List<CancelResult> cancels = new ArrayList<>(batch.cancels().size());
    for (long runId : batch.cancels()) {
      cancels.add(a.cancel(runId));
    }
    batch.pauses().forEach(tx::setPause);
    List<List<Assignment>> leases = a.leases(batch.leases(), batch.runIds());
    List<java.util.Optional<Assignment>> backups = new ArrayList<>(batch.backups().size());
    for (StoreBatch.BackupRequest b : batch.backups()) {
      backups.add(a.backup(b));
    }
    List<RenewResult> renewals = new ArrayList<>(batch.renewals().size());
    for (RenewRequest r : batch.renewals()) {
      renewals.add(tx.renew(r));
    }
    List<ExpiredLease> ended = new ArrayList<>();
    if (batch.orphans() != null) {
      a.releaseOrphans(batch.orphans(), batch.runIds(), ended);
    }
    if (batch.sweepExpiredLeases()) {
      a.sweepExpired(batch.runIds(), ended);
    }
    Map<Long, RunCounters> counters = a.writeCounters();

    long nextNotBefore = Long.MAX_VALUE;
    boolean pendingLeft = false;
    for (long runId : batch.runIds()) {
      StoreTransaction.PendingSummary p = tx.pending(runId, batch.nowMillis());
      nextNotBefore = Math.min(nextNotBefore, p.nextNotBeforeMillis());
      // A run at its limit has nothing leasable now as far as the caller is concerned: its governor says
      // when that changes, so the caller does not ask again every step.
      pendingLeft |= p.leasableNow() && a.allowance(runId) > 0;
    }
    return new StoreBatchResult(recordStatuses, releaseStatuses, leases, counters, nextNotBefore, pendingLeft,
        renewals, ended, cancels, journalStatuses, backups, a.abandoned);
  }

  /**
   * Cancels one run inside the caller's open transaction, by the rule in the class doc: for a run no
   * scheduler serves (a coordinator applies its cancels in its batches, which call the same rule).
   *
   * @return what the cancel did
   */
  public static CancelResult cancelRun(long runId, long nowMillis, StoreTransaction tx) {
    Applier a = new Applier(nowMillis, null, tx);
    CancelResult result = a.cancel(runId);
    a.writeCounters();
    return result;
  }

  /**
   * Runs an ended run's errored cases again, inside the caller's open transaction ({@code tally
   * retry-errors}): a finished run's jobs that ended {@code error} (recorded with that verdict, or out of
   * attempts) go back to the queue with fresh attempts ({@link StoreTransaction#requeueErrors}), the run's
   * counters give back what those jobs counted (their errors, their scores), and the run is running again.
   * When a new outcome is recorded it is counted as any outcome is, so each case is counted once; a late
   * result of an earlier attempt is fenced by its older token. A running run (its own attempts still
   * retry), a cancelled one and one without errors are left as they are.
   *
   * @return what was put back, or why nothing was
   */
  /**
   * Sets some of a run's options inside the caller's open transaction ({@link Store#putRunOptions}).
   *
   * @return false if there is no such run
   */
  public static boolean unpause(long runId, StoreTransaction tx) {
    if (tx.runState(runId) == null) {
      return false;
    }
    tx.setPause(runId, null);
    return true;
  }

  /**
   * Sets some of a run's options inside the caller's open transaction ({@link Store#putRunOptions}).
   *
   * @return false if there is no such run
   */
  public static boolean putRunOptions(long runId, Map<String, String> options, StoreTransaction tx) {
    if (tx.runState(runId) == null) {
      return false;
    }
    options.forEach((key, value) -> tx.setEvaluatorOption(runId, key, value));
    return true;
  }

  public static RetryResult retryErrors(long runId, long nowMillis, StoreTransaction tx) {
    RunState state = tx.runState(runId);
    if (state == null) {
      return new RetryResult(RetryResult.Status.UNKNOWN_RUN, 0, 0);
    }
    if (state == RunState.RUNNING) {
      return new RetryResult(RetryResult.Status.NOT_ENDED, 0, 0);
    }
    if (state == RunState.CANCELLED) {
      return new RetryResult(RetryResult.Status.CANCELLED, 0, 0);
    }
    RequeuedErrors r = tx.requeueErrors(runId);
    if (r.recordedErrors() + r.outOfAttempts() == 0) {
      return new RetryResult(RetryResult.Status.NOTHING_TO_RETRY, 0, 0);
    }
    tx.reopenRunRow(runId);
    CounterDelta d = new CounterDelta();
    d.errored = -r.recordedErrors();
    d.jobsFailed = -r.outOfAttempts();
    d.scored = -r.scored();
    d.scoreSum = -r.scoreSum();
    d.scoreSumOfSquares = -r.scoreSumOfSquares();
    tx.addCounters(runId, d, nowMillis);
    return new RetryResult(RetryResult.Status.RETRIED, r.recordedErrors(), r.outOfAttempts());
  }

  /**
   * Done cases one page of {@link #rescore} reads and judges again in its transaction. A page holds the
   * store's one writer while the built-in scorers run over it (microseconds a case; a runaway regex is cut
   * by its read budget), so 256 cases keep a server's scheduler commits waiting milliseconds, not seconds,
   * and bound the outcomes in memory (each at most its tails and answer) to a few MiB; a million-case run is
   * about 4,000 pages.
   */
  public static final int RESCORE_PAGE_CASES = 256;

  /**
   * Judges one page of an ended run's recorded outcomes again with new scorers, inside the caller's open
   * transaction ({@code tally rescore}; {@link Rescoring} walks the pages): no evaluator is called.
   *
   * <ul>
   *   <li>A run that does not exist, has not ended (it is running; its outcomes are still being recorded)
   *       or has a job leased is refused, changing nothing. A cancelled run's recorded cases are judged like a
   *       finished run's.
   *   <li>The first page ({@code afterPosition < 0}) records the judge's scorers as the run's ({@link
   *       dev.tally.core.score.Scorers#OPTION} of its evaluator), so its spec, reports and any later attempt
   *       (a {@code retry-errors}) use them. A later page finds them still in force or is refused as {@link
   *       RescorePage.Status#SUPERSEDED}: a rescore begun since judges every case itself.
   *   <li>Each done case after {@code afterPosition}, in dataset order, up to {@code maxCases}, is judged
   *       again from its stored outcome ({@link dev.tally.core.score.Judge#rejudge}: an evaluator's own
   *       error keeps its outcome); an outcome that changes is written over the old one (its worker, attempts
   *       and token stay), and the run's counters give back what the old outcome counted (its verdict, its
   *       score's moments) and count the new one. Failed and cancelled jobs have no outcome and are left.
   * </ul>
   *
   * <p>Judging is deterministic, so a page applied twice changes nothing the second time: a rescore stopped
   * between pages (a crash) is finished by running it again.
   *
   * @param afterPosition the position the page starts after; negative for the first page
   * @param maxCases the most cases to read, at least 1
   * @return what the page did, and where the next starts
   * @throws IllegalArgumentException if {@code maxCases} is below 1
   */
  public static RescorePage rescore(long runId, dev.tally.core.score.Judge judge, int afterPosition, int maxCases,
      long nowMillis, StoreTransaction tx) {
    if (maxCases < 1) {
      throw new IllegalArgumentException("maxCases must be at least 1, got " + maxCases);
    }
    RunState state = tx.runState(runId);
    if (state == null) {
      return RescorePage.refused(RescorePage.Status.UNKNOWN_RUN, afterPosition);
    }
    if (state == RunState.RUNNING || tx.leasedCount(runId) > 0) {
      return RescorePage.refused(RescorePage.Status.NOT_ENDED, afterPosition);
    }
    String scorers = judge.optionValue();
    if (afterPosition < 0) {
      tx.setEvaluatorOption(runId, dev.tally.core.score.Scorers.OPTION, scorers);
    } else if (!scorers.equals(tx.evaluatorOption(runId, dev.tally.core.score.Scorers.OPTION))) {
      return RescorePage.refused(RescorePage.Status.SUPERSEDED, afterPosition);
    }
    List<RecordedCase> page = tx.recordedCases(runId, afterPosition, maxCases);
    CounterDelta d = new CounterDelta();
    int rejudged = 0;
    int changed = 0;
    int verdictsChanged = 0;
    for (RecordedCase c : page) {
      java.util.Optional<dev.tally.core.Outcome> judged = judge.rejudge(c.outcome(), c.caseJson());
      if (judged.isEmpty()) {
        continue;
      }
      rejudged++;
      if (judged.get().equals(c.outcome())) {
        continue;
      }
      changed++;
      if (judged.get().verdict() != c.outcome().verdict()) {
        verdictsChanged++;
      }
      tx.replaceOutcome(c.jobId(), judged.get());
      d.unrecorded(c.outcome());
      d.recorded(judged.get());
    }
    if (!d.isZero()) {
      tx.addCounters(runId, d, nowMillis);
    }
    int last = page.isEmpty() ? afterPosition : page.get(page.size() - 1).position();
    return new RescorePage(RescorePage.Status.RESCORED, last, page.size(), rejudged, changed, verdictsChanged,
        page.size() == maxCases);
  }

  /**
   * Ends every lease of one run as {@code COORDINATOR_RESTARTED}, through the release path, inside the
   * caller's open transaction: for a coordinator that knows no holder of them can come back.
   *
   * @return how many leases were ended
   */
  public static int releaseAllLeases(long runId, long nowMillis, RedeliveryPolicy redelivery, StoreTransaction tx) {
    Applier a = new Applier(nowMillis, redelivery, tx);
    List<ExpiredLease> ended = new ArrayList<>();
    a.releaseOrphans(new OrphanRelease(Long.MAX_VALUE, java.util.Set.of()), List.of(runId), ended);
    a.writeCounters();
    return ended.size();
  }

  /** The fencing token of a job's first lease: tokens start at 0 and every lease adds 1. */
  static final long FIRST_TOKEN = 1;

  /** One application: the batch's time, its rules, and the counter deltas it gathers. */
  private static final class Applier {
    final long now;
    final RedeliveryPolicy redelivery;
    final StoreTransaction tx;
    final Map<Long, CounterDelta> touched = new LinkedHashMap<>();
    final Map<Long, AttemptLimits> limits = new HashMap<>();
    /** Leased jobs per run, read when fair share first needs them and kept up to date by the leases. */
    final Map<Long, Integer> leasedCounts = new HashMap<>();
    /** The batch's fleet-wide limits per run ({@link StoreBatch#leaseLimits()}). */
    final Map<Long, StoreBatch.LeaseLimit> leaseLimits = new HashMap<>();
    /** New leases per limited run in this batch. */
    final Map<Long, Integer> newLeases = new HashMap<>();
    /** The live attempts this batch's records ended. */
    final List<LiveLease> abandoned = new ArrayList<>();

    /**
     * How many more of the run's jobs this batch may lease: its limit's room under {@code maxLeased}
     * (counting every leased job of the run, this coordinator's or not) and under {@code maxNew}; unlimited
     * for a run without a limit.
     */
    int allowance(long runId) {
      StoreBatch.LeaseLimit limit = leaseLimits.get(runId);
      if (limit == null) {
        return Integer.MAX_VALUE;
      }
      int room = limit.maxLeased() - leasedCount(runId);
      int budget = limit.maxNew() - newLeases.getOrDefault(runId, 0);
      return Math.max(0, Math.min(room, budget));
    }

    /** Notes {@code n} new leases of the run. */
    void leasedMore(long runId, int n) {
      if (leaseLimits.containsKey(runId)) {
        leasedCounts.put(runId, leasedCount(runId) + n); // its limit needs the count: read it if not yet
        newLeases.merge(runId, n, Integer::sum);
      } else {
        leasedCounts.computeIfPresent(runId, (r, c) -> c + n); // counted only if fair share read it
      }
    }

    Applier(long now, RedeliveryPolicy redelivery, StoreTransaction tx) {
      this.now = now;
      this.redelivery = redelivery;
      this.tx = tx;
    }

    CounterDelta delta(long runId) {
      return touched.computeIfAbsent(runId, k -> new CounterDelta());
    }

    JournalEntry.Status journal(JournalEntry e) {
      JobRecord j = tx.job(e.jobId());
      if (j == null || j.state() != JobState.LEASED || liveAttempt(j, e.token()) == null) {
        return JournalEntry.Status.FENCED;
      }
      if (!tx.insertResponse(e.jobId(), e.requestDigest(), e.response(), now)) {
        return JournalEntry.Status.ALREADY_STORED; // a resend of a response already counted
      }
      delta(j.runId()).used(e.usage());
      return JournalEntry.Status.STORED;
    }

    /** Each assignment with its case's journalled responses. */
    List<Assignment> withJournals(List<Assignment> leased) {
      List<Assignment> out = new ArrayList<>(leased.size());
      for (Assignment a : leased) {
        // A job's first lease (token 1) cannot find a response: an entry is stored only under the lease that
        // made it. Most leases are first leases, so the dispatch path skips the read for them.
        if (a.token() == FIRST_TOKEN) {
          out.add(a);
          continue;
        }
        Map<String, String> journal = tx.responses(a.runId(), a.caseId(), JournalEntry.MAX_ASSIGNMENT_JOURNAL_BYTES);
        out.add(journal.isEmpty() ? a : a.withJournal(journal));
      }
      return out;
    }

    /** The live attempt of a leased job under {@code token} (its own lease or a backup's), or null. */
    LiveLease liveAttempt(JobRecord j, long token) {
      if (token == j.token()) {
        return j.lease();
      }
      if (j.backups() > 0) {
        for (LiveLease b : tx.backups(j.jobId())) {
          if (b.token() == token) {
            return b;
          }
        }
      }
      return null;
    }

    /** Judges one record request by what the store's compare-and-set for it did ({@code rec}, null if nothing). */
    RecordStatus record(RecordRequest r, StoreTransaction.RecordedAttempt rec) {
      if (rec != null) {
        JobRecord leased = rec.job();
        delta(leased.runId()).recorded(r.outcome());
        tx.addAttempt(attempt(leased, r.token(), r.worker(), "recorded", "", r.timing()));
        for (LiveLease other : rec.abandoned()) {
          tx.addAttempt(attempt(other, ABANDONED_ENDING, "attempt " + r.token() + "'s outcome was recorded first",
              AttemptTiming.NONE));
          abandoned.add(other);
        }
        return RecordStatus.RECORDED;
      }
      JobRecord j = tx.job(r.jobId());
      if (j == null) {
        return RecordStatus.FENCED; // no such job: charged to no run
      }
      if (j.state() == JobState.DONE && j.token() == r.token()) {
        delta(j.runId()).duplicates++;
        tx.noteLateResult(r.jobId(), r.token(), true);
        return RecordStatus.DUPLICATE;
      }
      delta(j.runId()).fenced++;
      tx.noteLateResult(r.jobId(), r.token(), false);
      return RecordStatus.FENCED;
    }

    ReleaseStatus release(ReleaseRequest r) {
      JobRecord j = tx.job(r.jobId());
      if (j == null) {
        return ReleaseStatus.STALE;
      }
      delta(j.runId()); // its counters are reported either way
      if (j.state() != JobState.LEASED) {
        return ReleaseStatus.STALE;
      }
      return endAttempt(j, r.token(), r.failure(), r.notBeforeMillis(), r.where(), r.timing());
    }

    /**
     * Ends the live attempt {@code token} of the leased job {@code j} retryably: alone ({@link
     * ReleaseStatus#DROPPED}) while another attempt of the job is live, else through {@link #end}; {@link
     * ReleaseStatus#STALE} if the token is not a live attempt.
     */
    ReleaseStatus endAttempt(JobRecord j, long token, InfraFailure failure, long notBeforeMillis, CaseState where,
        AttemptTiming timing) {
      if (j.backups() == 0) {
        return token == j.token() ? end(j, failure, notBeforeMillis, where, timing) : ReleaseStatus.STALE;
      }
      List<LiveLease> backups = tx.backups(j.jobId());
      LiveLease ending = null;
      if (token == j.token()) {
        ending = j.lease();
        tx.promoteBackup(j.jobId(), backups.get(0).token());
      } else {
        for (LiveLease b : backups) {
          if (b.token() == token) {
            ending = b;
            tx.endBackup(j.jobId(), token);
          }
        }
        if (ending == null) {
          return ReleaseStatus.STALE;
        }
      }
      delta(j.runId());
      tx.addAttempt(attempt(ending, DROPPED_ENDING, RedeliveryPolicy.endingName(failure.kind()) + ": " + failure.detail()
          + "; the job goes on under another attempt", timing));
      return ReleaseStatus.DROPPED;
    }

    /**
     * Issues a backup attempt if the job is leased, below {@link #MAX_BACKUPS_PER_JOB} backups, and the
     * worker holds none of its live attempts; the assignment carries the case's journalled responses.
     */
    java.util.Optional<Assignment> backup(StoreBatch.BackupRequest b) {
      JobRecord j = tx.job(b.jobId());
      if (j == null || j.state() != JobState.LEASED || j.backups() >= MAX_BACKUPS_PER_JOB
          || b.worker().equals(j.owner())) {
        return java.util.Optional.empty();
      }
      if (j.backups() > 0) {
        for (LiveLease other : tx.backups(j.jobId())) {
          if (b.worker().equals(other.owner())) {
            return java.util.Optional.empty();
          }
        }
      }
      Assignment a = tx.leaseBackup(j.jobId(), b.worker(), now, b.leaseExpiryMillis());
      delta(j.runId()).backups++;
      return java.util.Optional.of(withJournals(List.of(a)).get(0));
    }

    /** Ends the current lease of {@code j} retryably, as the policy judges. */
    ReleaseStatus end(JobRecord j, InfraFailure failure, long notBeforeMillis, CaseState where, AttemptTiming timing) {
      AttemptLimits l = limits.computeIfAbsent(j.runId(), tx::limits);
      Judgement judgement = redelivery.judge(j.history(), failure, where, l);
      CounterDelta d = delta(j.runId());
      if (judgement.ending().terminal()) {
        tx.fail(j.jobId(), judgement.failureReason(), judgement.history());
        d.jobsFailed++;
      } else {
        tx.requeue(j.jobId(), notBeforeMillis, judgement.history());
        d.redeliveries++;
      }
      tx.addAttempt(attempt(j, j.token(), j.owner(), RedeliveryPolicy.endingName(failure.kind()), failure.detail(), timing));
      return judgement.ending().terminal() ? ReleaseStatus.FAILED : ReleaseStatus.RELEASED;
    }

    CancelResult cancel(long runId) {
      RunState state = tx.runState(runId);
      if (state == null) {
        return CancelResult.unchanged(runId, CancelResult.Status.NO_SUCH_RUN);
      }
      if (state != RunState.RUNNING) {
        return CancelResult.unchanged(runId,
            state == RunState.CANCELLED ? CancelResult.Status.ALREADY_CANCELLED : CancelResult.Status.FINISHED);
      }
      List<CancelResult.CancelledLease> leases = new ArrayList<>();
      List<JobRecord> leasedJobs = tx.leasedJobs(runId);
      for (JobRecord j : leasedJobs) {
        List<LiveLease> backups = j.backups() > 0 ? tx.backups(j.jobId()) : List.of();
        tx.cancelLeased(j.jobId());
        tx.addAttempt(attempt(j, j.token(), j.owner(), CANCELLED_ENDING, "the run was cancelled", AttemptTiming.NONE));
        leases.add(new CancelResult.CancelledLease(j.jobId(), j.token(), j.owner()));
        for (LiveLease b : backups) {
          tx.addAttempt(attempt(b, CANCELLED_ENDING, "the run was cancelled", AttemptTiming.NONE));
          leases.add(new CancelResult.CancelledLease(b.jobId(), b.token(), b.owner()));
        }
      }
      long pending = tx.cancelPending(runId);
      tx.cancelRunRow(runId, now);
      delta(runId).cancelled += pending + leasedJobs.size(); // jobs, not attempts: a backup is the same job
      leasedCounts.remove(runId);
      return new CancelResult(runId, CancelResult.Status.CANCELLED, pending, leases);
    }

    /**
     * The leases of every request: first each worker leases what did not last run on it (a retry goes to
     * another worker when one has room), then whoever still has room takes the rest, its own retries
     * included. In the second pass eligibility depends only on the batch's time, so once one request
     * comes up short the rest would find nothing and are not asked.
     */
    List<List<Assignment>> leases(List<LeaseRequest> requests, List<Long> runIds) {
      List<List<Assignment>> out = new ArrayList<>(requests.size());
      for (LeaseRequest l : requests) {
        out.add(lease(l, l.maxJobs(), runIds, true));
      }
      boolean exhausted = false;
      for (int i = 0; i < requests.size() && !exhausted; i++) {
        LeaseRequest l = requests.get(i);
        int wanted = l.maxJobs() - out.get(i).size();
        if (wanted > 0) {
          List<Assignment> more = lease(l, wanted, runIds, false);
          out.get(i).addAll(more);
          exhausted = more.size() < wanted;
        }
      }
      return out;
    }

    List<Assignment> lease(LeaseRequest l, int maxJobs, List<Long> runIds, boolean avoidOwnRetries) {
      if (runIds.size() == 1) {
        long runId = runIds.get(0);
        int allowed = Math.min(maxJobs, allowance(runId));
        if (allowed == 0) {
          return new ArrayList<>();
        }
        List<Assignment> got = withJournals(
            tx.lease(runId, l.worker(), allowed, now, l.leaseExpiryMillis(), avoidOwnRetries));
        if (!got.isEmpty()) {
          delta(runId);
          leasedMore(runId, got.size());
        }
        return new ArrayList<>(got); // the caller adds the second pass's leases to it
      }
      // Max-min fair: water-fill the slots over the runs by their leased counts, lease each run's share in
      // one call, and hand what a run could not use to the others until the slots or the runs run out.
      List<Assignment> out = new ArrayList<>();
      List<Long> candidates = new ArrayList<>(runIds);
      candidates.removeIf(runId -> allowance(runId) == 0);
      int remaining = maxJobs;
      while (remaining > 0 && !candidates.isEmpty()) {
        int[] shares = shares(candidates, remaining);
        List<Long> spent = new ArrayList<>();
        for (int i = 0; i < candidates.size(); i++) {
          long runId = candidates.get(i);
          int share = Math.min(shares[i], allowance(runId));
          if (share == 0) {
            if (allowance(runId) == 0) {
              spent.add(runId); // at its fleet-wide limit
            }
            continue;
          }
          List<Assignment> got = withJournals(
              tx.lease(runId, l.worker(), share, now, l.leaseExpiryMillis(), avoidOwnRetries));
          if (!got.isEmpty()) {
            delta(runId);
            leasedMore(runId, got.size());
            out.addAll(got);
            remaining -= got.size();
          }
          if (got.size() < share || allowance(runId) == 0) {
            spent.add(runId); // nothing more leasable there for this request
          }
        }
        candidates.removeAll(spent);
      }
      // Grouped by run, in the batch's run order, each run's in dataset order: the order a worker runs them.
      Map<Long, Integer> order = new HashMap<>();
      for (int i = 0; i < runIds.size(); i++) {
        order.putIfAbsent(runIds.get(i), i);
      }
      out.sort(java.util.Comparator.comparingInt(a -> order.get(a.runId())));
      return out;
    }

    /** The run's leased jobs, as of this point of the batch. */
    int leasedCount(long runId) {
      return leasedCounts.computeIfAbsent(runId, tx::leasedCount);
    }

    /**
     * How many of {@code slots} each candidate gets, max-min fair: slot by slot to the run with the fewest
     * leased (counting the slots given so far), ties to the earlier run.
     */
    int[] shares(List<Long> candidates, int slots) {
      int n = candidates.size();
      long[] level = new long[n];
      for (int i = 0; i < n; i++) {
        level[i] = leasedCount(candidates.get(i));
      }
      int[] shares = new int[n];
      for (int s = 0; s < slots; s++) {
        int min = 0;
        for (int i = 1; i < n; i++) {
          if (level[i] < level[min]) {
            min = i;
          }
        }
        shares[min]++;
        level[min]++;
      }
      return shares;
    }

    void releaseOrphans(OrphanRelease orphans, List<Long> runIds, List<ExpiredLease> ended) {
      InfraFailure why = new InfraFailure(InfraFailure.Kind.COORDINATOR_RESTARTED, ORPHAN_DETAIL);
      for (long runId : runIds) {
        // Backups first, so that a job's own lease ending after them finds only the backups still live.
        for (LiveLease b : tx.runBackups(runId)) {
          if (b.leasedAtMillis() < orphans.leasedBeforeMillis() && !orphans.claimedJobIds().contains(b.jobId())) {
            endSwept(tx.job(b.jobId()), b.token(), why, ended);
          }
        }
        for (JobRecord j : tx.leasesIssuedBefore(runId, orphans.leasedBeforeMillis())) {
          if (!orphans.claimedJobIds().contains(j.jobId())) {
            endSwept(j, j.token(), why, ended);
          }
        }
      }
    }

    void sweepExpired(List<Long> runIds, List<ExpiredLease> ended) {
      for (long runId : runIds) {
        for (LiveLease b : tx.runBackups(runId)) {
          if (b.leaseExpiryMillis() < now) {
            endSwept(tx.job(b.jobId()), b.token(), expired(b.leaseExpiryMillis()), ended);
          }
        }
        for (JobRecord j : tx.expiredLeases(runId, now)) {
          endSwept(j, j.token(), expired(j.leaseExpiryMillis()), ended);
        }
      }
    }

    InfraFailure expired(long expiryMillis) {
      return new InfraFailure(InfraFailure.Kind.LEASE_EXPIRED,
          "lease expired " + (now - expiryMillis) + " ms ago without being renewed");
    }

    /** Ends a live attempt nobody reported (swept or orphaned), noting it in {@code ended}. */
    void endSwept(JobRecord j, long token, InfraFailure why, List<ExpiredLease> ended) {
      ReleaseStatus s = endAttempt(j, token, why, now, CaseState.UNKNOWN, AttemptTiming.NONE);
      if (s != ReleaseStatus.STALE) {
        ended.add(new ExpiredLease(j.jobId(), token, j.runId(), why.kind(), s));
      }
    }

    Map<Long, RunCounters> writeCounters() {
      Map<Long, RunCounters> counters = new HashMap<>();
      for (Map.Entry<Long, CounterDelta> e : touched.entrySet()) {
        counters.put(e.getKey(), e.getValue().isZero() ? tx.counters(e.getKey())
            : tx.addCounters(e.getKey(), e.getValue(), now));
      }
      return counters;
    }

    /** The history row of a live attempt that ends now. */
    AttemptView attempt(LiveLease lease, String ending, String detail, AttemptTiming t) {
      JobRecord asJob = new JobRecord(lease.jobId(), lease.runId(), JobState.LEASED, lease.token(), lease.owner(),
          lease.leasedAtMillis(), lease.leaseExpiryMillis(), null);
      return attempt(asJob, lease.token(), lease.owner(), ending, detail, t);
    }

    /** The history row of an attempt that ends now; its elapsed time falls back to the wall clock, never below 0. */
    AttemptView attempt(JobRecord lease, long token, String worker, String ending, String detail, AttemptTiming t) {
      long elapsed = t.elapsedMillis() != AttemptTiming.UNKNOWN ? t.elapsedMillis()
          : Math.max(0, now - lease.leasedAtMillis());
      return new AttemptView(lease.jobId(), token, worker, lease.leasedAtMillis(), now, ending, detail,
          new AttemptTiming(elapsed, t.queuedMillis(), t.runMillis()));
    }
  }
}

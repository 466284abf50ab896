package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.CaseState;
import dev.tally.core.cases.CaseLines;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.score.Judge;
import dev.tally.core.score.Scorers;
import dev.tally.core.store.RescorePage;
import dev.tally.core.store.RescoreResult;
import dev.tally.core.store.Rescoring;
import dev.tally.core.store.BatchRules;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.CaseQuery;
import dev.tally.core.store.CaseView;
import dev.tally.core.store.CreatedRun;
import dev.tally.core.store.IdempotencyRules;
import dev.tally.core.store.KeyClaim;
import dev.tally.core.store.KeyCompletion;
import dev.tally.core.store.KeyReservationLostException;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.ProgressBucket;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.RunState;
import dev.tally.core.store.StoredResponse;
import dev.tally.core.Outcome;
import dev.tally.core.RecordStatus;
import dev.tally.core.Verdict;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RetryResult;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatch.ExpiredLease;
import dev.tally.core.store.WorkerStatus;
import dev.tally.core.store.StoreBatch.ReleaseStatus;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@link Store} contract: fencing, idempotent recording, atomic batches, leases, releases and run
 * completion. Every store implementation runs this whole suite by extending it.
 *
 * <p>Each test gets a fresh directory; {@link #newStore(Path)} called twice with the same directory must
 * open the same store (that is how a coordinator restart is simulated).
 */
public abstract class StoreContractTest {

  /** Opens (creating if missing) the store that lives in {@code dir}. */
  protected abstract Store newStore(Path dir);

  /**
   * Arranges for the next lease in the store in {@code dir} to fail inside the store (not in the
   * caller), so a batch can be made to fail halfway. Closing the handle removes the fault. Stores that
   * cannot inject such a fault leave this as is and the test that needs it is skipped.
   */
  protected AutoCloseable failLeasesIn(Path dir) throws Exception {
    Assumptions.abort("this store has no way to inject a failure mid-batch");
    return null;
  }

  protected static final EvaluatorSpec EVALUATOR =
      new EvaluatorSpec("exec", Map.of("cmd", "python3 score.py", "quote", "a \"b\" = c,\nd"), Duration.ofSeconds(30));
  protected static final long T0 = 1_700_000_000_000L;
  private static final long EXPIRY = T0 + 60_000;

  @TempDir Path dir;

  // ------------------------------------------------------------------------------------------------
  // helpers

  /**
   * The runs a test's batches lease from: every run a test creates, since a new store numbers its runs
   * from 1 and no test makes more than a few. Tests of the run filter itself name their runs.
   */
  protected static final List<Long> TEST_RUNS = java.util.stream.LongStream.rangeClosed(1, 32).boxed().toList();

  protected static RunSpec spec(int maxAttempts) {
    return new RunSpec("cases.jsonl", EVALUATOR, maxAttempts);
  }

  protected static List<CaseRecord> cases(int n) {
    return IntStream.range(0, n).mapToObj(i -> new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}")).toList();
  }

  /** An outcome; a pass carries score 1.0 (which the run's score moments count), the others none. */
  protected static Outcome outcome(Verdict v) {
    return new Outcome(v, v == Verdict.PASS ? 1.0 : null, "tail of " + v, 12);
  }

  /** The redelivery rules the contract's batches carry: the defaults (poison after 3, timeouts retried once). */
  protected static final RedeliveryPolicy POLICY = RedeliveryPolicy.defaults();

  protected static StoreBatch batch(long now, List<Long> runs, List<RecordRequest> records, List<ReleaseRequest> releases,
      List<LeaseRequest> leases) {
    return batch(now, runs, records, releases, leases, List.of(), false);
  }

  protected static StoreBatch batch(long now, List<Long> runs, List<RecordRequest> records, List<ReleaseRequest> releases,
      List<LeaseRequest> leases, List<RenewRequest> renewals, boolean sweep) {
    return new StoreBatch(now, runs, POLICY, records, releases, leases, renewals, null, sweep);
  }

  protected static StoreBatch lease(long now, String worker, int max) {
    return batch(now, TEST_RUNS, List.of(), List.of(), List.of(new LeaseRequest(worker, max, now + 60_000)));
  }

  protected static StoreBatch record(long now, RecordRequest... records) {
    return batch(now, TEST_RUNS, List.of(records), List.of(), List.of());
  }

  protected static StoreBatch release(long now, ReleaseRequest... releases) {
    return batch(now, TEST_RUNS, List.of(), List.of(releases), List.of());
  }

  protected static RecordRequest rec(Assignment a, String worker, Verdict v) {
    return new RecordRequest(a.jobId(), a.token(), worker, outcome(v));
  }

  /** The attempt's worker was lost; whether the job ends is the policy's call (its run's attempt limit). */
  protected static ReleaseRequest lost(Assignment a, long notBefore) {
    return new ReleaseRequest(a.jobId(), a.token(), new InfraFailure(InfraFailure.Kind.WORKER_LOST, "connection reset"),
        notBefore);
  }

  /** A release of the attempt with the given failure, while its case was (or was not) running. */
  protected static ReleaseRequest ended(Assignment a, InfraFailure f, long notBefore, boolean running) {
    return new ReleaseRequest(a.jobId(), a.token(), f, notBefore, running ? CaseState.RUNNING : CaseState.QUEUED,
        AttemptTiming.NONE);
  }

  private static RunCounters counters(Store store, long runId) {
    return store.run(runId).orElseThrow().counters();
  }

  private static JobView job(Store store, long runId, long jobId) {
    return store.jobs(runId).stream().filter(j -> j.jobId() == jobId).findFirst().orElseThrow();
  }

  // ------------------------------------------------------------------------------------------------
  // the response journal

  private static final String DIGEST_A = "a".repeat(64);
  private static final String DIGEST_B = "0123456789abcdef".repeat(4);

  protected static StoreBatch journal(long now, dev.tally.core.JournalEntry... entries) {
    return new StoreBatch(now, TEST_RUNS, POLICY, List.of(), List.of(), List.of(), List.of(), null, false, List.of(),
        List.of(entries));
  }

  protected static dev.tally.core.JournalEntry entry(Assignment a, String digest, String response) {
    return new dev.tally.core.JournalEntry(a.jobId(), a.token(), digest, response);
  }

  /** A batch leasing for each worker in turn, with the given run's lease limit. */
  private static StoreBatch limitedLease(long now, long runId, StoreBatch.LeaseLimit limit, int... perWorker) {
    StoreBatch.Builder b = StoreBatch.builder(now, TEST_RUNS, POLICY).limitLeases(runId, limit);
    for (int i = 0; i < perWorker.length; i++) {
      b.lease(new LeaseRequest("w" + (i + 1), perWorker[i], now + 60_000));
    }
    return b.build();
  }

  @Test
  void aRunsLeaseLimitCapsItsLeasedJobsAcrossEveryHolderAndItsNewLeasesPerBatch() {
    try (Store store = newStore(dir)) {
      long limited = store.createRun(spec(3), cases(10));
      long free = store.createRun(spec(3), cases(10));
      // At most 3 of the limited run's jobs leased at once, across three workers asking for 4 each.
      StoreBatchResult r = store.apply(limitedLease(T0, limited, new StoreBatch.LeaseLimit(3, 100), 4, 4, 4));
      long limitedLeased = r.leases().stream().flatMap(List::stream).filter(a -> a.runId() == limited).count();
      long freeLeased = r.leases().stream().flatMap(List::stream).filter(a -> a.runId() == free).count();
      assertThat(limitedLeased).isEqualTo(3);
      assertThat(freeLeased).as("the other run gets the rest").isEqualTo(9);
      // Still 3 leased: nothing more of it, whoever asks, and it does not count as leasable now.
      StoreBatchResult again = store.apply(limitedLease(T0 + 1, limited, new StoreBatch.LeaseLimit(3, 100), 1));
      assertThat(again.leases().get(0)).allSatisfy(a -> assertThat(a.runId()).isEqualTo(free));
      // One recorded: one permit back.
      Assignment first = r.leases().stream().flatMap(List::stream).filter(a -> a.runId() == limited).findFirst().orElseThrow();
      store.apply(record(T0 + 2, rec(first, "w1", Verdict.PASS)));
      StoreBatchResult after = store.apply(limitedLease(T0 + 3, limited, new StoreBatch.LeaseLimit(3, 100), 5));
      assertThat(after.leases().get(0).stream().filter(a -> a.runId() == limited).count()).isEqualTo(1);
      // maxNew: new leases in one batch, whatever the room.
      StoreBatchResult budget = store.apply(limitedLease(T0 + 4, limited, new StoreBatch.LeaseLimit(100, 2), 3, 3));
      assertThat(budget.leases().stream().flatMap(List::stream).filter(a -> a.runId() == limited).count()).isEqualTo(2);
    }
  }

  @Test
  void aRunAtItsLeaseLimitAloneLeavesNothingLeasableNow() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(5));
      StoreBatchResult r = store.apply(StoreBatch.builder(T0, List.of(runId), POLICY)
          .limitLeases(runId, new StoreBatch.LeaseLimit(2, 100)).lease(new LeaseRequest("w1", 4, T0 + 60_000)).build());
      assertThat(r.leases().get(0)).hasSize(2);
      assertThat(r.pendingLeft()).as("its governor says when to ask again, not every step").isFalse();
      StoreBatchResult none = store.apply(StoreBatch.builder(T0 + 1, List.of(runId), POLICY)
          .limitLeases(runId, new StoreBatch.LeaseLimit(2, 0)).lease(new LeaseRequest("w1", 4, T0 + 60_000)).build());
      assertThat(none.leases().get(0)).isEmpty();
    }
  }

  @Test
  void aJournalledResponseReadsBackForItsCaseAndDigestAndSurvivesAReopen() {
    long runId;
    try (Store store = newStore(dir)) {
      runId = store.createRun(spec(3), cases(2));
      List<Assignment> got = store.apply(lease(T0, "w1", 2)).leases().get(0);
      StoreBatchResult r = store.apply(journal(T0 + 1, entry(got.get(0), DIGEST_A, "{\"text\":\"4\"}"),
          entry(got.get(0), DIGEST_B, "second call: é ✓")));
      assertThat(r.journalStatuses()).containsExactly(dev.tally.core.JournalEntry.Status.STORED,
          dev.tally.core.JournalEntry.Status.STORED);
      assertThat(store.journalledResponses(runId, "c0")).containsExactly(
          Map.entry(DIGEST_A, "{\"text\":\"4\"}"), Map.entry(DIGEST_B, "second call: é ✓"));
      assertThat(store.journalledResponses(runId, "c1")).as("another case").isEmpty();
      assertThat(store.journalledResponses(runId + 1, "c0")).as("another run").isEmpty();
    }
    try (Store store = newStore(dir)) {
      assertThat(store.journalledResponses(runId, "c0")).containsOnlyKeys(DIGEST_A, DIGEST_B);
    }
  }

  @Test
  void aSecondResponseForTheSameRequestIsANoOpAndTheFirstStays() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      assertThat(store.apply(journal(T0 + 1, entry(first, DIGEST_A, "first"))).journalStatuses())
          .containsExactly(dev.tally.core.JournalEntry.Status.STORED);
      // The same attempt again (a re-send after a reconnect), then the next attempt after the first was lost.
      assertThat(store.apply(journal(T0 + 2, entry(first, DIGEST_A, "again"))).journalStatuses())
          .containsExactly(dev.tally.core.JournalEntry.Status.ALREADY_STORED);
      store.apply(release(T0 + 3, lost(first, T0 + 3)));
      Assignment second = store.apply(lease(T0 + 4, "w2", 1)).leases().get(0).get(0);
      assertThat(store.apply(journal(T0 + 5, entry(second, DIGEST_A, "paid twice"))).journalStatuses())
          .containsExactly(dev.tally.core.JournalEntry.Status.ALREADY_STORED);
      assertThat(store.journalledResponses(runId, "c0")).containsExactly(Map.entry(DIGEST_A, "first"));
      assertThat(store.run(runId).orElseThrow().counters().ended()).as("journalling ends nothing").isZero();
    }
  }

  @Test
  void aStaleTokensEntryIsRefusedAndNothingIsStored() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(2));
      List<Assignment> got = store.apply(lease(T0, "w1", 2)).leases().get(0);
      Assignment a = got.get(0);
      store.apply(release(T0 + 1, lost(a, T0 + 1)));
      Assignment b = got.get(1);
      store.apply(record(T0 + 2, rec(b, "w1", Verdict.PASS)));
      StoreBatchResult r = store.apply(journal(T0 + 3,
          entry(a, DIGEST_A, "from the released lease"),
          entry(b, DIGEST_A, "after the job was done"),
          new dev.tally.core.JournalEntry(a.jobId(), a.token() + 5, DIGEST_B, "a token never issued"),
          new dev.tally.core.JournalEntry(9_999, 1, DIGEST_A, "no such job")));
      assertThat(r.journalStatuses()).containsOnly(dev.tally.core.JournalEntry.Status.FENCED).hasSize(4);
      assertThat(store.journalledResponses(runId, "c0")).isEmpty();
      assertThat(store.journalledResponses(runId, "c1")).isEmpty();
    }
  }

  @Test
  void everyLaterLeaseOfTheCaseCarriesItsJournalWithinTheAssignmentsBound() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(5), cases(2));
      List<Assignment> got = store.apply(lease(T0, "w1", 2)).leases().get(0);
      assertThat(got).allSatisfy(a -> assertThat(a.journal()).isEmpty());
      Assignment a = got.get(0);
      String big = "x".repeat(dev.tally.core.JournalEntry.MAX_RESPONSE_BYTES - 64);
      String[] digests = {DIGEST_A, DIGEST_B, "c".repeat(64)};
      store.apply(journal(T0 + 1, entry(a, digests[0], big), entry(a, digests[1], big), entry(a, digests[2], "small")));
      store.apply(release(T0 + 2, lost(a, T0 + 2)));
      Assignment again = store.apply(lease(T0 + 3, "w2", 1)).leases().get(0).get(0);
      assertThat(again.caseId()).isEqualTo("c0");
      // Two full-size responses fill the Assign's budget: the third is left out (its call is paid again).
      assertThat(again.journal()).containsOnlyKeys(digests[0], digests[1]);
      assertThat(again.journal().get(digests[0])).isEqualTo(big);
      assertThat(store.journalledResponses(runId, "c0")).containsOnlyKeys(digests);
    }
    // After a restart too: the journal is in the store, not in a coordinator's memory.
    try (Store store = newStore(dir)) {
      store.apply(new StoreBatch(T0 + 100_000, TEST_RUNS, POLICY, List.of(), List.of(), List.of(), List.of(), null,
          true)); // sweeps c1's expired lease
      Assignment c0 = store.apply(lease(T0 + 100_001, "w3", 2)).leases().get(0).stream()
          .filter(x -> x.caseId().equals("c0")).findFirst().orElseThrow();
      assertThat(c0.journal()).containsKey(DIGEST_A);
    }
  }

  @Test
  void aBatchThatFailsStoresNoneOfItsJournalEntries() throws Exception {
    long runId;
    Assignment a;
    try (Store store = newStore(dir)) {
      runId = store.createRun(spec(3), cases(2));
      a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
    }
    try (AutoCloseable fault = failLeasesIn(dir); Store store = newStore(dir)) {
      assertThatThrownBy(() -> store.apply(new StoreBatch(T0 + 1, TEST_RUNS, POLICY, List.of(), List.of(),
          List.of(new LeaseRequest("w2", 1, T0 + 60_000)), List.of(), null, false, List.of(),
          List.of(entry(a, DIGEST_A, "lost with its batch"))))).isInstanceOf(RuntimeException.class);
      assertThat(store.journalledResponses(runId, "c0")).isEmpty();
    }
  }

  // ------------------------------------------------------------------------------------------------
  // runs and leases

  @Test
  void createsRunWhoseJobsArePendingInDatasetOrderAndWhoseSpecReadsBack() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(5));
      RunView run = store.run(runId).orElseThrow();
      assertThat(run.spec()).isEqualTo(spec(3));
      assertThat(run.ended()).isFalse();
      assertThat(run.counters()).isEqualTo(RunCounters.builder(5).build());
      List<JobView> jobs = store.jobs(runId);
      assertThat(jobs).extracting(JobView::position).containsExactly(0, 1, 2, 3, 4);
      assertThat(jobs).extracting(JobView::caseId).containsExactly("c0", "c1", "c2", "c3", "c4");
      assertThat(jobs).allSatisfy(j -> {
        assertThat(j.state()).isEqualTo(JobState.PENDING);
        assertThat(j.token()).isZero();
        assertThat(j.attempts()).isZero();
      });
      assertThat(store.runs()).extracting(RunView::runId).containsExactly(runId);
      assertThat(store.run(runId + 1000)).isEmpty();
      assertThat(store.jobs(runId + 1000)).isEmpty();
    }
    // The spec, options included, survives a reopen (it is not only cached in memory).
    try (Store store = newStore(dir)) {
      assertThat(store.runs()).singleElement().satisfies(r -> assertThat(r.spec()).isEqualTo(spec(3)));
    }
  }

  @Test
  void aRenewedLeaseOutlivesItsFirstExpiryAndAnUnrenewedOneIsSweptBackToPending() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(2));
      List<Assignment> got = store.apply(batch(T0, List.of(runId), List.of(), List.of(),
          List.of(new LeaseRequest("w1", 2, T0 + 1_000)))).leases().get(0);
      Assignment kept = got.get(0);
      Assignment dropped = got.get(1);

      StoreBatchResult renewed = store.apply(batch(T0 + 500, List.of(runId), List.of(), List.of(), List.of(),
          List.of(new RenewRequest(kept.jobId(), kept.token(), T0 + 5_000), new RenewRequest(dropped.jobId(), dropped.token() + 7, T0 + 5_000)), false));
      assertThat(renewed.renewals()).containsExactly(new RenewResult(true, runId, 1), new RenewResult(false, 0, 0));

      StoreBatchResult swept = store.apply(batch(T0 + 2_000, List.of(runId), List.of(), List.of(), List.of(), List.of(), true));
      assertThat(swept.expired()).containsExactly(new ExpiredLease(dropped.jobId(), dropped.token(), runId, InfraFailure.Kind.LEASE_EXPIRED, ReleaseStatus.RELEASED));
      assertThat(swept.counters().get(runId).redeliveries()).isEqualTo(1);
      assertThat(job(store, runId, kept.jobId()).state()).isEqualTo(JobState.LEASED);
      assertThat(job(store, runId, dropped.jobId()).state()).isEqualTo(JobState.PENDING);
      assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsExactly("lease_expired");

      // The late holder of the swept lease is fenced, and cannot renew it either.
      assertThat(store.apply(record(T0 + 2_100, rec(dropped, "w1", Verdict.PASS))).recordStatuses()).containsExactly(RecordStatus.FENCED);
      assertThat(store.apply(batch(T0 + 2_200, List.of(runId), List.of(), List.of(), List.of(),
          List.of(new RenewRequest(dropped.jobId(), dropped.token(), T0 + 9_000)), false)).renewals().get(0).current()).isFalse();

      assertThat(store.apply(batch(T0 + 4_000, List.of(runId), List.of(), List.of(), List.of(), List.of(), true)).expired())
          .as("the renewed lease holds until its new expiry").isEmpty();
      assertThat(store.apply(batch(T0 + 6_000, List.of(runId), List.of(), List.of(), List.of(), List.of(), true)).expired())
          .extracting(ExpiredLease::jobId).containsExactly(kept.jobId());
    }
  }

  @Test
  void anExpiredLeaseOnTheLastAttemptEndsTheJobFailed() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), cases(1));
      Assignment a = store.apply(batch(T0, List.of(runId), List.of(), List.of(),
          List.of(new LeaseRequest("w1", 1, T0 + 1_000)))).leases().get(0).get(0);
      StoreBatchResult swept = store.apply(batch(T0 + 1_001, List.of(runId), List.of(), List.of(), List.of(), List.of(), true));
      assertThat(swept.expired()).containsExactly(new ExpiredLease(a.jobId(), a.token(), runId, InfraFailure.Kind.LEASE_EXPIRED, ReleaseStatus.FAILED));
      assertThat(swept.counters().get(runId).finished()).isTrue();
      assertThat(job(store, runId, a.jobId()).failureReason()).contains("lease_expired");
    }
  }

  @Test
  void releaseLeasesTouchesOnlyItsRun() {
    try (Store store = newStore(dir)) {
      long mine = store.createRun(spec(3), cases(1));
      long other = store.createRun(spec(3), cases(1));
      store.apply(lease(T0, "w1", 2));
      assertThat(store.releaseLeases(mine, T0 + 1, POLICY)).isEqualTo(1);
      assertThat(store.jobs(mine)).allMatch(j -> j.state() == JobState.PENDING);
      assertThat(store.jobs(other)).allMatch(j -> j.state() == JobState.LEASED);
      assertThat(store.run(other).orElseThrow().counters().redeliveries()).isZero();
    }
  }

  @Test
  void aCaseWhoseWorkerDiesWhileRunningItThreeTimesInARowEndsFailedAsPoison() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(10), cases(1));
      InfraFailure died = new InfraFailure(InfraFailure.Kind.WORKER_LOST, "closed by peer");
      long now = T0;
      for (int attempt = 1; attempt <= 4; attempt++) {
        Assignment a = store.apply(lease(now, "w" + attempt, 1)).leases().get(0).get(0);
        // Attempt 2 only sat queued on a worker that died: that neither counts nor breaks the streak.
        boolean running = attempt != 2;
        ReleaseStatus status = store.apply(release(now, ended(a, died, now, running))).releaseStatuses().get(0);
        assertThat(status).as("attempt %d", attempt).isEqualTo(attempt == 4 ? ReleaseStatus.FAILED : ReleaseStatus.RELEASED);
        now++;
      }
      JobView job = store.jobs(runId).get(0);
      assertThat(job.state()).isEqualTo(JobState.FAILED);
      assertThat(job.failureReason()).startsWith("poison: 3 attempts in a row");
      assertThat(store.run(runId).orElseThrow().counters().jobsFailed()).isEqualTo(1);
    }
  }

  @Test
  void anyOtherFailureBreaksAPoisonStreak() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(10), cases(1));
      InfraFailure died = new InfraFailure(InfraFailure.Kind.WORKER_LOST, "closed by peer");
      InfraFailure timeout = new InfraFailure(InfraFailure.Kind.TIMEOUT, "too slow");
      long now = T0;
      for (InfraFailure f : List.of(died, died, timeout, died, died)) {
        Assignment a = store.apply(lease(now, "w", 1)).leases().get(0).get(0);
        boolean running = f == died;
        assertThat(store.apply(release(now, ended(a, f, now, running))).releaseStatuses())
            .containsExactly(ReleaseStatus.RELEASED);
        now++;
      }
      assertThat(store.jobs(runId).get(0).state()).isEqualTo(JobState.PENDING);
    }
  }

  @Test
  void releasesTheLeasesOfAnEarlierCoordinatorThatNobodyClaimedAndKeepsTheRest() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(4));
      List<Assignment> before = store.apply(lease(T0, "old", 3)).leases().get(0);
      Assignment late = store.apply(lease(T0 + 500, "new", 1)).leases().get(0).get(0);
      Assignment claimed = before.get(0);
      StoreBatchResult r = store.apply(new StoreBatch(T0 + 600, TEST_RUNS, POLICY, List.of(), List.of(), List.of(),
          List.of(), new StoreBatch.OrphanRelease(T0 + 500, java.util.Set.of(claimed.jobId())), false));
      assertThat(r.expired()).extracting(ExpiredLease::jobId, ExpiredLease::why, ExpiredLease::status).containsExactly(
          org.assertj.core.groups.Tuple.tuple(before.get(1).jobId(), InfraFailure.Kind.COORDINATOR_RESTARTED, ReleaseStatus.RELEASED),
          org.assertj.core.groups.Tuple.tuple(before.get(2).jobId(), InfraFailure.Kind.COORDINATOR_RESTARTED, ReleaseStatus.RELEASED));
      assertThat(job(store, runId, claimed.jobId()).state()).as("claimed by a returning worker").isEqualTo(JobState.LEASED);
      assertThat(job(store, runId, late.jobId()).state()).as("issued by this coordinator").isEqualTo(JobState.LEASED);
      assertThat(r.counters().get(runId).redeliveries()).isEqualTo(2);
      assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsOnly("coordinator_restarted");
    }
  }

  @Test
  void aJobThatTimesOutMoreThanItsRunAllowsEndsFailedAsTimedOut() {
    try (Store store = newStore(dir)) {
      RunSpec noRetry = new RunSpec("cases.jsonl", EVALUATOR, new RedeliveryPolicy.AttemptLimits(5, 0), "");
      long runId = store.createRun(noRetry, cases(1));
      assertThat(store.run(runId).orElseThrow().spec()).isEqualTo(noRetry);
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      StoreBatchResult r = store.apply(release(T0 + 1, new ReleaseRequest(a.jobId(), a.token(),
          new InfraFailure(InfraFailure.Kind.TIMEOUT, "ran past 30000ms"), T0 + 1)));
      assertThat(r.releaseStatuses()).containsExactly(ReleaseStatus.FAILED);
      assertThat(job(store, runId, a.jobId()).failureReason()).startsWith("timed out 1 time (retried at most 0 times)");
    }
  }

  @Test
  void aHandedBackJobGoesBackToTheQueueWithoutUsingItsAttempt() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), cases(1));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      assertThat(store.apply(release(T0 + 1, new ReleaseRequest(a.jobId(), a.token(),
          new InfraFailure(InfraFailure.Kind.HANDED_BACK, "worker is draining"), T0 + 1))).releaseStatuses())
          .containsExactly(ReleaseStatus.RELEASED);
      assertThat(job(store, runId, a.jobId()).attempts()).isZero();
      Assignment again = store.apply(lease(T0 + 1, "w2", 1)).leases().get(0).get(0);
      assertThat(again.attempt()).isEqualTo(1);
      assertThat(again.token()).isGreaterThan(a.token());
    }
  }

  @Test
  void keepsEachAttemptsDurationsAndFallsBackToTheWallClockNeverBelowZero() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(2));
      List<Assignment> got = store.apply(lease(T0, "w1", 2)).leases().get(0);
      store.apply(record(T0 + 9_000, new RecordRequest(got.get(0).jobId(), got.get(0).token(), "w1", outcome(Verdict.PASS),
          new AttemptTiming(2_500, 400, 2_000))));
      store.apply(release(T0 - 5_000, lost(got.get(1), T0))); // a wall clock stepped back, nothing measured
      assertThat(store.attempts(runId)).extracting(AttemptView::timing).containsExactly(
          new AttemptTiming(2_500, 400, 2_000), new AttemptTiming(0, AttemptTiming.UNKNOWN, AttemptTiming.UNKNOWN));
    }
  }

  @Test
  void theStoreIdIsSetAtCreationKeptAcrossReopeningAndDiffersBetweenStores() throws Exception {
    String id;
    try (Store store = newStore(dir)) {
      id = store.storeId();
    }
    assertThat(id).isNotBlank();
    try (Store again = newStore(dir)) {
      assertThat(again.storeId()).isEqualTo(id);
    }
    try (Store other = newStore(Files.createDirectories(dir.resolve("other")))) {
      assertThat(other.storeId()).isNotBlank().isNotEqualTo(id);
    }
  }

  @Test
  void workerStatusesReplaceTheWorkersPreviousReport() {
    try (Store store = newStore(dir)) {
      store.saveWorkerStatuses(List.of(new WorkerStatus("id-2", "w2", "", true, 0, null, 0, 0, T0, null),
          new WorkerStatus("id-1", "w1", "0.10 of 8.00", true, 0, null, 0, 2, T0, null)));
      store.saveWorkerStatuses(List.of(new WorkerStatus("id-1", "w1", "2.50 of 8.00", false, T0 + 30_000, "5 consecutive infrastructure failures", 1, 1, T0 + 2_000, null, 2.5, 4)));
      assertThat(store.workerStatuses()).as("by name, the numeric level kept (NaN: unknown)").containsExactly(
          new WorkerStatus("id-1", "w1", "2.50 of 8.00", false, T0 + 30_000, "5 consecutive infrastructure failures", 1, 1, T0 + 2_000, null, 2.5, 4),
          new WorkerStatus("id-2", "w2", "", true, 0, null, 0, 0, T0, null));
      store.saveWorkerStatuses(List.of(new WorkerStatus("id-2", "w2", "", true, 0, null, 0, 0, T0, null).left(T0 + 5_000, "reaped after 2600ms of silence")));
      assertThat(store.workerStatuses().get(1)).satisfies(w -> {
        assertThat(w.connected()).isFalse();
        assertThat(w.leftReason()).isEqualTo("reaped after 2600ms of silence");
        assertThat(w.reportedAtMillis()).isEqualTo(T0 + 5_000);
        assertThat(w.inFlight()).isZero();
      });
    }
  }

  /**
   * A worker's superseded session and its new one reported in one batch: its last status is saved. On
   * PostgreSQL the batch failed, every time, for the rest of the run (a breaker's trial: a coordinator frozen
   * past its workers' patience, which then reconnected).
   */
  @Test
  void aWorkerNamedTwiceInOneSaveKeepsItsLastStatus() {
    try (Store store = newStore(dir)) {
      WorkerStatus live = new WorkerStatus("id-1", "w1", "", true, 0, null, 0, 2, T0 + 1_000, null);
      store.saveWorkerStatuses(List.of(new WorkerStatus("id-1", "w1", "", true, 0, null, 0, 4, T0, null)
          .left(T0 + 1_000, "superseded by a new session"), live));
      assertThat(store.workerStatuses()).containsExactly(live);
    }
  }

  @Test
  void leasesOnlyFromTheBatchsRunsInTheirOrder() {
    try (Store store = newStore(dir)) {
      long mine = store.createRun(spec(3), cases(2));
      long other = store.createRun(spec(3), cases(2));
      long third = store.createRun(spec(3), cases(1));
      LeaseRequest ask = new LeaseRequest("w1", 10, T0 + 60_000);
      StoreBatchResult r = store.apply(batch(T0, List.of(third, mine), List.of(), List.of(), List.of(ask)));
      assertThat(r.leases().get(0)).extracting(Assignment::runId).containsExactly(third, mine, mine);
      assertThat(r.pendingLeft()).as("the other run's pending jobs are not this batch's business").isFalse();
      assertThat(store.jobs(other)).allMatch(j -> j.state() == JobState.PENDING);
      assertThat(store.apply(batch(T0, List.of(), List.of(), List.of(), List.of(ask))).leases().get(0))
          .as("a batch with no runs leases nothing").isEmpty();
    }
  }

  @Test
  void leasesPendingJobsInDatasetOrderWithTheRunsEvaluator() {
    try (Store store = newStore(dir)) {
      long first = store.createRun(spec(3), cases(2));
      long second = store.createRun(spec(3), cases(3));
      StoreBatchResult r = store.apply(lease(T0, "w1", 4));
      List<Assignment> got = r.leases().get(0);
      assertThat(got).extracting(Assignment::runId).containsExactly(first, first, second, second);
      assertThat(got).extracting(Assignment::caseId).containsExactly("c0", "c1", "c0", "c1");
      assertThat(got).allSatisfy(a -> {
        assertThat(a.token()).isEqualTo(1);
        assertThat(a.attempt()).isEqualTo(1);
        assertThat(a.evaluator()).isEqualTo(EVALUATOR);
      });
      assertThat(got.get(0).caseJson()).isEqualTo("{\"id\":\"c0\"}");
      assertThat(r.counters()).containsOnlyKeys(first, second);
      assertThat(r.pendingLeft()).isTrue();
      assertThat(r.nextNotBeforeMillis()).isEqualTo(Long.MAX_VALUE);
      assertThat(job(store, second, got.get(2).jobId())).satisfies(j -> {
        assertThat(j.state()).isEqualTo(JobState.LEASED);
        assertThat(j.worker()).isEqualTo("w1");
      });

      StoreBatchResult rest = store.apply(lease(T0, "w2", 10));
      assertThat(rest.leases().get(0)).extracting(Assignment::caseId).containsExactly("c2");
      assertThat(rest.pendingLeft()).isFalse();
      assertThat(store.apply(lease(T0, "w3", 10)).leases().get(0)).isEmpty();
    }
  }

  @Test
  void leasesByPositionEvenWhenCasesWereListedOutOfOrder() {
    try (Store store = newStore(dir)) {
      List<CaseRecord> shuffled = new ArrayList<>(cases(6));
      java.util.Collections.reverse(shuffled);
      long runId = store.createRun(spec(3), shuffled);
      assertThat(store.jobs(runId)).extracting(JobView::caseId).containsExactly("c0", "c1", "c2", "c3", "c4", "c5");
      assertThat(store.apply(lease(T0, "w1", 4)).leases().get(0)).extracting(Assignment::caseId)
          .containsExactly("c0", "c1", "c2", "c3");
    }
  }

  @Test
  void givesEachLeaseRequestInOneBatchDistinctJobs() {
    try (Store store = newStore(dir)) {
      store.createRun(spec(3), cases(5));
      StoreBatch batch = batch(T0, TEST_RUNS, List.of(), List.of(),
          List.of(new LeaseRequest("w1", 2, EXPIRY), new LeaseRequest("w2", 2, EXPIRY), new LeaseRequest("w3", 2, EXPIRY)));
      StoreBatchResult r = store.apply(batch);
      assertThat(r.leases()).extracting(List::size).containsExactly(2, 2, 1);
      assertThat(r.leases().stream().flatMap(List::stream).map(Assignment::caseId))
          .containsExactly("c0", "c1", "c2", "c3", "c4");
    }
  }

  // ------------------------------------------------------------------------------------------------
  // fencing and idempotent recording

  @Test
  void countsTheSameResultTwiceOnlyOnceAndCallsTheResendDuplicate() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(2));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);

      StoreBatchResult first = store.apply(record(T0 + 5, rec(a, "w1", Verdict.PASS)));
      assertThat(first.recordStatuses()).containsExactly(RecordStatus.RECORDED);
      assertThat(first.counters().get(runId)).isEqualTo(RunCounters.builder(2).passed(1).scores(1, 1, 1).build());

      StoreBatchResult resend = store.apply(record(T0 + 9, rec(a, "w1", Verdict.FAIL)));
      assertThat(resend.recordStatuses()).containsExactly(RecordStatus.DUPLICATE);
      assertThat(resend.counters().get(runId)).isEqualTo(RunCounters.builder(2).passed(1).duplicatesSuppressed(1).scores(1, 1, 1).build());

      JobView j = job(store, runId, a.jobId());
      assertThat(j.state()).isEqualTo(JobState.DONE);
      assertThat(j.worker()).isEqualTo("w1");
      assertThat(j.outcome()).isEqualTo(outcome(Verdict.PASS));
      assertThat(store.attempts(runId)).as("the resend noted on the attempt it repeated").containsExactly(
          new AttemptView(a.jobId(), a.token(), "w1", T0, T0 + 5, "recorded", "", AttemptTiming.elapsed(5), 1, 0));
    }
  }

  @Test
  void theScoreMomentsCountEachRecordedScoreOnceAndNothingElse() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(4));
      List<Assignment> got = store.apply(lease(T0, "w1", 4)).leases().get(0);
      Outcome quarter = new Outcome(Verdict.FAIL, 0.25, "", 1);
      Outcome three = new Outcome(Verdict.PASS, 3.0, "", 1);
      Outcome none = new Outcome(Verdict.ERROR, null, "out", 1, "B", "{\"metrics\":{\"f1\":0.5}}", 2, "err");
      store.apply(record(T0 + 1, new RecordRequest(got.get(0).jobId(), got.get(0).token(), "w1", quarter),
          new RecordRequest(got.get(1).jobId(), got.get(1).token(), "w1", three),
          new RecordRequest(got.get(2).jobId(), got.get(2).token(), "w1", none)));
      // A resend (duplicate) and a stale token (fenced) carry scores that must not count.
      store.apply(record(T0 + 2, new RecordRequest(got.get(1).jobId(), got.get(1).token(), "w1", three),
          new RecordRequest(got.get(3).jobId(), got.get(3).token() + 1, "w9", three)));
      RunCounters c = counters(store, runId);
      assertThat(c).isEqualTo(RunCounters.builder(4).passed(1).failed(1).errored(1).duplicatesSuppressed(1)
          .staleResultsFenced(1).scores(2, 3.25, 9.0625).build());
      assertThat(c.meanScore().orElseThrow().value()).isEqualTo(1.625);
      assertThat(c.accuracy().orElseThrow().value()).isEqualTo(1.0 / 3);
      // Everything the evaluator gave reads back as it was recorded: answer, fields, exit code, stderr apart.
      assertThat(job(store, runId, got.get(2).jobId()).outcome()).isEqualTo(none);
      assertThat(store.cases(runId, CaseQuery.first(10)).get(2).job().outcome()).isEqualTo(none);
    }
  }

  @Test
  void retryingErrorsRunsOnlyTheErroredCasesAgainAndCountsEachOnce() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), cases(4));
      List<Assignment> got = store.apply(lease(T0, "w1", 4)).leases().get(0);
      Outcome errorScored = new Outcome(Verdict.ERROR, 0.5, "boom", 1);
      store.apply(record(T0 + 1, rec(got.get(0), "w1", Verdict.PASS), rec(got.get(1), "w1", Verdict.FAIL),
          new RecordRequest(got.get(2).jobId(), got.get(2).token(), "w1", errorScored)));
      store.apply(release(T0 + 2, lost(got.get(3), T0))); // its only attempt: out of attempts
      assertThat(store.run(runId).orElseThrow().state()).isEqualTo(RunState.FINISHED);
      assertThat(counters(store, runId)).isEqualTo(RunCounters.builder(4).passed(1).failed(1).errored(1).jobsFailed(1)
          .scores(2, 1.5, 1.25).build());

      RetryResult r = store.retryErrors(runId, T0 + 3);
      assertThat(r).isEqualTo(new RetryResult(RetryResult.Status.RETRIED, 1, 1));
      RunView reopened = store.run(runId).orElseThrow();
      assertThat(reopened.state()).isEqualTo(RunState.RUNNING);
      assertThat(reopened.finishedAtMillis()).isZero();
      // The errors' counts and the error's score are given back; pass and fail stand.
      assertThat(reopened.counters()).isEqualTo(RunCounters.builder(4).passed(1).failed(1).scores(1, 1, 1).build());
      assertThat(job(store, runId, got.get(2).jobId()).state()).isEqualTo(JobState.PENDING);
      assertThat(job(store, runId, got.get(3).jobId()).failureReason()).isNull();

      // Fresh attempts, and tokens that keep growing: a late result of the earlier attempt is fenced.
      List<Assignment> again = store.apply(lease(T0 + 4, "w2", 4)).leases().get(0);
      assertThat(again).extracting(Assignment::jobId).containsExactly(got.get(2).jobId(), got.get(3).jobId());
      assertThat(again).extracting(Assignment::attempt).containsExactly(1, 1);
      assertThat(again.get(0).token()).isGreaterThan(got.get(2).token());
      assertThat(store.apply(record(T0 + 5, rec(got.get(2), "w1", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      store.apply(record(T0 + 6, rec(again.get(0), "w2", Verdict.PASS), rec(again.get(1), "w2", Verdict.FAIL)));
      RunView finished = store.run(runId).orElseThrow();
      assertThat(finished.state()).isEqualTo(RunState.FINISHED);
      assertThat(finished.counters()).isEqualTo(RunCounters.builder(4).passed(2).failed(2).staleResultsFenced(1)
          .scores(2, 2, 2).build());
      assertThat(job(store, runId, got.get(2).jobId()).outcome()).isEqualTo(outcome(Verdict.PASS));

      assertThat(store.retryErrors(runId, T0 + 7).status()).isEqualTo(RetryResult.Status.NOTHING_TO_RETRY);
      assertThat(store.retryErrors(99, T0 + 7).status()).isEqualTo(RetryResult.Status.UNKNOWN_RUN);
      long running = store.createRun(spec(1), cases(1));
      assertThat(store.retryErrors(running, T0 + 7).status()).isEqualTo(RetryResult.Status.NOT_ENDED);
      store.cancelRun(running, T0 + 8);
      assertThat(store.retryErrors(running, T0 + 9).status()).isEqualTo(RetryResult.Status.CANCELLED);
    }
  }

  // ------------------------------------------------------------------------------------------------
  // rescore

  /** Cases whose target is 42, numbered c0, c1, ... */
  private static List<CaseRecord> casesOf42(int n) {
    return IntStream.range(0, n).mapToObj(i -> new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\",\"target\":\"42\"}"))
        .toList();
  }

  /** What an evaluator answered, with its own verdict and score (a verdict line's). */
  private static Outcome answered(Verdict v, String answer) {
    return new Outcome(v, v == Verdict.PASS ? 1.0 : 0.0, "out " + answer + "\n", 5, answer, "{\"tokens\":2}", 0, "");
  }

  /** The counters as the jobs say they should be: verdicts and score moments of the done jobs, failed jobs. */
  private static RunCounters countersFromJobs(Store store, long runId, RunCounters stored) {
    RunCounters.Builder b = RunCounters.builder(stored.total()).duplicatesSuppressed(stored.duplicatesSuppressed())
        .staleResultsFenced(stored.staleResultsFenced()).redeliveries(stored.redeliveries()).cancelled(stored.cancelled());
    long[] v = new long[3];
    long scored = 0;
    double sum = 0;
    double squares = 0;
    long failed = 0;
    for (JobView j : store.jobs(runId)) {
      if (j.state() == JobState.FAILED) {
        failed++;
      }
      if (j.outcome() != null) {
        v[j.outcome().verdict().ordinal()]++;
        if (j.outcome().score() != null) {
          scored++;
          sum += j.outcome().score();
          squares += j.outcome().score() * j.outcome().score();
        }
      }
    }
    return b.passed(v[Verdict.PASS.ordinal()]).failed(v[Verdict.FAIL.ordinal()]).errored(v[Verdict.ERROR.ordinal()])
        .jobsFailed(failed).scores(scored, sum, squares).build();
  }

  @Test
  void rescoringJudgesEachRecordedAnswerAgainMovesTheCountersWithItAndRecordsTheScorers() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), casesOf42(5));
      List<Assignment> got = store.apply(lease(T0, "w1", 5)).leases().get(0);
      Outcome notFound = new Outcome(Verdict.ERROR, null, "sh: not found", 1, null, null, 127, "");
      store.apply(record(T0 + 1, new RecordRequest(got.get(0).jobId(), got.get(0).token(), "w1", answered(Verdict.PASS, "42")),
          new RecordRequest(got.get(1).jobId(), got.get(1).token(), "w1", answered(Verdict.FAIL, "41")),
          new RecordRequest(got.get(2).jobId(), got.get(2).token(), "w1", notFound),
          new RecordRequest(got.get(4).jobId(), got.get(4).token(), "w2", answered(Verdict.PASS, "40"))));
      store.apply(release(T0 + 2, lost(got.get(3), T0))); // out of attempts: no outcome to judge
      RunView before = store.run(runId).orElseThrow(); // read (and cached, where a store caches specs) before
      assertThat(before.counters()).isEqualTo(RunCounters.builder(5).passed(2).failed(1).errored(1).jobsFailed(1)
          .scores(3, 2, 2).build());

      Judge within1 = Judge.of(List.of("numeric:abs=1"));
      RescoreResult r = Rescoring.rescore(store, runId, within1, java.time.Clock.fixed(java.time.Instant.ofEpochMilli(T0 + 3),
          java.time.ZoneOffset.UTC));
      assertThat(r).isEqualTo(new RescoreResult(RescorePage.Status.RESCORED, 4, 3, 3, 2));
      RunView after = store.run(runId).orElseThrow();
      // 42 and 41 pass within 1 of 42, 40 fails; the evaluator's error and the failed job stand.
      assertThat(after.counters()).isEqualTo(RunCounters.builder(5).passed(2).failed(1).errored(1).jobsFailed(1)
          .scores(3, 2, 2).build());
      assertThat(after.counters()).isEqualTo(countersFromJobs(store, runId, after.counters()));
      assertThat(job(store, runId, got.get(1).jobId()).outcome().verdict()).isEqualTo(Verdict.PASS);
      JobView forty = job(store, runId, got.get(4).jobId());
      assertThat(forty.outcome().verdict()).isEqualTo(Verdict.FAIL);
      assertThat(forty.worker()).as("who recorded it stays").isEqualTo("w2");
      assertThat(forty.outcome().fieldsJson()).contains("\"tokens\":2").contains("\"numeric\"");
      assertThat(job(store, runId, got.get(2).jobId()).outcome()).isEqualTo(notFound);
      assertThat(job(store, runId, got.get(3).jobId()).state()).isEqualTo(JobState.FAILED);
      assertThat(after.state()).isEqualTo(RunState.FINISHED);
      assertThat(after.finishedAtMillis()).isEqualTo(before.finishedAtMillis());
      Map<String, String> options = after.spec().evaluator().options();
      assertThat(Scorers.specsOf(options)).as("the run's spec names the scorers now in force").containsExactly("numeric:abs=1");
      assertThat(options).containsAllEntriesOf(EVALUATOR.options());
      try (Store reopened = newStore(dir)) {
        assertThat(Scorers.specsOf(reopened.run(runId).orElseThrow().spec().evaluator().options()))
            .containsExactly("numeric:abs=1");
      }

      // Exact now: only "42" is 42, so the counters move again, from the new outcomes, not the first ones.
      Judge exact = Judge.of(List.of("exact"));
      RescoreResult twice = Rescoring.rescore(store, runId, exact, java.time.Clock.systemUTC());
      assertThat(twice.verdictsChanged()).isEqualTo(1);
      RunCounters exactly = store.run(runId).orElseThrow().counters();
      assertThat(exactly).isEqualTo(RunCounters.builder(5).passed(1).failed(2).errored(1).jobsFailed(1).scores(3, 1, 1).build());
      assertThat(exactly).isEqualTo(countersFromJobs(store, runId, exactly));
      assertThat(Rescoring.rescore(store, runId, exact, java.time.Clock.systemUTC()))
          .as("the same scorers again change nothing").isEqualTo(new RescoreResult(RescorePage.Status.RESCORED, 4, 3, 0, 0));
      assertThat(store.run(runId).orElseThrow().counters()).isEqualTo(exactly);
    }
  }

  @Test
  void rescoringWalksALargeRunPageByPageAndALaterRescoreSupersedesAnEarlierOnesNextPage() {
    int n = BatchRules.RESCORE_PAGE_CASES * 2 + 3;
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), casesOf42(n));
      List<Assignment> got = store.apply(lease(T0, "w1", n)).leases().get(0);
      store.apply(record(T0 + 1, got.stream().map(a -> new RecordRequest(a.jobId(), a.token(), "w1",
          answered(Verdict.FAIL, a.caseId().equals("c0") ? "41" : "42"))).toArray(RecordRequest[]::new)));
      Judge exact = Judge.of(List.of("exact"));
      RescoreResult r = Rescoring.rescore(store, runId, exact, java.time.Clock.systemUTC());
      assertThat(r).isEqualTo(new RescoreResult(RescorePage.Status.RESCORED, n, n, n, n - 1));
      RunCounters c = store.run(runId).orElseThrow().counters();
      assertThat(c.passed()).isEqualTo(n - 1);
      assertThat(c).isEqualTo(countersFromJobs(store, runId, c));

      RescorePage first = store.rescore(runId, Judge.of(List.of("includes")), -1, T0 + 2);
      assertThat(first.read()).isEqualTo(BatchRules.RESCORE_PAGE_CASES);
      assertThat(first.more()).isTrue();
      store.rescore(runId, exact, -1, T0 + 3); // another rescore begins
      RescorePage next = store.rescore(runId, Judge.of(List.of("includes")), first.lastPosition(), T0 + 4);
      assertThat(next.status()).isEqualTo(RescorePage.Status.SUPERSEDED);
      assertThat(next.read()).isZero();
      assertThat(Scorers.specsOf(store.run(runId).orElseThrow().spec().evaluator().options())).containsExactly("exact");
    }
  }

  @Test
  void rescoringRefusesAnUnknownRunAndOneNotEndedAndWritesNothingThereButJudgesACancelledRunsRecordedCases() {
    try (Store store = newStore(dir)) {
      Judge exact = Judge.of(List.of("exact"));
      assertThat(Rescoring.rescore(store, 99, exact, java.time.Clock.systemUTC()).status())
          .isEqualTo(RescorePage.Status.UNKNOWN_RUN);
      long runId = store.createRun(spec(1), casesOf42(3));
      List<Assignment> got = store.apply(lease(T0, "w1", 1)).leases().get(0);
      store.apply(record(T0 + 1, new RecordRequest(got.get(0).jobId(), got.get(0).token(), "w1", answered(Verdict.FAIL, "42"))));
      RunView running = store.run(runId).orElseThrow();
      assertThat(Rescoring.rescore(store, runId, exact, java.time.Clock.systemUTC()))
          .isEqualTo(new RescoreResult(RescorePage.Status.NOT_ENDED, 0, 0, 0, 0));
      RunView untouched = store.run(runId).orElseThrow();
      assertThat(untouched.counters()).isEqualTo(running.counters());
      assertThat(untouched.spec()).isEqualTo(running.spec());
      assertThat(job(store, runId, got.get(0).jobId()).outcome()).isEqualTo(answered(Verdict.FAIL, "42"));

      store.cancelRun(runId, T0 + 2);
      assertThat(Rescoring.rescore(store, runId, exact, java.time.Clock.systemUTC()))
          .isEqualTo(new RescoreResult(RescorePage.Status.RESCORED, 1, 1, 1, 1));
      RunView cancelled = store.run(runId).orElseThrow();
      assertThat(cancelled.state()).isEqualTo(RunState.CANCELLED);
      assertThat(cancelled.counters()).isEqualTo(RunCounters.builder(3).passed(1).cancelled(2).scores(1, 1, 1).build());
    }
  }

  @Test
  void behavesAsIfTwoRecordsForOneJobInOneBatchWereAppliedOneAfterTheOther() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      StoreBatchResult r = store.apply(record(T0, rec(a, "w1", Verdict.FAIL), rec(a, "w1", Verdict.PASS),
          new RecordRequest(a.jobId(), a.token() + 1, "w9", outcome(Verdict.PASS))));
      assertThat(r.recordStatuses()).containsExactly(RecordStatus.RECORDED, RecordStatus.DUPLICATE, RecordStatus.FENCED);
      assertThat(r.counters().get(runId)).isEqualTo(RunCounters.builder(1).failed(1).duplicatesSuppressed(1).staleResultsFenced(1).build());
      assertThat(job(store, runId, a.jobId()).outcome().verdict()).isEqualTo(Verdict.FAIL);
    }
  }

  /**
   * A batch of records larger than a SQL store's multi-row statement ({@link StoreSql#MAX_RECORD_ROWS}), with
   * every kind of request mixed in: each is judged as if the batch's records were applied one by one.
   */
  @Test
  void aBatchOfManyRecordsOfEveryKindIsJudgedAsIfAppliedOneByOne() {
    int n = 2 * StoreSql.MAX_RECORD_ROWS + 20;
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(n));
      List<Assignment> leased = store.apply(lease(T0, "w1", n)).leases().get(0);
      assertThat(leased).hasSize(n);
      // Job 0's backup will win; job 1's own lease will win over its backup.
      Assignment backupWins = issued(store.apply(backup(T0 + 1, leased.get(0).jobId(), "w2")));
      Assignment backupLoses = issued(store.apply(backup(T0 + 1, leased.get(1).jobId(), "w2")));

      List<RecordRequest> records = new ArrayList<>();
      List<RecordStatus> expected = new ArrayList<>();
      records.add(rec(backupWins, "w2", Verdict.PASS));
      expected.add(RecordStatus.RECORDED);
      for (int i = 1; i < n; i++) {
        records.add(rec(leased.get(i), "w1", i % 3 == 0 ? Verdict.FAIL : Verdict.PASS));
        expected.add(RecordStatus.RECORDED);
      }
      records.add(rec(leased.get(0), "w1", Verdict.FAIL)); // abandoned by the backup's record just before
      expected.add(RecordStatus.FENCED);
      records.add(rec(backupLoses, "w2", Verdict.FAIL)); // abandoned by its job's own lease
      expected.add(RecordStatus.FENCED);
      records.add(rec(leased.get(5), "w1", Verdict.FAIL)); // a resend in the same batch
      expected.add(RecordStatus.DUPLICATE);
      records.add(new RecordRequest(leased.get(7).jobId(), leased.get(7).token() + 9, "w9", outcome(Verdict.PASS)));
      expected.add(RecordStatus.FENCED);
      records.add(new RecordRequest(Long.MAX_VALUE / 2, 1, "w9", outcome(Verdict.PASS))); // no such job
      expected.add(RecordStatus.FENCED);

      StoreBatchResult r = store.apply(batch(T0 + 20, TEST_RUNS, records, List.of(), List.of()));
      assertThat(r.recordStatuses()).containsExactlyElementsOf(expected);
      assertThat(r.abandoned()).extracting(l -> l.jobId() + "/" + l.token()).containsExactlyInAnyOrder(
          leased.get(0).jobId() + "/" + leased.get(0).token(), leased.get(1).jobId() + "/" + backupLoses.token());
      long failedCount = java.util.stream.IntStream.range(1, n).filter(i -> i % 3 == 0).count();
      RunCounters c = counters(store, runId);
      assertThat(c.recorded()).isEqualTo(n);
      assertThat(c.failed()).isEqualTo(failedCount);
      assertThat(c.passed()).isEqualTo(n - failedCount);
      assertThat(c.duplicatesSuppressed()).isEqualTo(1);
      assertThat(c.staleResultsFenced()).isEqualTo(3); // the unknown job's is charged to no run
      assertThat(store.run(runId).orElseThrow().state()).isEqualTo(RunState.FINISHED);
      JobView won = job(store, runId, leased.get(0).jobId());
      assertThat(won.token()).isEqualTo(backupWins.token());
      assertThat(won.worker()).isEqualTo("w2");
      assertThat(job(store, runId, leased.get(5).jobId()).outcome().verdict()).isEqualTo(Verdict.PASS);
      assertThat(job(store, runId, leased.get(6).jobId()).outcome().verdict()).isEqualTo(Verdict.FAIL);
      assertThat(job(store, runId, leased.get(n - 1).jobId()).worker()).isEqualTo("w1");
      assertThat(store.attempts(runId)).filteredOn(a -> a.ending().equals("recorded")).hasSize(n);
      assertThat(store.attempts(runId)).filteredOn(a -> a.ending().equals(BatchRules.ABANDONED_ENDING)).hasSize(2);
    }
  }

  @Test
  void fencesTheOlderTokenOnceTheJobIsReleasedAndLeasedAgain() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment old = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      assertThat(store.apply(release(T0 + 1, lost(old, T0 + 1))).releaseStatuses())
          .containsExactly(ReleaseStatus.RELEASED);
      Assignment current = store.apply(lease(T0 + 2, "w2", 1)).leases().get(0).get(0);
      assertThat(current.token()).isGreaterThan(old.token());

      StoreBatchResult late = store.apply(record(T0 + 3, rec(old, "w1", Verdict.PASS)));
      assertThat(late.recordStatuses()).containsExactly(RecordStatus.FENCED);
      assertThat(late.counters().get(runId).staleResultsFenced()).isEqualTo(1);
      assertThat(late.counters().get(runId).recorded()).isZero();

      assertThat(store.apply(record(T0 + 4, rec(current, "w2", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.RECORDED);
      // Once the job is done under the new token, the old holder is still fenced, not a duplicate.
      assertThat(store.apply(record(T0 + 5, rec(old, "w1", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      assertThat(counters(store, runId)).isEqualTo(RunCounters.builder(1).passed(1).staleResultsFenced(2).redeliveries(1).scores(1, 1, 1).build());
    }
  }

  @Test
  void fencesAResultForAJobThatWasReleasedAndIsPending() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      store.apply(release(T0 + 1, lost(a, T0 + 1_000)));
      assertThat(store.apply(record(T0 + 2, rec(a, "w1", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      JobView j = job(store, runId, a.jobId());
      assertThat(j.state()).isEqualTo(JobState.PENDING);
      assertThat(j.outcome()).isNull();
      assertThat(counters(store, runId)).isEqualTo(RunCounters.builder(1).staleResultsFenced(1).redeliveries(1).build());
    }
  }

  @Test
  void fencesAResultForAJobThatEndedFailed() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), cases(1)); // one attempt: its loss ends it
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      store.apply(release(T0 + 1, lost(a, T0)));
      assertThat(store.apply(record(T0 + 2, rec(a, "w1", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      assertThat(job(store, runId, a.jobId()).state()).isEqualTo(JobState.FAILED);
    }
  }

  /** Decided: a job id the store never issued is a writer without a lease, so FENCED; no run is charged. */
  @Test
  void fencesAResultForAJobThatDoesNotExist() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      StoreBatchResult r = store.apply(record(T0, new RecordRequest(987_654, 1, "w1", outcome(Verdict.PASS))));
      assertThat(r.recordStatuses()).containsExactly(RecordStatus.FENCED);
      assertThat(r.counters()).isEmpty();
      assertThat(counters(store, runId)).isEqualTo(RunCounters.builder(1).build());
      assertThat(store.apply(release(T0, new ReleaseRequest(987_654, 1,
          new InfraFailure(InfraFailure.Kind.TIMEOUT, ""), T0))).releaseStatuses())
          .containsExactly(ReleaseStatus.STALE);
    }
  }

  @Test
  void issuesStrictlyGreaterTokensAcrossLeasesRestartsAndReleaseAllLeases() {
    long jobId;
    long lastToken;
    long runId;
    try (Store store = newStore(dir)) {
      runId = store.createRun(spec(10), cases(1));
      Assignment a1 = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      store.apply(release(T0, lost(a1, T0)));
      Assignment a2 = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      assertThat(a2.jobId()).isEqualTo(a1.jobId());
      assertThat(a2.token()).isGreaterThan(a1.token());
      assertThat(a2.attempt()).isEqualTo(2);
      jobId = a2.jobId();
      lastToken = a2.token();
    }
    // Simulated coordinator restart: the lease is still there; the new coordinator ends it.
    try (Store store = newStore(dir)) {
      assertThat(job(store, runId, jobId).state()).isEqualTo(JobState.LEASED);
      assertThat(store.releaseLeases(runId, T0 + 10, POLICY)).isEqualTo(1);
      Assignment a3 = store.apply(lease(T0 + 10, "w2", 1)).leases().get(0).get(0);
      assertThat(a3.token()).isGreaterThan(lastToken);
      assertThat(a3.attempt()).isEqualTo(3);
      lastToken = a3.token();
      // A result from before the restart is fenced.
      assertThat(store.apply(record(T0 + 11, new RecordRequest(jobId, lastToken - 1, "w1", outcome(Verdict.PASS))))
          .recordStatuses()).containsExactly(RecordStatus.FENCED);
    }
    try (Store store = newStore(dir)) {
      store.releaseLeases(runId, T0 + 20, POLICY);
      Assignment a4 = store.apply(lease(T0 + 20, "w3", 1)).leases().get(0).get(0);
      assertThat(a4.token()).isGreaterThan(lastToken);
      assertThat(store.attempts(runId)).extracting(AttemptView::token).isSorted().doesNotHaveDuplicates();
      assertThat(store.attempts(runId)).extracting(AttemptView::ending)
          .containsExactly("worker_lost", "coordinator_restarted", "coordinator_restarted");
    }
  }

  @Test
  void releaseLeasesRequeuesARunsLeasedJobsAndFailsThoseOutOfAttempts() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(2), cases(3));
      List<Assignment> first = store.apply(lease(T0, "w1", 2)).leases().get(0);
      store.apply(release(T0, lost(first.get(0), T0)));
      // c0 is on its 2nd (last) attempt, c1 on its 1st, c2 was never leased.
      List<Assignment> second = store.apply(lease(T0, "w2", 1)).leases().get(0);
      assertThat(second).extracting(Assignment::caseId, Assignment::attempt).containsExactly(
          org.assertj.core.groups.Tuple.tuple("c0", 2));
      long before = store.commits();

      assertThat(store.releaseLeases(runId, T0 + 100, POLICY)).isEqualTo(2);

      assertThat(store.commits()).isEqualTo(before + 1);
      List<JobView> jobs = store.jobs(runId);
      assertThat(jobs).extracting(JobView::state).containsExactly(JobState.FAILED, JobState.PENDING, JobState.PENDING);
      assertThat(jobs.get(0).failureReason()).contains("coordinator_restarted").contains("out of attempts (2 of 2)");
      assertThat(counters(store, runId)).isEqualTo(RunCounters.builder(3).jobsFailed(1).redeliveries(2).build());
      assertThat(store.attempts(runId)).filteredOn(v -> v.ending().equals("coordinator_restarted"))
          .extracting(AttemptView::worker, AttemptView::endedAtMillis)
          .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple("w1", T0 + 100), org.assertj.core.groups.Tuple.tuple("w2", T0 + 100));
      assertThat(store.releaseLeases(runId, T0 + 200, POLICY)).isZero();
    }
  }

  @Test
  void countsEachJobOnceWhenManyThreadsRecordTheSameResults() throws Exception {
    int jobs = 200;
    int threads = 8;
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(jobs));
      List<Assignment> leased = store.apply(lease(T0, "w1", jobs)).leases().get(0);
      assertThat(leased).hasSize(jobs);

      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Map<RecordStatus, Long>>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int seed = t;
          futures.add(pool.submit((Callable<Map<RecordStatus, Long>>) () -> {
            List<Assignment> mine = new ArrayList<>(leased);
            java.util.Collections.shuffle(mine, new java.util.Random(seed));
            start.await();
            List<RecordStatus> statuses = new ArrayList<>();
            for (int i = 0; i < mine.size(); i += 7) {
              RecordRequest[] batch = mine.subList(i, Math.min(i + 7, mine.size())).stream()
                  .map(a -> rec(a, "w1", Verdict.PASS)).toArray(RecordRequest[]::new);
              statuses.addAll(store.apply(record(T0 + 1, batch)).recordStatuses());
            }
            return statuses.stream().collect(Collectors.groupingBy(s -> s, Collectors.counting()));
          }));
        }
        start.countDown();
        Map<RecordStatus, Long> total = new HashMap<>();
        for (Future<Map<RecordStatus, Long>> f : futures) {
          f.get(60, TimeUnit.SECONDS).forEach((k, v) -> total.merge(k, v, Long::sum));
        }
        assertThat(total).containsOnlyKeys(RecordStatus.RECORDED, RecordStatus.DUPLICATE);
        assertThat(total.get(RecordStatus.RECORDED)).isEqualTo(jobs);
        assertThat(total.get(RecordStatus.DUPLICATE)).isEqualTo((long) jobs * (threads - 1));
      } finally {
        pool.shutdownNow();
      }
      RunView run = store.run(runId).orElseThrow();
      assertThat(run.counters()).isEqualTo(RunCounters.builder(jobs).passed(jobs).duplicatesSuppressed((long) jobs * (threads - 1)).scores(jobs, jobs, jobs).build());
      assertThat(run.ended()).isTrue();
      assertThat(store.jobs(runId)).allSatisfy(j -> assertThat(j.state()).isEqualTo(JobState.DONE));
      assertThat(store.attempts(runId)).hasSize(jobs);
    }
  }

  // ------------------------------------------------------------------------------------------------
  // releases

  @Test
  void putsAReleasedJobBackWithBackoff() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      long notBefore = T0 + 5_000;

      StoreBatchResult r = store.apply(release(T0 + 10, lost(a, notBefore)));
      assertThat(r.releaseStatuses()).containsExactly(ReleaseStatus.RELEASED);
      assertThat(r.nextNotBeforeMillis()).isEqualTo(notBefore);
      assertThat(r.pendingLeft()).isFalse();
      assertThat(r.counters().get(runId).redeliveries()).isEqualTo(1);
      JobView j = job(store, runId, a.jobId());
      assertThat(j.state()).isEqualTo(JobState.PENDING);
      assertThat(j.worker()).isNull();
      assertThat(store.attempts(runId)).containsExactly(
          new AttemptView(a.jobId(), a.token(), "w1", T0, T0 + 10, "worker_lost", "connection reset", AttemptTiming.elapsed(10)));

      StoreBatchResult early = store.apply(lease(notBefore - 1, "w2", 1));
      assertThat(early.leases().get(0)).isEmpty();
      assertThat(early.nextNotBeforeMillis()).isEqualTo(notBefore);
      assertThat(early.pendingLeft()).isFalse();

      StoreBatchResult onTime = store.apply(lease(notBefore, "w2", 1));
      assertThat(onTime.leases().get(0)).singleElement().satisfies(b -> {
        assertThat(b.jobId()).isEqualTo(a.jobId());
        assertThat(b.token()).isGreaterThan(a.token());
        assertThat(b.attempt()).isEqualTo(2);
      });
      assertThat(onTime.nextNotBeforeMillis()).isEqualTo(Long.MAX_VALUE);
    }
  }

  @Test
  void aRetryGoesToAnotherWorkerWhenOneAsksAndBackToItsOwnOnlyWhenNoneDoes() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(5), cases(2));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      store.apply(release(T0 + 1, new ReleaseRequest(a.jobId(), a.token(),
          new InfraFailure(InfraFailure.Kind.SIGNALED, "killed"), T0 + 1)));
      // w1 asks first, yet the retry of its case goes to w2; w1 gets the untried case.
      StoreBatchResult both = store.apply(batch(T0 + 2, TEST_RUNS, List.of(), List.of(),
          List.of(new LeaseRequest("w1", 1, EXPIRY), new LeaseRequest("w2", 1, EXPIRY))));
      assertThat(both.leases().get(0)).extracting(Assignment::caseId).containsExactly("c1");
      assertThat(both.leases().get(1)).extracting(Assignment::caseId).containsExactly("c0");
      Assignment retried = both.leases().get(1).get(0);
      store.apply(release(T0 + 3, new ReleaseRequest(retried.jobId(), retried.token(),
          new InfraFailure(InfraFailure.Kind.SIGNALED, "killed"), T0 + 3)));
      // Only w2 asks now: with nobody else to take it, its own retry comes back to it.
      assertThat(store.apply(lease(T0 + 4, "w2", 2)).leases().get(0)).extracting(Assignment::caseId)
          .containsExactly("c0");
      assertThat(job(store, runId, a.jobId()).attempts()).isEqualTo(3);
    }
  }

  @Test
  void releasesAndLeasesAJobAgainInOneBatchOnceItsBackoffAllows() {
    try (Store store = newStore(dir)) {
      store.createRun(spec(3), cases(1));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      StoreBatchResult r = store.apply(batch(T0 + 1, TEST_RUNS, List.of(), List.of(lost(a, T0 + 1)),
          List.of(new LeaseRequest("w2", 1, EXPIRY))));
      assertThat(r.releaseStatuses()).containsExactly(ReleaseStatus.RELEASED);
      assertThat(r.leases().get(0)).singleElement().satisfies(b -> assertThat(b.token()).isEqualTo(a.token() + 1));
    }
  }

  @Test
  void endsAJobOutOfAttemptsFailedWithItsReasonAndHistory() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), cases(2));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      ReleaseRequest poison = new ReleaseRequest(a.jobId(), a.token(),
          new InfraFailure(InfraFailure.Kind.SIGNALED, "killed by SIGKILL"), T0);
      StoreBatchResult r = store.apply(release(T0 + 7, poison));
      assertThat(r.releaseStatuses()).containsExactly(ReleaseStatus.FAILED);
      assertThat(r.counters().get(runId)).isEqualTo(RunCounters.builder(2).jobsFailed(1).build());
      JobView j = job(store, runId, a.jobId());
      assertThat(j.state()).isEqualTo(JobState.FAILED);
      assertThat(j.outcome()).isNull();
      assertThat(j.failureReason()).contains("signaled").contains("killed by SIGKILL");
      assertThat(store.attempts(runId)).containsExactly(
          new AttemptView(a.jobId(), a.token(), "w1", T0, T0 + 7, "signaled", "killed by SIGKILL", AttemptTiming.elapsed(7)));
      // A failed job is never leased again.
      assertThat(store.apply(lease(T0 + 8, "w1", 5)).leases().get(0)).extracting(Assignment::caseId)
          .containsExactly("c1");
    }
  }

  @Test
  void changesNothingForAStaleRelease() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(2));
      List<Assignment> got = store.apply(lease(T0, "w1", 2)).leases().get(0);
      Assignment done = got.get(0);
      Assignment held = got.get(1);
      store.apply(record(T0 + 1, rec(done, "w1", Verdict.PASS)));
      List<JobView> jobsBefore = store.jobs(runId);
      List<AttemptView> attemptsBefore = store.attempts(runId);
      RunCounters countersBefore = counters(store, runId);

      StoreBatchResult r = store.apply(release(T0 + 2, lost(done, T0), lost(done, T0 + 1),
          new ReleaseRequest(held.jobId(), held.token() - 1, new InfraFailure(InfraFailure.Kind.TIMEOUT, ""), T0),
          new ReleaseRequest(held.jobId(), held.token() + 1, new InfraFailure(InfraFailure.Kind.HANDED_BACK, ""), T0)));

      assertThat(r.releaseStatuses()).containsOnly(ReleaseStatus.STALE).hasSize(4);
      assertThat(store.jobs(runId)).isEqualTo(jobsBefore);
      assertThat(store.attempts(runId)).isEqualTo(attemptsBefore);
      assertThat(counters(store, runId)).isEqualTo(countersBefore);
    }
  }

  // ------------------------------------------------------------------------------------------------
  // run completion and atomicity

  @Test
  void finishesARunExactlyWhenItsLastJobEnds() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), cases(3));
      List<Assignment> got = store.apply(lease(T0, "w1", 3)).leases().get(0);
      store.apply(record(T0 + 1, rec(got.get(0), "w1", Verdict.PASS), rec(got.get(1), "w1", Verdict.ERROR)));
      RunView running = store.run(runId).orElseThrow();
      assertThat(running.ended()).isFalse();
      assertThat(running.finishedAtMillis()).isZero();

      StoreBatchResult last = store.apply(release(T0 + 2, lost(got.get(2), T0)));
      assertThat(last.counters().get(runId).finished()).isTrue();
      RunView finished = store.run(runId).orElseThrow();
      assertThat(finished.ended()).isTrue();
      assertThat(finished.finishedAtMillis()).isEqualTo(T0 + 2);
      assertThat(finished.counters()).isEqualTo(RunCounters.builder(3).passed(1).errored(1).jobsFailed(1).scores(1, 1, 1).build());

      // Late duplicates move the duplicate counter but neither reopen nor re-finish the run.
      store.apply(record(T0 + 50, rec(got.get(0), "w1", Verdict.PASS)));
      assertThat(store.run(runId).orElseThrow().finishedAtMillis()).isEqualTo(T0 + 2);
    }
  }

  @Test
  void finishesARunWithNoCasesAtCreation() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), List.of());
      RunView run = store.run(runId).orElseThrow();
      assertThat(run.ended()).isTrue();
      assertThat(run.finishedAtMillis()).isEqualTo(run.createdAtMillis());
      assertThat(run.counters().total()).isZero();
    }
  }

  @Test
  void writesNothingForARunWithADuplicateCaseId() {
    try (Store store = newStore(dir)) {
      long commits = store.commits();
      List<CaseRecord> dup = new ArrayList<>(cases(3));
      dup.add(new CaseRecord(3, "c1", "{}"));
      assertThatThrownBy(() -> store.createRun(spec(3), dup))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("c1");
      assertThat(store.runs()).isEmpty();
      assertThat(store.commits()).isEqualTo(commits);
      assertThat(store.apply(lease(T0, "w1", 10)).leases().get(0)).isEmpty();
    }
  }

  // ------------------------------------------------------------------------------------------------
  // streaming run creation

  // ------------------------------------------------------------------------------------------------
  // fencing by the set of live attempts (speculative execution)

  protected static StoreBatch backup(long now, long jobId, String worker) {
    return StoreBatch.builder(now, TEST_RUNS, POLICY)
        .backup(new StoreBatch.BackupRequest(jobId, worker, now + 60_000)).build();
  }

  /** The one backup a batch of {@link #backup} issued. */
  protected static Assignment issued(StoreBatchResult r) {
    assertThat(r.backups()).hasSize(1);
    assertThat(r.backups().get(0)).as("backup issued").isPresent();
    return r.backups().get(0).orElseThrow();
  }

  private static List<String> endings(Store store, long runId) {
    return store.attempts(runId).stream().sorted(Comparator.comparingLong(AttemptView::token))
        .map(a -> a.token() + ":" + a.worker() + ":" + a.ending()).toList();
  }

  @Test
  void aBackupAttemptsResultIsRecordedAndTheOriginalAttemptIsAbandonedAndFenced() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2")));
      assertThat(copy.token()).isGreaterThan(first.token());
      assertThat(copy.attempt()).isEqualTo(2);
      assertThat(copy.caseId()).isEqualTo(first.caseId());

      StoreBatchResult won = store.apply(record(T0 + 20, rec(copy, "w2", Verdict.PASS)));
      assertThat(won.recordStatuses()).containsExactly(RecordStatus.RECORDED);
      assertThat(won.abandoned()).extracting(l -> l.jobId() + "/" + l.token() + "/" + l.owner())
          .containsExactly(first.jobId() + "/" + first.token() + "/w1");
      // The loser's late result is fenced; the winner's resend is a duplicate; the job is counted once.
      assertThat(store.apply(record(T0 + 30, rec(first, "w1", Verdict.FAIL))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      assertThat(store.apply(record(T0 + 40, rec(copy, "w2", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.DUPLICATE);
      JobView j = job(store, runId, first.jobId());
      assertThat(j.state()).isEqualTo(JobState.DONE);
      assertThat(j.token()).isEqualTo(copy.token());
      assertThat(j.worker()).isEqualTo("w2");
      assertThat(j.outcome().verdict()).isEqualTo(Verdict.PASS);
      RunCounters c = counters(store, runId);
      assertThat(c.recorded()).isEqualTo(1);
      assertThat(c.passed()).isEqualTo(1);
      assertThat(c.staleResultsFenced()).isEqualTo(1);
      assertThat(c.duplicatesSuppressed()).isEqualTo(1);
      assertThat(c.redeliveries()).isZero();
      assertThat(c.backups()).as("the backup started is counted, as a redelivery is").isEqualTo(1);
      assertThat(endings(store, runId)).containsExactly("1:w1:" + BatchRules.ABANDONED_ENDING, "2:w2:recorded");
      assertThat(store.run(runId).orElseThrow().state()).isEqualTo(RunState.FINISHED);
    }
  }

  @Test
  void theOriginalAttemptMayWinAndThenItsBackupIsAbandoned() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2")));
      StoreBatchResult won = store.apply(record(T0 + 20, rec(first, "w1", Verdict.FAIL)));
      assertThat(won.recordStatuses()).containsExactly(RecordStatus.RECORDED);
      assertThat(won.abandoned()).extracting(l -> l.token()).containsExactly(copy.token());
      assertThat(store.apply(record(T0 + 30, rec(copy, "w2", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      JobView j = job(store, runId, first.jobId());
      assertThat(j.token()).isEqualTo(first.token());
      assertThat(j.worker()).isEqualTo("w1");
      assertThat(j.outcome().verdict()).isEqualTo(Verdict.FAIL);
      assertThat(counters(store, runId).recorded()).isEqualTo(1);
      assertThat(endings(store, runId)).containsExactly("1:w1:recorded", "2:w2:" + BatchRules.ABANDONED_ENDING);
    }
  }

  @Test
  void bothAttemptsResultsInOneBatchRecordOnlyTheFirst() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2")));
      StoreBatchResult r = store.apply(record(T0 + 20, rec(copy, "w2", Verdict.PASS), rec(first, "w1", Verdict.PASS)));
      assertThat(r.recordStatuses()).containsExactly(RecordStatus.RECORDED, RecordStatus.FENCED);
      // Abandoned in the same batch: its holder already reported, telling it again is harmless.
      assertThat(r.abandoned()).extracting(l -> l.token()).containsExactly(first.token());
      RunCounters c = counters(store, runId);
      assertThat(c.recorded()).isEqualTo(1);
      assertThat(c.passed()).isEqualTo(1);
      assertThat(c.staleResultsFenced()).isEqualTo(1);
      assertThat(job(store, runId, first.jobId()).token()).isEqualTo(copy.token());
      assertThat(store.attempts(runId)).filteredOn(a -> a.ending().equals("recorded")).hasSize(1);
    }
  }

  @Test
  void anAttemptLostWhileItsBackupLivesIsDroppedAndTheJobGoesOnUnderTheBackup() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2")));
      StoreBatchResult r = store.apply(release(T0 + 20, lost(first, T0 + 20)));
      assertThat(r.releaseStatuses()).containsExactly(ReleaseStatus.DROPPED);
      JobView j = job(store, runId, first.jobId());
      assertThat(j.state()).isEqualTo(JobState.LEASED);
      assertThat(j.token()).isEqualTo(copy.token());
      assertThat(counters(store, runId).redeliveries()).as("nothing went back to the queue").isZero();
      // Nothing is leasable: the job is not pending.
      assertThat(store.apply(lease(T0 + 30, "w3", 1)).leases().get(0)).isEmpty();
      assertThat(store.apply(batch(T0 + 40, TEST_RUNS, List.of(), List.of(), List.of(),
          List.of(new RenewRequest(copy.jobId(), copy.token(), T0 + 90_000)), false)).renewals().get(0).current()).isTrue();
      assertThat(store.apply(record(T0 + 50, rec(first, "w1", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      StoreBatchResult won = store.apply(record(T0 + 60, rec(copy, "w2", Verdict.PASS)));
      assertThat(won.recordStatuses()).containsExactly(RecordStatus.RECORDED);
      assertThat(won.abandoned()).isEmpty();
      assertThat(endings(store, runId)).hasSize(2).first().asString().startsWith("1:w1:" + BatchRules.DROPPED_ENDING);
      assertThat(counters(store, runId).recorded()).isEqualTo(1);
    }
  }

  @Test
  void aBackupThatEndsAloneLeavesTheJobToItsOwnLeaseAndLaterTokensStayAboveIt() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(5), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2")));
      assertThat(store.apply(release(T0 + 20, lost(copy, T0 + 20))).releaseStatuses())
          .containsExactly(ReleaseStatus.DROPPED);
      assertThat(job(store, runId, first.jobId()).token()).isEqualTo(first.token());
      // The job's own lease ends too: now it goes back, and its next lease's token is above the backup's.
      assertThat(store.apply(release(T0 + 30, lost(first, T0 + 30))).releaseStatuses())
          .containsExactly(ReleaseStatus.RELEASED);
      Assignment again = store.apply(lease(T0 + 40, "w3", 1)).leases().get(0).get(0);
      assertThat(again.token()).isGreaterThan(copy.token());
      assertThat(again.attempt()).isEqualTo(3);
      assertThat(store.apply(record(T0 + 50, rec(copy, "w2", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      assertThat(store.apply(record(T0 + 60, rec(again, "w3", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.RECORDED);
      assertThat(counters(store, runId).redeliveries()).isEqualTo(1);
      assertThat(store.attempts(runId)).extracting(AttemptView::token).containsExactlyInAnyOrder(1L, 2L, 3L);
    }
  }

  @Test
  void theExpiryOfOneOfTwoLiveAttemptsDoesNotDisturbTheOther() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0); // expires at T0 + 60 s
      Assignment copy = issued(store.apply(backup(T0 + 10_000, first.jobId(), "w2"))); // T0 + 70 s
      // Only the backup's holder renews; the sweep after the first expiry ends the first attempt alone.
      store.apply(batch(T0 + 50_000, TEST_RUNS, List.of(), List.of(), List.of(),
          List.of(new RenewRequest(copy.jobId(), copy.token(), T0 + 200_000)), false));
      StoreBatchResult swept = store.apply(batch(T0 + 100_000, TEST_RUNS, List.of(), List.of(), List.of(), List.of(), true));
      assertThat(swept.expired()).containsExactly(new ExpiredLease(first.jobId(), first.token(), runId,
          InfraFailure.Kind.LEASE_EXPIRED, ReleaseStatus.DROPPED));
      assertThat(job(store, runId, first.jobId()).state()).isEqualTo(JobState.LEASED);
      assertThat(store.apply(record(T0 + 110_000, rec(copy, "w2", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.RECORDED);
      assertThat(counters(store, runId).redeliveries()).isZero();
    }
  }

  @Test
  void theExpiryOfABackupLeavesTheOriginalAttemptLive() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2"))); // expires at T0 + 60.01 s
      store.apply(batch(T0 + 50_000, TEST_RUNS, List.of(), List.of(), List.of(),
          List.of(new RenewRequest(first.jobId(), first.token(), T0 + 200_000)), false));
      StoreBatchResult swept = store.apply(batch(T0 + 100_000, TEST_RUNS, List.of(), List.of(), List.of(), List.of(), true));
      assertThat(swept.expired()).containsExactly(new ExpiredLease(copy.jobId(), copy.token(), runId,
          InfraFailure.Kind.LEASE_EXPIRED, ReleaseStatus.DROPPED));
      assertThat(store.apply(record(T0 + 110_000, rec(first, "w1", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.RECORDED);
      assertThat(job(store, runId, first.jobId()).token()).isEqualTo(first.token());
    }
  }

  @Test
  void aBackupIsIssuedOnlyForALeasedJobToAWorkerHoldingNoAttemptOfItAndOneAtATime() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(2));
      List<Assignment> leased = store.apply(lease(T0, "w1", 1)).leases().get(0);
      Assignment first = leased.get(0);
      assertThat(store.apply(backup(T0 + 1, first.jobId(), "w1")).backups()).containsExactly(java.util.Optional.empty());
      Assignment copy = issued(store.apply(backup(T0 + 2, first.jobId(), "w2")));
      assertThat(store.apply(backup(T0 + 3, first.jobId(), "w3")).backups())
          .as("at most %d backup per job", BatchRules.MAX_BACKUPS_PER_JOB).containsExactly(java.util.Optional.empty());
      long pendingJob = store.jobs(runId).stream().filter(j -> j.state() == JobState.PENDING).findFirst().orElseThrow().jobId();
      assertThat(store.apply(backup(T0 + 4, pendingJob, "w2")).backups()).containsExactly(java.util.Optional.empty());
      store.apply(record(T0 + 5, rec(copy, "w2", Verdict.PASS)));
      assertThat(store.apply(backup(T0 + 6, first.jobId(), "w3")).backups()).containsExactly(java.util.Optional.empty());
      assertThat(store.apply(backup(T0 + 7, 9_999, "w3")).backups()).containsExactly(java.util.Optional.empty());
      assertThat(counters(store, runId).backups()).as("only the one issued is counted").isEqualTo(1);
    }
  }

  @Test
  void aCancelEndsEveryLiveAttemptAndNamesEveryHolder() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2")));
      CancelResult cancel = store.apply(StoreBatch.builder(T0 + 20, TEST_RUNS, POLICY).cancel(runId).build())
          .cancels().get(0);
      assertThat(cancel.leases()).extracting(l -> l.token() + "/" + l.worker())
          .containsExactlyInAnyOrder(first.token() + "/w1", copy.token() + "/w2");
      assertThat(store.apply(record(T0 + 30, rec(copy, "w2", Verdict.PASS))).recordStatuses())
          .containsExactly(RecordStatus.FENCED);
      assertThat(endings(store, runId)).containsExactly("1:w1:" + BatchRules.CANCELLED_ENDING,
          "2:w2:" + BatchRules.CANCELLED_ENDING);
      assertThat(counters(store, runId).cancelled()).isEqualTo(1);
    }
  }

  @Test
  void aBackupsResponseIsJournalledUnderItsOwnLease() {
    try (Store store = newStore(dir)) {
      store.createRun(spec(3), cases(1));
      Assignment first = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      Assignment copy = issued(store.apply(backup(T0 + 10, first.jobId(), "w2")));
      assertThat(store.apply(journal(T0 + 20, entry(copy, DIGEST_A, "{\"a\":1}"))).journalStatuses())
          .containsExactly(dev.tally.core.JournalEntry.Status.STORED);
      store.apply(record(T0 + 30, rec(first, "w1", Verdict.PASS)));
      assertThat(store.apply(journal(T0 + 40, entry(copy, DIGEST_B, "{\"b\":1}"))).journalStatuses())
          .containsExactly(dev.tally.core.JournalEntry.Status.FENCED);
    }
  }

  /** A source of {@code n} generated cases that fails at {@code failAt} (or never, for -1), counting its pulls. */
  protected static final class Generated implements CaseSource {
    final int n;
    final int failAt;
    int pulled;

    Generated(int n, int failAt) {
      this.n = n;
      this.failAt = failAt;
    }

    @Override
    public CaseRecord next() throws CaseSourceException {
      if (pulled == failAt) {
        throw new CaseSourceException(name(), pulled + 1, "not valid JSON: injected");
      }
      if (pulled == n) {
        return null;
      }
      int i = pulled++;
      return new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}");
    }

    @Override
    public String name() {
      return "generated";
    }

    @Override
    public int lineOf(int position) {
      return position + 1;
    }
  }

  private static CaseSource lines(String text) {
    return CaseLines.of(new java.io.ByteArrayInputStream(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)),
        "request body");
  }

  @Test
  void createsARunFromASourceWithItsNameAndReadsItBackRunning() throws Exception {
    try (Store store = newStore(dir)) {
      CreatedRun created = store.createRun(new NewRun(spec(3), "nightly"), new Generated(5, -1), null);
      assertThat(created.response()).isNull();
      RunView run = store.run(created.run().runId()).orElseThrow();
      assertThat(run).isEqualTo(created.run());
      assertThat(run.name()).isEqualTo("nightly");
      assertThat(run.state()).isEqualTo(RunState.RUNNING);
      assertThat(run.counters()).isEqualTo(RunCounters.empty(5));
      assertThat(store.jobs(run.runId())).extracting(JobView::caseId).containsExactly("c0", "c1", "c2", "c3", "c4");
      CreatedRun empty = store.createRun(NewRun.of(spec(3)), new Generated(0, -1), null);
      assertThat(empty.run().state()).isEqualTo(RunState.FINISHED);
      assertThat(store.run(empty.run().runId()).orElseThrow().state()).isEqualTo(RunState.FINISHED);
    }
  }

  @Test
  void aBadCaseOrARepeatedIdWritesNothingAndSaysWhere() throws Exception {
    try (Store store = newStore(dir)) {
      long commits = store.commits();
      assertThatThrownBy(() -> store.createRun(NewRun.of(spec(3)), new Generated(10, 7), null))
          .isInstanceOf(CaseSourceException.class).hasMessage("generated line 8: not valid JSON: injected");
      assertThatThrownBy(() -> store.createRun(NewRun.of(spec(3)),
          lines("{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n"), null))
          .isInstanceOf(CaseSourceException.class)
          .hasMessage("request body line 4: duplicate id \"a\" (first on line 1)")
          .satisfies(e -> assertThat(((CaseSourceException) e).line()).isEqualTo(4));
      assertThat(store.runs()).isEmpty();
      assertThat(store.commits()).isEqualTo(commits);
      long runId = store.createRun(spec(3), cases(2));
      assertThat(store.jobs(runId)).hasSize(2);
    }
  }

  // ------------------------------------------------------------------------------------------------
  // idempotency keys

  private static final String SCOPE = IdempotencyRules.scopeOf(dev.tally.core.security.Secret.of("token-1", "API token"));
  private static final Duration TTL = Duration.ofHours(24);

  private static KeyCompletion completion(String key, String token, String fingerprint) {
    return new KeyCompletion(SCOPE, key, token, () -> fingerprint, TTL,
        run -> new StoredResponse(201, "application/json", Map.of("Location", "/api/v1/runs/" + run.runId()),
            ("{\"id\":" + run.runId() + ",\"name\":\"" + run.name() + "\"}").getBytes(java.nio.charset.StandardCharsets.UTF_8)));
  }

  private static String claimed(KeyClaim claim) {
    assertThat(claim).isInstanceOf(KeyClaim.Claimed.class);
    return ((KeyClaim.Claimed) claim).reservationToken();
  }

  @Test
  void aKeyIsClaimedOnceHeldWhileInProgressAndReplayedOnceCompletedWithTheRunInOneTransaction() throws Exception {
    try (Store store = newStore(dir)) {
      String token = claimed(store.claimKey(SCOPE, "k1", null, T0, T0 + 30_000));
      assertThat(store.claimKey(SCOPE, "k1", null, T0 + 1, T0 + 30_001)).isEqualTo(new KeyClaim.InProgress(T0 + 30_000));
      assertThat(claimed(store.claimKey(IdempotencyRules.scopeOf(dev.tally.core.security.Secret.of("token-2", "API token")), "k1", null, T0, T0 + 30_000)))
          .as("another credential's key of the same name is another key").isNotEqualTo(token);

      CreatedRun created = store.createRun(new NewRun(spec(3), "n"), new Generated(3, -1), completion("k1", token, "fp-1"));
      long runId = created.run().runId();
      assertThat(created.response().status()).isEqualTo(201);
      assertThat(new String(created.response().body(), java.nio.charset.StandardCharsets.UTF_8))
          .isEqualTo("{\"id\":" + runId + ",\"name\":\"n\"}");

      KeyClaim again = store.claimKey(SCOPE, "k1", "fp-1", T0 + 2, T0 + 30_002);
      assertThat(again).isEqualTo(new KeyClaim.Completed("fp-1", runId, created.response()));
      assertThat(((KeyClaim.Completed) again).response().headers()).containsEntry("Location", "/api/v1/runs/" + runId);
      assertThat(store.runs()).hasSize(1);
    }
    try (Store store = newStore(dir)) {
      assertThat(store.claimKey(SCOPE, "k1", null, T0 + 3, T0 + 30_003)).as("durable").isInstanceOf(KeyClaim.Completed.class);
    }
  }

  @Test
  void anExpiredCompletedKeyIsANewKey() throws Exception {
    try (Store store = newStore(dir)) {
      long now = System.currentTimeMillis(); // the store stamps completion with its own clock
      String token = claimed(store.claimKey(SCOPE, "k", null, now, now + 30_000));
      store.createRun(NewRun.of(spec(3)), new Generated(1, -1), completion("k", token, "fp"));
      long expired = now + TTL.toMillis() + 60_000;
      String again = claimed(store.claimKey(SCOPE, "k", "fp-2", expired, expired + 30_000));
      assertThat(again).isNotEqualTo(token);
      assertThat(store.createRun(NewRun.of(spec(3)), new Generated(1, -1), completion("k", again, "fp-2")).run().runId())
          .isEqualTo(2);
    }
  }

  @Test
  void aHoldThatPassedIsTakenOverAndTheFirstHoldersCompletionWritesNothing() throws Exception {
    try (Store store = newStore(dir)) {
      String first = claimed(store.claimKey(SCOPE, "k", null, T0, T0 + 30_000));
      assertThat(store.renewKey(SCOPE, "k", first, T0 + 40_000)).isTrue();
      assertThat(store.claimKey(SCOPE, "k", null, T0 + 35_000, T0 + 65_000)).isInstanceOf(KeyClaim.InProgress.class);
      String second = claimed(store.claimKey(SCOPE, "k", null, T0 + 40_000, T0 + 70_000));
      assertThat(second).isNotEqualTo(first);
      assertThat(store.renewKey(SCOPE, "k", first, T0 + 80_000)).as("the first holder lost it").isFalse();

      long commits = store.commits();
      Generated cases = new Generated(50, -1);
      assertThatThrownBy(() -> store.createRun(NewRun.of(spec(3)), cases, completion("k", first, "fp")))
          .isInstanceOf(KeyReservationLostException.class).hasMessageContaining("'k'");
      assertThat(store.runs()).as("nothing of the lost request's run").isEmpty();
      assertThat(store.commits()).isEqualTo(commits);

      store.createRun(NewRun.of(spec(3)), new Generated(2, -1), completion("k", second, "fp"));
      assertThat(store.runs()).hasSize(1);
    }
  }

  @Test
  void aReleasedKeyIsFreeAndOnlyItsHolderReleasesIt() {
    try (Store store = newStore(dir)) {
      String token = claimed(store.claimKey(SCOPE, "k", null, T0, T0 + 30_000));
      store.releaseKey(SCOPE, "k", "someone else's token");
      assertThat(store.claimKey(SCOPE, "k", null, T0 + 1, T0 + 30_001)).isInstanceOf(KeyClaim.InProgress.class);
      store.releaseKey(SCOPE, "k", token);
      claimed(store.claimKey(SCOPE, "k", null, T0 + 2, T0 + 30_002));
    }
  }

  @Test
  void purgingDeletesExpiredKeysAndHoldsLongPastTheirEndAndAStartReleasesEveryHold() throws Exception {
    try (Store store = newStore(dir)) {
      long now = System.currentTimeMillis();
      String done = claimed(store.claimKey(SCOPE, "done", null, now, now + 30_000));
      store.createRun(NewRun.of(spec(3)), new Generated(1, -1), completion("done", done, "fp"));
      claimed(store.claimKey(SCOPE, "dead", null, now, now + 30_000));
      claimed(store.claimKey(SCOPE, "live", null, now, now + 2 * TTL.toMillis()));
      assertThat(store.purgeKeys(now + 60_000)).isZero();
      long later = now + IdempotencyRules.PURGE_GRACE.toMillis() + 60_000;
      assertThat(store.purgeKeys(later)).as("the dead request's hold").isEqualTo(1);
      assertThat(store.purgeKeys(now + TTL.toMillis() + 60_000)).as("the completed key past its time to live").isEqualTo(1);
      assertThat(store.releaseHeldKeys()).as("the live hold, at a coordinator's start").isEqualTo(1);
      claimed(store.claimKey(SCOPE, "live", null, now, now + 30_000));
    }
  }

  @Test
  void aKeyThatIsNotPrintableAsciiOrTooLongIsRefused() {
    try (Store store = newStore(dir)) {
      assertThatThrownBy(() -> store.claimKey(SCOPE, "", null, T0, T0 + 1)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.claimKey(SCOPE, "k".repeat(IdempotencyRules.MAX_KEY_CHARS + 1), null, T0, T0 + 1))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> store.claimKey(SCOPE, "caf\u00e9", null, T0, T0 + 1)).isInstanceOf(IllegalArgumentException.class);
      claimed(store.claimKey(SCOPE, "k".repeat(IdempotencyRules.MAX_KEY_CHARS), null, T0, T0 + 1));
    }
  }

  // ------------------------------------------------------------------------------------------------
  // cancel

  @Test
  void cancellingARunEndsItsPendingAndLeasedJobsFencesLateResultsAndIsOneCancelHoweverOftenAsked() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(5));
      List<Assignment> got = store.apply(lease(T0, "w1", 3)).leases().get(0);
      store.apply(record(T0 + 1, rec(got.get(0), "w1", Verdict.PASS)));

      StoreBatchResult r = store.apply(new StoreBatch(T0 + 2, TEST_RUNS, POLICY, List.of(), List.of(),
          List.of(new LeaseRequest("w2", 10, EXPIRY)), List.of(), null, false, List.of(runId)));
      CancelResult cancel = r.cancels().get(0);
      assertThat(cancel.status()).isEqualTo(CancelResult.Status.CANCELLED);
      assertThat(cancel.pendingCancelled()).isEqualTo(2);
      assertThat(cancel.leases()).extracting(CancelResult.CancelledLease::jobId)
          .containsExactly(got.get(1).jobId(), got.get(2).jobId());
      assertThat(cancel.leases()).extracting(CancelResult.CancelledLease::worker).containsOnly("w1");
      assertThat(r.leases().get(0)).as("nothing of a cancelled run is leased").isEmpty();
      assertThat(r.counters().get(runId)).isEqualTo(RunCounters.builder(5).passed(1).cancelled(4).scores(1, 1, 1).build());

      RunView run = store.run(runId).orElseThrow();
      assertThat(run.state()).isEqualTo(RunState.CANCELLED);
      assertThat(run.finishedAtMillis()).isEqualTo(T0 + 2);
      assertThat(store.jobs(runId)).extracting(JobView::state).containsExactly(JobState.DONE, JobState.CANCELLED,
          JobState.CANCELLED, JobState.CANCELLED, JobState.CANCELLED);
      assertThat(store.attempts(runId)).filteredOn(a -> a.ending().equals(BatchRules.CANCELLED_ENDING))
          .extracting(AttemptView::jobId).containsExactly(got.get(1).jobId(), got.get(2).jobId());

      StoreBatchResult late = store.apply(record(T0 + 3, rec(got.get(1), "w1", Verdict.PASS)));
      assertThat(late.recordStatuses()).containsExactly(RecordStatus.FENCED);
      assertThat(counters(store, runId).staleResultsFenced()).isEqualTo(1);
      assertThat(counters(store, runId).passed()).isEqualTo(1);

      assertThat(store.cancelRun(runId, T0 + 4).status()).isEqualTo(CancelResult.Status.ALREADY_CANCELLED);
      assertThat(store.run(runId).orElseThrow().finishedAtMillis()).isEqualTo(T0 + 2);
      assertThat(store.cancelRun(runId + 100, T0 + 4).status()).isEqualTo(CancelResult.Status.NO_SUCH_RUN);
    }
  }

  @Test
  void aFinishedRunIsNotCancelledAndARunNoSchedulerServesIsCancelledInTheStore() {
    try (Store store = newStore(dir)) {
      long done = store.createRun(spec(3), cases(1));
      Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      store.apply(record(T0 + 1, rec(a, "w1", Verdict.FAIL)));
      assertThat(store.cancelRun(done, T0 + 2).status()).isEqualTo(CancelResult.Status.FINISHED);
      assertThat(store.run(done).orElseThrow().state()).isEqualTo(RunState.FINISHED);

      long idle = store.createRun(spec(3), cases(3));
      CancelResult r = store.cancelRun(idle, T0 + 3);
      assertThat(r.status()).isEqualTo(CancelResult.Status.CANCELLED);
      assertThat(r.pendingCancelled()).isEqualTo(3);
      assertThat(store.run(idle).orElseThrow().counters()).isEqualTo(RunCounters.builder(3).cancelled(3).build());
    }
  }

  // ------------------------------------------------------------------------------------------------
  // fair share

  @Test
  void aSmallRunSubmittedAfterABigOneGetsItsShareInTheFirstRequestAfterItsActivation() {
    try (Store store = newStore(dir)) {
      long big = store.createRun(spec(3), cases(1_000));
      assertThat(store.apply(batch(T0, List.of(big), List.of(), List.of(), List.of(new LeaseRequest("w1", 8, EXPIRY))))
          .leases().get(0)).hasSize(8);
      long small = store.createRun(spec(3), cases(10));
      List<Assignment> next = store.apply(batch(T0 + 1, List.of(big, small), List.of(), List.of(),
          List.of(new LeaseRequest("w2", 8, EXPIRY)))).leases().get(0);
      assertThat(next).as("the small run has none leased: every slot of the next request is its")
          .extracting(Assignment::runId).containsOnly(small).hasSize(8);
      List<Assignment> after = store.apply(batch(T0 + 2, List.of(big, small), List.of(), List.of(),
          List.of(new LeaseRequest("w3", 6, EXPIRY)))).leases().get(0);
      assertThat(after).as("8 and 8 leased: the slots are split, and the small run's last 2 leave the rest to the big one")
          .extracting(Assignment::runId).containsExactly(big, big, big, big, small, small);
    }
  }

  @Test
  void twoFreshRunsShareOneRequestEvenly() {
    try (Store store = newStore(dir)) {
      long first = store.createRun(spec(3), cases(100));
      long second = store.createRun(spec(3), cases(100));
      List<Assignment> got = store.apply(batch(T0, List.of(first, second), List.of(), List.of(),
          List.of(new LeaseRequest("w1", 7, EXPIRY)))).leases().get(0);
      assertThat(got.stream().filter(a -> a.runId() == first).count()).isEqualTo(4);
      assertThat(got.stream().filter(a -> a.runId() == second).count()).isEqualTo(3);
    }
  }

  // ------------------------------------------------------------------------------------------------
  // paged reads

  /** Regression: ?verdict=error left out the cases out of attempts, which results.jsonl and the counts call errors. */
  @Test
  void theVerdictFilterSelectsCasesByTheirReportedVerdict() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), cases(3));
      List<Assignment> got = store.apply(batch(T0, List.of(runId), List.of(), List.of(),
          List.of(new LeaseRequest("w1", 2, EXPIRY)))).leases().get(0);
      store.apply(batch(T0 + 1, List.of(runId), List.of(rec(got.get(0), "w1", Verdict.ERROR)), List.of(), List.of()));
      assertThat(store.releaseLeases(runId, T0 + 2, RedeliveryPolicy.defaults())).as("c1 out of its one attempt").isEqualTo(1);
      store.cancelRun(runId, T0 + 3);
      List<JobView> jobs = store.jobs(runId);
      assertThat(jobs).extracting(JobView::reportedVerdict).containsExactly("error", "error", JobView.CANCELLED);
      assertThat(jobs).extracting(JobView::state).containsExactly(JobState.DONE, JobState.FAILED, JobState.CANCELLED);
      assertThat(store.cases(runId, new CaseQuery(Verdict.ERROR, null, -1, 10))).extracting(c -> c.job().caseId())
          .containsExactly("c0", "c1");
      assertThat(store.cases(runId, new CaseQuery(Verdict.PASS, null, -1, 10))).isEmpty();
      // The in-memory filter (CaseQuery.matches) says the same of every job.
      CaseQuery errors = new CaseQuery(Verdict.ERROR, null, -1, 10);
      assertThat(jobs.stream().filter(errors::matches)).extracting(JobView::caseId).containsExactly("c0", "c1");
    }
  }

  @Test
  void pagesRunsNewestFirstAndCasesInDatasetOrderWithFilters() {
    try (Store store = newStore(dir)) {
      for (int i = 0; i < 5; i++) {
        store.createRun(spec(3), cases(1));
      }
      assertThat(store.runs(RunPage.first(2))).extracting(RunView::runId).containsExactly(5L, 4L);
      assertThat(store.runs(new RunPage(4, 2))).extracting(RunView::runId).containsExactly(3L, 2L);
      assertThat(store.runs(new RunPage(2, 1_000))).extracting(RunView::runId).containsExactly(1L);
      assertThatThrownBy(() -> new RunPage(1, RunPage.MAX_LIMIT + 1)).isInstanceOf(IllegalArgumentException.class);

      long runId = store.createRun(spec(3), cases(6));
      List<Assignment> got = store.apply(batch(T0, List.of(runId), List.of(), List.of(),
          List.of(new LeaseRequest("w1", 4, EXPIRY)))).leases().get(0);
      store.apply(batch(T0 + 1, List.of(runId), List.of(
          new RecordRequest(got.get(0).jobId(), got.get(0).token(), "w1", outcome(Verdict.PASS), new AttemptTiming(9, 3, 5)),
          rec(got.get(1), "w1", Verdict.FAIL), rec(got.get(2), "w1", Verdict.PASS)), List.of(), List.of()));

      List<CaseView> page = store.cases(runId, CaseQuery.first(2));
      assertThat(page).extracting(c -> c.job().caseId()).containsExactly("c0", "c1");
      assertThat(page.get(0).timing()).isEqualTo(new AttemptTiming(9, 3, 5));
      assertThat(store.cases(runId, new CaseQuery(null, null, page.get(1).job().position(), 1_000)))
          .extracting(c -> c.job().caseId()).containsExactly("c2", "c3", "c4", "c5");
      assertThat(store.cases(runId, new CaseQuery(Verdict.PASS, null, -1, 10))).extracting(c -> c.job().caseId())
          .containsExactly("c0", "c2");
      assertThat(store.cases(runId, new CaseQuery(null, JobState.LEASED, -1, 10))).extracting(c -> c.job().caseId())
          .containsExactly("c3");
      assertThat(store.cases(runId, new CaseQuery(null, JobState.PENDING, -1, 10))).extracting(c -> c.timing())
          .containsOnly(AttemptTiming.NONE);
      assertThat(store.cases(runId + 1, CaseQuery.first(10))).isEmpty();

      store.apply(release(T0 + 2, lost(got.get(3), T0)));
      assertThat(store.attempts(runId, "c3").orElseThrow()).extracting(AttemptView::ending).containsExactly("worker_lost");
      assertThat(store.attempts(runId, "c0").orElseThrow()).extracting(AttemptView::ending).containsExactly("recorded");
      assertThat(store.attempts(runId, "nope")).as("no such case").isEmpty();
    }
  }

  @Test
  void aLateResultIsNotedOnTheAttemptItBelongedTo() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(2));
      List<Assignment> got = store.apply(lease(T0, "w1", 2)).leases().get(0);
      store.apply(batch(T0 + 1, List.of(runId), List.of(rec(got.get(0), "w1", Verdict.PASS)), List.of(), List.of()));
      store.apply(batch(T0 + 2, List.of(runId), List.of(rec(got.get(0), "w1", Verdict.PASS)), List.of(), List.of()));
      store.apply(release(T0 + 3, lost(got.get(1), T0)));
      store.apply(batch(T0 + 4, List.of(runId), List.of(rec(got.get(1), "w1", Verdict.FAIL)), List.of(), List.of()));

      AttemptView recorded = store.attempts(runId, got.get(0).caseId()).orElseThrow().get(0);
      assertThat(recorded.ending()).isEqualTo("recorded");
      assertThat(recorded.duplicateResults()).as("its result came twice").isEqualTo(1);
      assertThat(recorded.fencedResults()).isZero();
      AttemptView lostOne = store.attempts(runId, got.get(1).caseId()).orElseThrow().get(0);
      assertThat(lostOne.ending()).isEqualTo("worker_lost");
      assertThat(lostOne.fencedResults()).as("its result came after the lease ended").isEqualTo(1);
      assertThat(lostOne.duplicateResults()).isZero();
      RunCounters c = store.run(runId).orElseThrow().counters();
      assertThat(c.duplicatesSuppressed()).isEqualTo(1);
      assertThat(c.staleResultsFenced()).isEqualTo(1);
    }
  }

  @Test
  void findsCasesByTextInTheirIdAndByAttemptsAndCountsWhenCasesEnded() {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(1), List.of(new CaseRecord(0, "math/Algebra-1", "{\"id\":\"math/Algebra-1\"}"),
          new CaseRecord(1, "math/geometry-2", "{\"id\":\"math/geometry-2\"}"), new CaseRecord(2, "law_100%", "{\"id\":\"law_100%\"}"),
          new CaseRecord(3, "algebra-3", "{\"id\":\"algebra-3\"}")));
      assertThat(store.cases(runId, new CaseQuery(null, null, -1, 10, "ALGEBRA", 0))).as("ASCII case ignored")
          .extracting(c -> c.job().caseId()).containsExactly("math/Algebra-1", "algebra-3");
      assertThat(store.cases(runId, new CaseQuery(null, null, -1, 10, "_100%", 0))).as("a literal search, no wildcards")
          .extracting(c -> c.job().caseId()).containsExactly("law_100%");
      assertThat(store.cases(runId, new CaseQuery(null, null, -1, 10, "0_", 0))).isEmpty();

      List<Assignment> got = store.apply(batch(T0, List.of(runId), List.of(), List.of(),
          List.of(new LeaseRequest("w1", 4, EXPIRY)))).leases().get(0);
      store.apply(batch(T0 + 1, List.of(runId), List.of(rec(got.get(0), "w1", Verdict.PASS), rec(got.get(1), "w1", Verdict.FAIL),
          rec(got.get(2), "w1", Verdict.ERROR)), List.of(), List.of()));
      store.apply(release(T0 + 2, lost(got.get(3), T0))); // out of its one attempt: failed
      assertThat(store.cases(runId, new CaseQuery(null, null, -1, 10, null, 1))).hasSize(4);
      assertThat(store.cases(runId, new CaseQuery(null, null, -1, 10, null, 2))).isEmpty();
      assertThatThrownBy(() -> new CaseQuery(null, null, -1, 10, "", 0)).isInstanceOf(IllegalArgumentException.class);

      List<ProgressBucket> spans = store.progress(runId, 60_000);
      assertThat(spans).extracting(ProgressBucket::index).isSorted();
      assertThat(spans.stream().mapToLong(ProgressBucket::passed).sum()).isEqualTo(1);
      assertThat(spans.stream().mapToLong(ProgressBucket::failed).sum()).isEqualTo(1);
      assertThat(spans.stream().mapToLong(ProgressBucket::errored).sum()).as("an error verdict and a failed job").isEqualTo(2);
      assertThat(store.progress(runId + 1, 1_000)).isEmpty();
      assertThatThrownBy(() -> store.progress(runId, 0)).isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void rollsBackTheWholeBatchWhenItFailsHalfway() throws Exception {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(3));
      List<Assignment> got = store.apply(lease(T0, "w1", 2)).leases().get(0);
      long commits = store.commits();
      StoreBatch batch = batch(T0 + 1, TEST_RUNS, List.of(rec(got.get(0), "w1", Verdict.PASS)),
          List.of(lost(got.get(1), T0)), List.of(new LeaseRequest("w2", 5, EXPIRY)));

      try (AutoCloseable fault = failLeasesIn(dir)) {
        assertThatThrownBy(() -> store.apply(batch)).isInstanceOf(StoreException.class).hasMessageContaining("apply");
      }

      assertThat(store.commits()).isEqualTo(commits);
      assertThat(counters(store, runId)).isEqualTo(RunCounters.builder(3).build());
      assertThat(store.jobs(runId)).extracting(JobView::state)
          .containsExactly(JobState.LEASED, JobState.LEASED, JobState.PENDING);
      assertThat(store.attempts(runId)).isEmpty();

      // With the fault gone the same batch applies in full: the failure left nothing half-done behind.
      StoreBatchResult r = store.apply(batch);
      assertThat(r.recordStatuses()).containsExactly(RecordStatus.RECORDED);
      assertThat(r.releaseStatuses()).containsExactly(ReleaseStatus.RELEASED);
      assertThat(r.leases().get(0)).extracting(Assignment::caseId).containsExactly("c1", "c2");
      assertThat(store.commits()).isEqualTo(commits + 1);
    }
  }

  @Test
  void countsCommittedWriteTransactions() {
    try (Store store = newStore(dir)) {
      assertThat(store.commits()).isZero();
      store.createRun(spec(3), cases(2));
      store.apply(lease(T0, "w1", 1));
      assertThat(store.commits()).isEqualTo(2);
    }
  }

  @Test
  void refusesWorkAfterClose() {
    Store store = newStore(dir);
    store.close();
    store.close();
    assertThatThrownBy(() -> store.apply(lease(T0, "w1", 1))).isInstanceOf(StoreException.class);
    assertThatThrownBy(store::runs).isInstanceOf(StoreException.class);
  }

  // ------------------------------------------------------------------------------------------------
  // property: random interleavings keep the invariants

  /** One step of a scenario; {@code pick} selects among the leases issued so far. */
  sealed interface Op permits LeaseOp, RecordOp, ReleaseOp, RestartOp {}

  record LeaseOp(int worker, int max) implements Op {}

  /** {@code tokenShift} 0 reports the issued token; others report a token that was never issued. */
  record RecordOp(int pick, Verdict verdict, int tokenShift) implements Op {}

  record ReleaseOp(int pick, InfraFailure.Kind kind, int backoff) implements Op {}

  /** The coordinator restarts: close, reopen, release every lease. */
  record RestartOp() implements Op {}

  @Provide
  Arbitrary<List<List<Op>>> scenarios() {
    Arbitrary<Op> lease = Combinators.combine(Arbitraries.integers().between(0, 2), Arbitraries.integers().between(1, 4))
        .as(LeaseOp::new);
    Arbitrary<Op> record = Combinators.combine(Arbitraries.integers().between(0, 1_000),
            Arbitraries.of(Verdict.class), Arbitraries.of(0, 0, 0, 0, -1, 1))
        .as(RecordOp::new);
    Arbitrary<Op> release = Combinators.combine(Arbitraries.integers().between(0, 1_000),
            Arbitraries.of(InfraFailure.Kind.WORKER_LOST, InfraFailure.Kind.WORKER_LOST, InfraFailure.Kind.TIMEOUT,
                InfraFailure.Kind.HANDED_BACK), Arbitraries.integers().between(0, 3))
        .as(ReleaseOp::new);
    Arbitrary<Op> restart = Arbitraries.just(new RestartOp());
    Arbitrary<Op> op = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(4, lease), net.jqwik.api.Tuple.of(5, record), net.jqwik.api.Tuple.of(2, release),
        net.jqwik.api.Tuple.of(1, restart));
    return op.list().ofMinSize(1).ofMaxSize(6).list().ofMinSize(1).ofMaxSize(25);
  }

  /** The model's view of one job. */
  private static final class ModelJob {
    JobState state = JobState.PENDING;
    long token;
    int attempts;
    int timeouts;
    long notBefore;
    int position;
    String owner;
    String lastWorker;
  }

  @Property(tries = 40)
  void randomInterleavingsKeepTheInvariants(@ForAll("scenarios") List<List<Op>> scenario) throws IOException {
    int maxAttempts = 3;
    Path home = Files.createTempDirectory("tally-store-property");
    Store store = newStore(home);
    try {
      long runId = store.createRun(spec(maxAttempts), cases(6));
      Map<Long, ModelJob> model = new HashMap<>();
      List<JobView> initial = store.jobs(runId);
      for (JobView j : initial) {
        ModelJob m = new ModelJob();
        m.position = j.position();
        model.put(j.jobId(), m);
      }
      List<Assignment> issued = new ArrayList<>();
      long passed = 0;
      long failed = 0;
      long errored = 0;
      long jobsFailed = 0;
      long duplicates = 0;
      long fenced = 0;
      long redeliveries = 0;
      long now = T0;

      for (List<Op> step : scenario) {
        now += step.size() % 3;
        if (step.get(0) instanceof RestartOp) {
          store.close();
          store = newStore(home);
          int released = store.releaseLeases(runId, now, POLICY);
          int expected = 0;
          for (ModelJob m : model.values()) {
            if (m.state == JobState.LEASED) {
              expected++;
              if (m.attempts >= maxAttempts) {
                m.state = JobState.FAILED;
                jobsFailed++;
              } else {
                m.state = JobState.PENDING;
                m.notBefore = now;
                m.lastWorker = m.owner;
                redeliveries++;
              }
            }
          }
          assertThat(released).isEqualTo(expected);
          continue;
        }
        List<RecordRequest> records = new ArrayList<>();
        List<RecordStatus> expectedRecords = new ArrayList<>();
        List<ReleaseRequest> releases = new ArrayList<>();
        List<ReleaseStatus> expectedReleases = new ArrayList<>();
        List<LeaseRequest> leases = new ArrayList<>();
        // Build the model's expectations in the store's order: records, then releases, then leases.
        for (Op op : step) {
          if (op instanceof RecordOp r && !issued.isEmpty()) {
            Assignment a = issued.get(r.pick() % issued.size());
            long token = a.token() + r.tokenShift();
            records.add(new RecordRequest(a.jobId(), token, "w", outcome(r.verdict())));
          }
        }
        for (RecordRequest r : records) {
          ModelJob m = model.get(r.jobId());
          if (m.state == JobState.LEASED && m.token == r.token()) {
            m.state = JobState.DONE;
            expectedRecords.add(RecordStatus.RECORDED);
            switch (r.outcome().verdict()) {
              case PASS -> passed++;
              case FAIL -> failed++;
              case ERROR -> errored++;
            }
          } else if (m.state == JobState.DONE && m.token == r.token()) {
            expectedRecords.add(RecordStatus.DUPLICATE);
            duplicates++;
          } else {
            expectedRecords.add(RecordStatus.FENCED);
            fenced++;
          }
        }
        for (Op op : step) {
          if (op instanceof ReleaseOp r && !issued.isEmpty()) {
            Assignment a = issued.get(r.pick() % issued.size());
            releases.add(new ReleaseRequest(a.jobId(), a.token(), new InfraFailure(r.kind(), "x"), now + r.backoff()));
          }
        }
        for (ReleaseRequest r : releases) {
          ModelJob m = model.get(r.jobId());
          if (m.state == JobState.LEASED && m.token == r.token()) {
            // The default policy, as a model: a hand-back is free and never ends a job; a timeout ends it
            // past one retry; otherwise the attempt limit decides.
            InfraFailure.Kind kind = r.failure().kind();
            if (kind == InfraFailure.Kind.HANDED_BACK) {
              m.attempts--;
            } else if (kind == InfraFailure.Kind.TIMEOUT) {
              m.timeouts++;
            }
            boolean terminal = kind != InfraFailure.Kind.HANDED_BACK
                && (m.attempts >= maxAttempts || m.timeouts > RedeliveryPolicy.AttemptLimits.DEFAULT_TIMEOUT_RETRIES);
            if (terminal) {
              m.state = JobState.FAILED;
              jobsFailed++;
              expectedReleases.add(ReleaseStatus.FAILED);
            } else {
              m.state = JobState.PENDING;
              m.notBefore = r.notBeforeMillis();
              m.lastWorker = m.owner;
              redeliveries++;
              expectedReleases.add(ReleaseStatus.RELEASED);
            }
          } else {
            expectedReleases.add(ReleaseStatus.STALE);
          }
        }
        for (Op op : step) {
          if (op instanceof LeaseOp l) {
            leases.add(new LeaseRequest("w" + l.worker(), l.max(), now + 1_000));
          }
        }
        long stepNow = now;
        List<List<Long>> expectedLeases = new ArrayList<>();
        // The store's two passes: each worker first takes what did not last run on it, then whoever
        // still has room takes the rest (its own retries included).
        for (LeaseRequest l : leases) {
          expectedLeases.add(new ArrayList<>(modelLease(model, l.worker(), l.maxJobs(), stepNow, true)));
        }
        for (int i = 0; i < leases.size(); i++) {
          int wanted = leases.get(i).maxJobs() - expectedLeases.get(i).size();
          if (wanted > 0) {
            List<Long> more = modelLease(model, leases.get(i).worker(), wanted, stepNow, false);
            expectedLeases.get(i).addAll(more);
            if (more.size() < wanted) {
              break;
            }
          }
        }

        StoreBatchResult result = store.apply(batch(now, TEST_RUNS, records, releases, leases));

        assertThat(result.recordStatuses()).isEqualTo(expectedRecords);
        assertThat(result.releaseStatuses()).isEqualTo(expectedReleases);
        assertThat(result.leases()).hasSameSizeAs(expectedLeases);
        for (int i = 0; i < expectedLeases.size(); i++) {
          List<Assignment> got = result.leases().get(i);
          assertThat(got).extracting(Assignment::jobId).isEqualTo(expectedLeases.get(i));
          for (Assignment a : got) {
            assertThat(a.token()).isEqualTo(model.get(a.jobId()).token);
            assertThat(a.attempt()).isEqualTo(model.get(a.jobId()).attempts);
          }
          issued.addAll(got);
        }
        RunCounters expected = RunCounters.builder(6).passed(passed).failed(failed).errored(errored).jobsFailed(jobsFailed).duplicatesSuppressed(duplicates).staleResultsFenced(fenced).redeliveries(redeliveries).scores(passed, passed, passed).build();
        if (result.counters().containsKey(runId)) {
          assertThat(result.counters().get(runId)).isEqualTo(expected);
        }
        checkInvariants(store, runId, model, expected);
      }
      checkInvariants(store, runId, model,
          RunCounters.builder(6).passed(passed).failed(failed).errored(errored).jobsFailed(jobsFailed).duplicatesSuppressed(duplicates).staleResultsFenced(fenced).redeliveries(redeliveries).scores(passed, passed, passed).build());
    } finally {
      store.close();
      deleteRecursively(home);
    }
  }

  /** The model's lease: pending jobs past their backoff, in dataset order, perhaps not this worker's retries. */
  private static List<Long> modelLease(Map<Long, ModelJob> model, String worker, int max, long now, boolean avoidOwn) {
    List<Long> ids = model.entrySet().stream()
        .filter(e -> e.getValue().state == JobState.PENDING && e.getValue().notBefore <= now)
        .filter(e -> !avoidOwn || !worker.equals(e.getValue().lastWorker))
        .sorted(Comparator.comparingInt(e -> e.getValue().position))
        .limit(max)
        .map(Map.Entry::getKey)
        .toList();
    for (long id : ids) {
      ModelJob m = model.get(id);
      m.state = JobState.LEASED;
      m.token++;
      m.attempts++;
      m.owner = worker;
    }
    return ids;
  }

  /** I1/I2 as read back: counters equal the jobs table, never exceed the total, one state per job. */
  private static void checkInvariants(Store store, long runId, Map<Long, ModelJob> model, RunCounters expected) {
    RunView run = store.run(runId).orElseThrow();
    List<JobView> jobs = store.jobs(runId);
    assertThat(run.counters()).isEqualTo(expected);
    long done = jobs.stream().filter(j -> j.state() == JobState.DONE).count();
    long failed = jobs.stream().filter(j -> j.state() == JobState.FAILED).count();
    assertThat(run.counters().recorded()).isEqualTo(done);
    assertThat(run.counters().jobsFailed()).isEqualTo(failed);
    assertThat(run.counters().recorded() + run.counters().jobsFailed()).isLessThanOrEqualTo(run.counters().total());
    assertThat(run.ended()).isEqualTo(done + failed == jobs.size());
    for (JobView j : jobs) {
      ModelJob m = model.get(j.jobId());
      assertThat(j.state()).as("state of job %d", j.jobId()).isEqualTo(m.state);
      assertThat(j.token()).isEqualTo(m.token);
      assertThat(j.outcome() != null).isEqualTo(j.state() == JobState.DONE);
      assertThat(j.failureReason() != null).isEqualTo(j.state() == JobState.FAILED);
    }
    // Each ended attempt is recorded once, and a job has at most one 'recorded' attempt.
    List<AttemptView> attempts = store.attempts(runId);
    assertThat(attempts.stream().map(a -> a.jobId() + "/" + a.token())).doesNotHaveDuplicates();
    assertThat(attempts.stream().filter(a -> a.ending().equals("recorded")).count()).isEqualTo(done);
  }

  private static void deleteRecursively(Path root) throws IOException {
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  // ------------------------------------------------------------------------------------------------
  // the leader row and epoch-fenced writes

  /** Takes the lead of {@code store} as {@code holder} the way a coordinator does: read, swap, write as the epoch. */
  protected static long lead(Store store, String holder) {
    dev.tally.core.lead.LeaderRead read = store.leader();
    dev.tally.core.lead.LeaderRow next = new dev.tally.core.lead.LeaderRow(read.row().epoch() + 1, holder,
        "workers=127.0.0.1:7070", read.storeNowMillis() + 3_000);
    assertThat(store.swapLeader(read.row(), next)).as(holder + " takes the lead").isTrue();
    store.writeAs(next.epoch());
    return next.epoch();
  }

  @Test
  void aNewStoreHasNoLeaderAndItsWritesAreNotFenced() {
    try (Store store = newStore(dir)) {
      assertThat(store.leader().row()).isEqualTo(dev.tally.core.lead.LeaderRow.NONE);
      assertThat(store.writeEpoch()).isEqualTo(Store.UNFENCED);
      assertThat(store.createRun(spec(3), cases(1))).isPositive();
    }
  }

  @Test
  void twoCoordinatorsSwappingTheSameRowLeadOneAtATime() {
    try (Store a = newStore(dir); Store b = newStore(dir)) {
      dev.tally.core.lead.LeaderRow seen = a.leader().row();
      dev.tally.core.lead.LeaderRow byA = new dev.tally.core.lead.LeaderRow(1, "a", null, T0);
      dev.tally.core.lead.LeaderRow byB = new dev.tally.core.lead.LeaderRow(1, "b", null, T0);
      assertThat(a.swapLeader(seen, byA)).isTrue();
      assertThat(b.swapLeader(seen, byB)).as("b read the row before a swapped it").isFalse();
      assertThat(b.leader().row()).isEqualTo(byA);
      // a renews: same epoch, later expiry; b, holding a's old row, cannot take over with it.
      dev.tally.core.lead.LeaderRow renewed = new dev.tally.core.lead.LeaderRow(1, "a", null, T0 + 1_000);
      assertThat(a.swapLeader(byA, renewed)).isTrue();
      assertThat(b.swapLeader(byA, new dev.tally.core.lead.LeaderRow(2, "b", null, T0 + 2_000))).isFalse();
      assertThat(b.swapLeader(renewed, new dev.tally.core.lead.LeaderRow(2, "b", null, T0 + 2_000))).isTrue();
      assertThat(a.leader().row().holder()).isEqualTo("b");
    }
  }

  @Test
  void aSwapThatSkipsAnEpochOrNamesNoHolderIsRefused() {
    try (Store store = newStore(dir)) {
      dev.tally.core.lead.LeaderRow none = store.leader().row();
      assertThatThrownBy(() -> store.swapLeader(none, new dev.tally.core.lead.LeaderRow(2, "a", null, T0)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0 cannot become 2");
      assertThatThrownBy(() -> store.swapLeader(none, new dev.tally.core.lead.LeaderRow(1, null, null, T0)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holder");
      assertThat(store.leader().row()).isEqualTo(none);
    }
  }

  @Test
  void aStaleLeadersWritesAreRefusedAndWriteNothing() {
    try (Store old = newStore(dir); Store successor = newStore(dir)) {
      long oldEpoch = lead(old, "old");
      long runId = old.createRun(spec(3), cases(3));
      List<Assignment> held = old.apply(lease(T0, "w1", 1)).leases().get(0);
      assertThat(held).hasSize(1);
      // The old leader freezes; its lease lapses; the successor takes over.
      long newEpoch = lead(successor, "successor");
      assertThat(newEpoch).isEqualTo(oldEpoch + 1);

      // Every kind of write of the old leader is refused, naming the epochs and the leader.
      assertThatThrownBy(() -> old.apply(record(T0 + 1, rec(held.get(0), "w1", Verdict.PASS))))
          .isInstanceOfSatisfying(dev.tally.core.store.StaleEpochException.class, e -> {
            assertThat(e.writerEpoch()).isEqualTo(oldEpoch);
            assertThat(e.storeEpoch()).isEqualTo(newEpoch);
            assertThat(e.getMessage()).contains("epoch " + oldEpoch + " is stale", "127.0.0.1:7070", "nothing was written");
          });
      assertThatThrownBy(() -> old.apply(lease(T0 + 1, "w2", 2))).isInstanceOf(dev.tally.core.store.StaleEpochException.class);
      assertThatThrownBy(() -> old.createRun(spec(3), cases(1))).isInstanceOf(dev.tally.core.store.StaleEpochException.class);
      assertThatThrownBy(() -> old.cancelRun(runId, T0 + 1)).isInstanceOf(dev.tally.core.store.StaleEpochException.class);
      assertThatThrownBy(() -> old.claimKey("s", "k", null, T0, T0 + 1_000)).isInstanceOf(dev.tally.core.store.StaleEpochException.class);
      assertThatThrownBy(() -> old.saveWorkerStatuses(List.of(new WorkerStatus("w1", "w1", "alive", true, 0, null, 0, 0, T0, null,
          Double.NaN, 1)))).isInstanceOf(dev.tally.core.store.StaleEpochException.class);

      // Nothing of it was written: as the successor reads the store, the job is still leased and unrecorded.
      JobView job = job(successor, runId, held.get(0).jobId());
      assertThat(job.state()).isEqualTo(JobState.LEASED);
      assertThat(successor.runs()).hasSize(1);
      assertThat(counters(successor, runId).passed()).isZero();
      assertThat(successor.workerStatuses()).isEmpty();
      assertThat(successor.cancelRun(runId, T0 + 2).status()).isNotNull(); // the successor writes
    }
  }

  @Test
  void aStandbyWritesNothing() {
    try (Store leader = newStore(dir); Store standby = newStore(dir)) {
      lead(leader, "leader");
      standby.writeAs(Store.NOT_LEADING);
      assertThatThrownBy(() -> standby.createRun(spec(3), cases(1)))
          .isInstanceOf(dev.tally.core.store.StaleEpochException.class).hasMessageContaining("standby");
      assertThat(leader.runs()).isEmpty();
      assertThat(leader.createRun(spec(3), cases(1))).isPositive();
    }
  }
}

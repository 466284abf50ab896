package dev.tally.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.Ticker;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.WorkerStatus;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import dev.tally.core.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The scheduler stepped by hand against the in-memory store (which applies the same {@code BatchRules} as
 * SQLite and passes the same contract), with fake worker handles and a clock the test moves.
 */
class SchedulerTest {

  private Store store;
  private MutableClock clock;
  private Scheduler scheduler;

  @BeforeEach
  void setUp() {
    clock = new MutableClock(Instant.parse("2026-11-30T00:00:00Z"));
    store = InMemoryStore.create(clock);
    scheduler = scheduler(7);
  }

  @AfterEach
  void tearDown() {
    store.close();
  }

  /** A scheduler on the test's store and clock, as a new coordinator would start one. */
  private Scheduler scheduler(long seed) {
    return Scheduler.builder(store, clock, clock, new SplittableRandom(seed)).build();
  }

  private long createRun(int cases, int maxAttempts) {
    return createRun(cases, maxAttempts, Duration.ofMinutes(1));
  }

  private long createRun(int cases, int maxAttempts, Duration caseTimeout) {
    List<CaseRecord> records = new ArrayList<>();
    for (int i = 0; i < cases; i++) {
      records.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}"));
    }
    EvaluatorSpec spec = new EvaluatorSpec("noop", Map.of(), caseTimeout);
    return store.createRun(new RunSpec("test", spec, maxAttempts), records);
  }

  private static Outcome pass() {
    return new Outcome(Verdict.PASS, 1.0, "ok", 3);
  }

  @Test
  void assignsUpToTheDispatchWindowAndFinishesWithExactCounters() {
    long runId = createRun(10, 3);
    FakeWorker w = new FakeWorker("w1", 4);
    CompletableFuture<RunCounters> done = scheduler.activate(runId);
    scheduler.workerJoined(w);
    scheduler.step();
    assertThat(w.assigned).hasSize(4);

    while (!done.isDone()) {
      List<Assignment> batch = w.takeAssigned();
      assertThat(batch).as("work must keep flowing until the run is done").isNotEmpty();
      for (Assignment a : batch) {
        scheduler.attemptEnded(w, AttemptReport.of(a.jobId(), a.token(), pass()));
      }
      scheduler.step();
    }
    RunCounters c = done.join();
    assertThat(c.recorded()).isEqualTo(10);
    assertThat(c.passed()).isEqualTo(10);
    assertThat(c.duplicatesSuppressed()).isZero();
    assertThat(w.acks).hasSize(10).allMatch(a -> a.status() == AckStatus.RECORDED);
  }

  @Test
  void observersAreToldOfEveryLeaseWithItsTokenAndTheCommitsTime() {
    long runId = createRun(3, 3);
    List<long[]> leases = new ArrayList<>();
    Scheduler observed = Scheduler.builder(store, clock, clock, new SplittableRandom(7)).observer(new SchedulerObserver() {
      @Override
      public void leased(long jobId, long token, long committedAtNanos) {
        leases.add(new long[] {jobId, token, committedAtNanos});
      }
    }).build();
    FakeWorker w = new FakeWorker("w1", 4);
    observed.activate(runId);
    observed.workerJoined(w);
    clock.advance(Duration.ofMillis(5));
    long before = clock.nanos();
    observed.step();
    List<Assignment> assigned = w.takeAssigned();
    assertThat(assigned).hasSize(3);
    assertThat(leases).extracting(l -> l[0]).containsExactlyElementsOf(assigned.stream().map(Assignment::jobId).toList());
    assertThat(leases).extracting(l -> l[1]).containsExactlyElementsOf(assigned.stream().map(Assignment::token).toList());
    assertThat(leases).allSatisfy(l -> assertThat(l[2]).isGreaterThanOrEqualTo(before));
  }

  @Test
  void whileASlotIsFreeNoCaseIsLeasedIntoABusyWorkersPrefetchQueue() {
    List<CaseRecord> records = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      records.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}"));
    }
    // Half the fleet's slots: two of four.
    EvaluatorSpec spec = new EvaluatorSpec("noop", Map.of(dev.tally.core.FleetLimits.MAX_CONCURRENCY, "2"), Duration.ofMinutes(1));
    long runId = store.createRun(new RunSpec("test", spec, 3), records);
    List<FakeWorker> fleet = new ArrayList<>();
    for (String name : List.of("a", "b", "c", "d")) {
      FakeWorker w = new FakeWorker(name, 2); // one slot, one assignment of prefetch
      w.slots = 1;
      fleet.add(w);
    }
    CompletableFuture<RunCounters> done = scheduler.activate(runId);
    fleet.forEach(scheduler::workerJoined);
    Map<FakeWorker, List<Assignment>> held = new java.util.LinkedHashMap<>();
    fleet.forEach(w -> held.put(w, new ArrayList<>()));
    scheduler.step();
    for (int round = 0; round < 20 && !done.isDone(); round++) {
      for (FakeWorker w : fleet) {
        held.get(w).addAll(w.takeAssigned());
      }
      assertThat(held.values()).as("round %d: a lease goes to a free slot, never behind a running case", round)
          .allSatisfy(h -> assertThat(h.size()).isLessThanOrEqualTo(1));
      FakeWorker busy = held.entrySet().stream().filter(e -> !e.getValue().isEmpty()).findFirst().orElseThrow().getKey();
      Assignment a = held.get(busy).remove(0);
      scheduler.attemptEnded(busy, AttemptReport.of(a.jobId(), a.token(), pass()));
      scheduler.step();
    }
    assertThat(done).isCompleted();
    assertThat(done.join().recorded()).isEqualTo(6);
  }

  @Test
  void afterStopLeasingResultsInFlightAreStillRecordedButNothingMoreIsLeased() {
    long runId = createRun(10, 3);
    FakeWorker w = new FakeWorker("w1", 4);
    scheduler.activate(runId);
    scheduler.workerJoined(w);
    scheduler.step();
    List<Assignment> inFlight = w.takeAssigned();
    assertThat(inFlight).hasSize(4);
    assertThat(scheduler.inFlight()).isEqualTo(4);

    scheduler.stopLeasing();
    for (Assignment a : inFlight) {
      scheduler.attemptEnded(w, AttemptReport.of(a.jobId(), a.token(), pass()));
    }
    scheduler.step();
    scheduler.step();
    assertThat(w.acks).hasSize(4).allMatch(a -> a.status() == AckStatus.RECORDED);
    assertThat(w.takeAssigned()).as("a stopping scheduler leases nothing").isEmpty();
    assertThat(scheduler.inFlight()).isZero();
    assertThat(store.run(runId).orElseThrow().counters().recorded()).isEqualTo(4);
  }

  @Test
  void workerStatusesAreSavedAtOnceOnJoinAndLeaveAndMarkedLeftWhenTheCoordinatorStops() {
    long runId = createRun(4, 3);
    scheduler.activate(runId);
    FakeWorker a = new FakeWorker("a", 2);
    FakeWorker b = new FakeWorker("b", 2);
    scheduler.workerJoined(a);
    scheduler.workerJoined(b);
    scheduler.step();
    assertThat(store.workerStatuses()).extracting(WorkerStatus::name, WorkerStatus::connected, WorkerStatus::inFlight)
        .as("both listed at once, well before the periodic report").containsExactly(tuple("a", true, 2), tuple("b", true, 2));

    clock.advance(Duration.ofMillis(10));
    scheduler.workerLost(b, "reaped after 2600ms of silence");
    scheduler.step();
    WorkerStatus left = store.workerStatuses().get(1);
    assertThat(left.connected()).isFalse();
    assertThat(left.leftReason()).isEqualTo("reaped after 2600ms of silence");
    assertThat(left.inFlight()).isZero();
    assertThat(left.reportedAtMillis()).isEqualTo(clock.millis());

    scheduler.stopping();
    assertThat(store.workerStatuses()).extracting(WorkerStatus::name, WorkerStatus::leftReason)
        .containsExactly(tuple("a", "the coordinator stopped"), tuple("b", "reaped after 2600ms of silence"));
  }

  @Test
  void workersAnEarlierCoordinatorLeftConnectedAreMarkedLeftAtTheFirstStep() {
    store.saveWorkerStatuses(List.of(
        new WorkerStatus("old-1", "old", "0.10 of 8.00", true, 0, null, 0, 4, clock.millis() - 60_000, null),
        new WorkerStatus("gone-1", "gone", "", true, 0, null, 0, 0, clock.millis() - 90_000, "reaped after 2600ms of silence")));
    scheduler.step();
    assertThat(store.workerStatuses()).extracting(WorkerStatus::name, WorkerStatus::leftReason, WorkerStatus::inFlight)
        .containsExactly(
            tuple("gone", "reaped after 2600ms of silence", 0),
            tuple("old", "its coordinator stopped without a word (killed?) at most 60 s after its last report", 0));
  }

  @Test
  void aResponseJournalledByAnAttemptWhoseWorkerThenDiesGoesToTheNextAttemptAndAStaleOneIsFenced() {
    long runId = createRun(2, 3);
    FakeWorker doomed = new FakeWorker("doomed", 2);
    scheduler.activate(runId);
    scheduler.workerJoined(doomed);
    scheduler.step();
    List<Assignment> first = doomed.takeAssigned();
    assertThat(first).hasSize(2).allSatisfy(a -> assertThat(a.journal()).isEmpty());
    Assignment paid = first.get(0);
    String digest = "ab".repeat(32);
    scheduler.responseJournalled(doomed,
        new dev.tally.core.JournalEntry(paid.jobId(), paid.token(), digest, "{\"answer\":\"4\"}"));
    scheduler.step();
    assertThat(doomed.journalAcks).as("acked after the commit").containsExactly(
        new JournalAck(paid.jobId(), paid.token(), digest, dev.tally.core.JournalEntry.Status.STORED));

    // The worker dies before it reports: both jobs go to a survivor, the paid one with its response.
    scheduler.workerLost(doomed, "reaped after 5000ms of silence");
    FakeWorker survivor = new FakeWorker("survivor", 2);
    scheduler.workerJoined(survivor);
    scheduler.step();
    clock.advance(Duration.ofSeconds(1)); // past any first backoff
    scheduler.step();
    List<Assignment> redelivered = survivor.takeAssigned();
    assertThat(redelivered).hasSize(2);
    Assignment again = redelivered.stream().filter(a -> a.jobId() == paid.jobId()).findFirst().orElseThrow();
    assertThat(again.attempt()).isEqualTo(2);
    assertThat(again.journal()).containsExactly(java.util.Map.entry(digest, "{\"answer\":\"4\"}"));
    assertThat(redelivered).filteredOn(a -> a.jobId() != paid.jobId()).singleElement()
        .satisfies(a -> assertThat(a.journal()).as("the other case paid for nothing").isEmpty());

    // The dead attempt's late entry (a frozen worker thawing) is fenced and stores nothing.
    Assignment other = first.get(1);
    scheduler.responseJournalled(doomed,
        new dev.tally.core.JournalEntry(other.jobId(), other.token(), digest, "late"));
    scheduler.step();
    assertThat(doomed.journalAcks).last().isEqualTo(
        new JournalAck(other.jobId(), other.token(), digest, dev.tally.core.JournalEntry.Status.FENCED));
    assertThat(store.journalledResponses(runId, other.caseId())).isEmpty();
    assertThat(store.journalledResponses(runId, paid.caseId())).containsOnlyKeys(digest);
  }

  @Test
  void lostWorkersJobsAreRedeliveredAndItsLateResultsFenced() {
    long runId = createRun(2, 3);
    FakeWorker doomed = new FakeWorker("doomed", 2);
    scheduler.activate(runId);
    scheduler.workerJoined(doomed);
    scheduler.step();
    List<Assignment> lost = doomed.takeAssigned();
    assertThat(lost).hasSize(2);

    scheduler.workerLost(doomed, "reaped after 5000ms of silence");
    FakeWorker survivor = new FakeWorker("survivor", 2);
    scheduler.workerJoined(survivor);
    scheduler.step();
    clock.advance(Duration.ofSeconds(1)); // past any first backoff (at most 100 ms)
    scheduler.step();
    List<Assignment> redelivered = survivor.takeAssigned();
    assertThat(redelivered).extracting(Assignment::jobId).containsExactlyInAnyOrderElementsOf(lost.stream().map(Assignment::jobId).toList());
    assertThat(redelivered).allMatch(a -> a.attempt() == 2);
    for (int i = 0; i < 2; i++) {
      assertThat(redelivered.get(i).token()).isGreaterThan(tokenOf(lost, redelivered.get(i).jobId()));
    }

    // The frozen worker thaws and reports: fenced, and told so.
    scheduler.attemptEnded(doomed, AttemptReport.of(lost.get(0).jobId(), lost.get(0).token(), pass()));
    for (Assignment a : redelivered) {
      scheduler.attemptEnded(survivor, AttemptReport.of(a.jobId(), a.token(), pass()));
    }
    scheduler.step();
    assertThat(doomed.acks).containsExactly(new Ack(lost.get(0).jobId(), lost.get(0).token(), AckStatus.FENCED));
    RunCounters c = scheduler.completion(runId).join();
    assertThat(c.recorded()).isEqualTo(2);
    assertThat(c.redeliveries()).isEqualTo(2);
    assertThat(c.staleResultsFenced()).isEqualTo(1);
  }

  @Test
  void leasesOnlyFromTheRunsItWasGiven() {
    long other = createRun(3, 3); // e.g. another process's run in the same store file
    long mine = createRun(2, 3);
    FakeWorker w = new FakeWorker("w", 10);
    scheduler.workerJoined(w);
    scheduler.step();
    assertThat(w.assigned).as("no run activated yet").isEmpty();
    scheduler.activate(mine);
    scheduler.step();
    assertThat(w.takeAssigned()).hasSize(2).allMatch(a -> a.runId() == mine);
    assertThat(store.jobs(other)).allMatch(j -> j.state() == JobState.PENDING);
  }

  @Test
  void aResentResultIsADuplicateAndCountsOnce() {
    long runId = createRun(1, 3);
    FakeWorker w = new FakeWorker("w", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(w);
    scheduler.step();
    Assignment a = w.takeAssigned().get(0);
    scheduler.attemptEnded(w, AttemptReport.of(a.jobId(), a.token(), pass()));
    scheduler.attemptEnded(w, AttemptReport.of(a.jobId(), a.token(), pass()));
    scheduler.step();
    assertThat(w.acks).extracting(Ack::status).containsExactly(AckStatus.RECORDED, AckStatus.DUPLICATE);
    RunCounters c = scheduler.completion(runId).join();
    assertThat(c.recorded()).isEqualTo(1);
    assertThat(c.duplicatesSuppressed()).isEqualTo(1);
  }

  @Test
  void aJobPastItsAttemptLimitEndsFailedWithItsHistory() {
    long runId = createRun(1, 2);
    FakeWorker w = new FakeWorker("w", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(w);
    for (int attempt = 1; attempt <= 2; attempt++) {
      scheduler.step();
      clock.advance(Duration.ofSeconds(1));
      scheduler.step();
      Assignment a = w.takeAssigned().get(0);
      assertThat(a.attempt()).isEqualTo(attempt);
      scheduler.attemptEnded(w, AttemptReport.failed(a.jobId(), a.token(), new InfraFailure(InfraFailure.Kind.SIGNALED, "killed by signal 9")));
    }
    scheduler.step();
    RunCounters c = scheduler.completion(runId).join();
    assertThat(c.jobsFailed()).isEqualTo(1);
    assertThat(c.recorded()).isZero();
    JobView job = store.jobs(runId).get(0);
    assertThat(job.state()).isEqualTo(JobState.FAILED);
    assertThat(job.failureReason()).isEqualTo("out of attempts (2 of 2); the last ended with signaled: killed by signal 9");
    assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsExactly("signaled", "signaled");
    assertThat(w.acks).extracting(Ack::status).containsExactly(AckStatus.RELEASED, AckStatus.RELEASED);
  }

  @Test
  void aCaseKilledOnOneWorkerIsRetriedOnAnotherThatIsIdle() {
    long runId = createRun(1, 5);
    FakeWorker first = new FakeWorker("first", 1);
    FakeWorker second = new FakeWorker("second", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(first);
    scheduler.step();
    Assignment a = first.takeAssigned().get(0);
    scheduler.workerJoined(second);
    scheduler.attemptEnded(first, AttemptReport.failed(a.jobId(), a.token(), new InfraFailure(InfraFailure.Kind.SIGNALED, "killed by signal 9")));
    scheduler.step();
    clock.advance(Duration.ofSeconds(1)); // past the backoff
    scheduler.step();
    assertThat(first.assigned).as("the worker it was killed on, though it asks first and has room").isEmpty();
    assertThat(second.takeAssigned()).extracting(Assignment::jobId).containsExactly(a.jobId());
  }

  @Test
  void aWorkerThatReconnectsKeepsTheJobsItStillHoldsAndTheOthersAreReleased() {
    long runId = createRun(2, 3);
    FakeWorker before = new FakeWorker("w", 2);
    scheduler.activate(runId);
    scheduler.workerJoined(before);
    scheduler.step();
    List<Assignment> held = before.takeAssigned();
    // The worker found its connection dead (the coordinator was paused) and came back: its new session
    // supersedes the old one, whose loss is reported first; the Hello lists only the first job.
    before.superseded = true;
    scheduler.workerLost(before, "superseded by a new session");
    FakeWorker after = new FakeWorker("w", 2);
    after.held = List.of(new HeldLease(held.get(0).jobId(), held.get(0).token()));
    scheduler.workerJoined(after);
    scheduler.step();
    clock.advance(Duration.ofSeconds(1));
    scheduler.step();
    assertThat(after.abandoned).as("the job it still runs is its own").isEmpty();
    assertThat(after.takeAssigned()).as("the job it dropped comes back, under a new token")
        .singleElement().satisfies(a -> {
          assertThat(a.jobId()).isEqualTo(held.get(1).jobId());
          assertThat(a.token()).isGreaterThan(held.get(1).token());
        });
    scheduler.attemptEnded(after, AttemptReport.of(held.get(0).jobId(), held.get(0).token(), pass()));
    scheduler.step();
    assertThat(after.acks).extracting(Ack::status).containsExactly(AckStatus.RECORDED);
  }

  @Test
  void aSupersededSessionsJobsAreReleasedIfNoNewSessionJoins() {
    long runId = createRun(1, 3);
    FakeWorker before = new FakeWorker("w", 1);
    FakeWorker other = new FakeWorker("other", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(before);
    scheduler.step();
    Assignment a = before.takeAssigned().get(0);
    before.superseded = true;
    scheduler.workerLost(before, "superseded by a new session");
    scheduler.workerJoined(other);
    scheduler.step();
    assertThat(other.assigned).as("kept for the successor meanwhile").isEmpty();
    clock.advance(Scheduler.Settings.RECLAIM_GRACE.plusSeconds(1));
    scheduler.step();
    scheduler.step();
    assertThat(other.takeAssigned()).extracting(Assignment::jobId).containsExactly(a.jobId());
  }

  @Test
  void aDrainingWorkersCutOffCasesDoNotMakeACasePoison() {
    long runId = createRun(1, 10);
    scheduler.activate(runId);
    for (int i = 0; i < 4; i++) {
      FakeWorker w = new FakeWorker("w" + i, 1);
      scheduler.workerJoined(w);
      clock.advance(Duration.ofSeconds(15)); // past any backoff
      scheduler.step();
      assertThat(w.takeAssigned()).as("attempt %d", i + 1).hasSize(1);
      w.shuttingDown = true; // SIGTERM; its drain timeout passes with the case running
      scheduler.workerLost(w, "worker said goodbye: worker drain timed out");
      scheduler.step();
    }
    assertThat(store.jobs(runId).get(0).state()).as("four drains are not a poison case").isEqualTo(JobState.PENDING);
  }

  @Test
  void twoQuickRestartsInARowStillWaitForTheWorkersOfTheFirst() {
    long runId = createRun(1, 3);
    FakeWorker w = new FakeWorker("w", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(w);
    scheduler.step();
    Assignment a = w.takeAssigned().get(0);

    clock.advance(Duration.ofSeconds(1));
    Scheduler second = scheduler(3); // killed right after its first step, before anyone came back
    second.activate(runId);
    second.step();
    clock.advance(Duration.ofSeconds(1));
    Scheduler third = scheduler(4);
    third.activate(runId);
    third.step();
    clock.advance(Duration.ofSeconds(2));
    FakeWorker back = new FakeWorker("w", 1);
    back.held = List.of(new HeldLease(a.jobId(), a.token()));
    third.workerJoined(back);
    third.step();
    assertThat(back.abandoned).as("its lease was still there to reclaim").isEmpty();
    third.attemptEnded(back, AttemptReport.of(a.jobId(), a.token(), pass()));
    third.step();
    assertThat(back.acks).extracting(Ack::status).containsExactly(AckStatus.RECORDED);
  }

  @Test
  void aRetryableFailureWaitsForItsBackoff() {
    RedeliveryPolicy slow = RedeliveryPolicy.builder().backoffBase(Duration.ofSeconds(10)).backoffMax(Duration.ofSeconds(10)).build();
    Scheduler s = Scheduler.builder(store, clock, clock, new SplittableRandom(1)).redelivery(slow).build();
    long runId = createRun(1, 3);
    FakeWorker w = new FakeWorker("w", 1);
    s.activate(runId);
    s.workerJoined(w);
    s.step();
    Assignment a = w.takeAssigned().get(0);
    s.attemptEnded(w, AttemptReport.failed(a.jobId(), a.token(), new InfraFailure(InfraFailure.Kind.SIGNALED, "killed by signal 9")));
    long due = s.step();
    assertThat(w.assigned).isEmpty();
    assertThat(due).isBetween(clock.millis(), clock.millis() + 10_000);
    clock.advance(Duration.ofMillis(due - clock.millis()));
    s.step();
    assertThat(w.takeAssigned()).hasSize(1);
  }

  @Test
  void aConnectedWorkersLeasesAreRenewedAndNeverExpire() {
    long runId = createRun(1, 3, Duration.ofMinutes(10));
    FakeWorker w = new FakeWorker("w", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(w);
    scheduler.step();
    Assignment a = w.takeAssigned().get(0);
    for (int i = 0; i < 20; i++) { // 100 s, more than three lease durations, stepping every 5 s
      clock.advance(Duration.ofSeconds(5));
      scheduler.step();
    }
    assertThat(w.abandoned).isEmpty();
    scheduler.attemptEnded(w, AttemptReport.of(a.jobId(), a.token(), pass()));
    scheduler.step();
    assertThat(w.acks).extracting(Ack::status).containsExactly(AckStatus.RECORDED);
  }

  @Test
  void afterACoordinatorRestartALeaseWhoseHolderNeverReturnsIsSweptAndRedelivered() {
    long runId = createRun(1, 3);
    FakeWorker gone = new FakeWorker("gone", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(gone);
    scheduler.step();
    Assignment a = gone.takeAssigned().get(0);

    // A new coordinator on the same store: it knows nothing of the lease, which nobody renews now.
    Scheduler restarted = scheduler(3);
    FakeWorker survivor = new FakeWorker("survivor", 1);
    restarted.activate(runId);
    restarted.workerJoined(survivor);
    restarted.step();
    assertThat(survivor.assigned).as("the job is still leased to the old holder").isEmpty();
    clock.advance(Scheduler.Settings.DEFAULT_LEASE_DURATION.plusSeconds(1));
    restarted.step();
    clock.advance(Duration.ofSeconds(1));
    restarted.step();
    Assignment again = survivor.takeAssigned().get(0);
    assertThat(again.jobId()).isEqualTo(a.jobId());
    assertThat(again.token()).isGreaterThan(a.token());
    assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsExactly("lease_expired");
  }

  @Test
  void aReconnectingWorkerKeepsItsCurrentLeasesAndIsToldToAbandonStaleOnes() {
    long runId = createRun(2, 3);
    FakeWorker before = new FakeWorker("w", 2);
    scheduler.activate(runId);
    scheduler.workerJoined(before);
    scheduler.step();
    List<Assignment> held = before.takeAssigned();

    Scheduler restarted = scheduler(3);
    FakeWorker back = new FakeWorker("w", 2);
    back.held = List.of(new HeldLease(held.get(0).jobId(), held.get(0).token()), new HeldLease(held.get(1).jobId(), held.get(1).token() - 1));
    restarted.activate(runId);
    restarted.workerJoined(back);
    restarted.step();
    assertThat(back.abandoned).containsExactly(held.get(1).jobId());
    assertThat(back.assigned).as("its window is taken by the lease it kept").isEmpty();

    restarted.attemptEnded(back, AttemptReport.of(held.get(0).jobId(), held.get(0).token(), pass()));
    restarted.step();
    assertThat(back.acks).extracting(Ack::status).containsExactly(AckStatus.RECORDED);
    // The kept lease is renewed, and the one it abandoned expires and comes back to it.
    clock.advance(Scheduler.Settings.DEFAULT_LEASE_DURATION.plusSeconds(1));
    restarted.step();
    clock.advance(Duration.ofSeconds(1));
    restarted.step();
    assertThat(back.takeAssigned()).extracting(Assignment::jobId).containsExactly(held.get(1).jobId());
    assertThat(restarted.counters(runId).recorded()).isEqualTo(1);
  }

  @Test
  void afterAnOutageLongerThanALeaseAWorkerThatReconnectsWithinTheGraceKeepsItsFinishedWork() {
    long runId = createRun(1, 3);
    FakeWorker before = new FakeWorker("w", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(before);
    scheduler.step();
    Assignment a = before.takeAssigned().get(0);

    // The coordinator is down for 40 s: the lease (30 s) has expired by the time the next one starts.
    clock.advance(Duration.ofSeconds(40));
    Scheduler restarted = scheduler(3);
    restarted.activate(runId);
    restarted.step();
    clock.advance(Duration.ofSeconds(5)); // the worker's reconnect backoff
    restarted.step();
    FakeWorker back = new FakeWorker("w", 1);
    back.held = List.of(new HeldLease(a.jobId(), a.token()));
    restarted.workerJoined(back);
    restarted.step();
    assertThat(back.abandoned).as("its lease was not swept before it could reclaim it").isEmpty();
    restarted.attemptEnded(back, AttemptReport.of(a.jobId(), a.token(), pass()));
    restarted.step();
    assertThat(back.acks).extracting(Ack::status).containsExactly(AckStatus.RECORDED);
    assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsExactly("recorded");
  }

  @Test
  void aWorkerThatHeartbeatsButFailsEveryCaseIsEjectedAndTheRunStillPasses() {
    long runId = createRun(100, 5);
    FakeWorker bad = new FakeWorker("bad", 1);
    List<FakeWorker> good = List.of(new FakeWorker("good-1", 1), new FakeWorker("good-2", 1), new FakeWorker("good-3", 1));
    CompletableFuture<RunCounters> done = scheduler.activate(runId);
    scheduler.workerJoined(bad);
    good.forEach(scheduler::workerJoined);
    int badAssignments = 0;
    for (int i = 0; i < 10_000 && !done.isDone(); i++) {
      scheduler.step();
      for (Assignment a : bad.takeAssigned()) {
        badAssignments++;
        scheduler.attemptEnded(bad, AttemptReport.failed(a.jobId(), a.token(), new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, "disk full")));
      }
      for (FakeWorker g : good) {
        for (Assignment a : g.takeAssigned()) {
          scheduler.attemptEnded(g, AttemptReport.of(a.jobId(), a.token(), pass()));
        }
      }
      clock.advance(Duration.ofMillis(20));
    }
    RunCounters c = done.join();
    assertThat(c.passed()).isEqualTo(100);
    assertThat(badAssignments).as("ejected after 5 consecutive infrastructure failures").isEqualTo(5);
  }

  @Test
  void aCaseThatKillsEveryWorkerRunningItEndsFailedAsPoisonAfterThreeDeathsWhileTheOthersPass() {
    long runId = createRun(41, 10); // case c20 is the poison
    CompletableFuture<RunCounters> done = scheduler.activate(runId);
    List<FakeWorker> fleet = new ArrayList<>();
    java.util.Map<FakeWorker, java.util.ArrayDeque<Assignment>> queues = new java.util.HashMap<>();
    int started = 0;
    for (; started < 3; started++) {
      FakeWorker w = new FakeWorker("w" + started, 3);
      w.slots = 1;
      fleet.add(w);
      queues.put(w, new java.util.ArrayDeque<>());
      scheduler.workerJoined(w);
    }
    int deaths = 0;
    for (int i = 0; i < 10_000 && !done.isDone(); i++) {
      scheduler.step();
      for (FakeWorker w : List.copyOf(fleet)) {
        java.util.ArrayDeque<Assignment> queue = queues.get(w);
        queue.addAll(w.takeAssigned());
        Assignment running = queue.peekFirst();
        if (running == null) {
          continue;
        }
        if (running.caseId().equals("c20")) { // the case takes its worker down; a supervisor starts another
          deaths++;
          scheduler.workerLost(w, "closed by peer");
          fleet.remove(w);
          FakeWorker fresh = new FakeWorker("w" + started++, 3);
          fresh.slots = 1;
          fleet.add(fresh);
          queues.put(fresh, new java.util.ArrayDeque<>());
          scheduler.workerJoined(fresh);
        } else {
          queue.removeFirst();
          scheduler.attemptEnded(w, AttemptReport.of(running.jobId(), running.token(), pass()));
        }
      }
      clock.advance(Duration.ofMillis(200));
    }
    RunCounters c = done.join();
    assertThat(deaths).isEqualTo(3);
    assertThat(c.passed()).isEqualTo(40);
    assertThat(c.jobsFailed()).isEqualTo(1);
    JobView poison = store.jobs(runId).stream().filter(j -> j.caseId().equals("c20")).findFirst().orElseThrow();
    assertThat(poison.failureReason()).startsWith("poison: 3 attempts in a row");
  }

  @Test
  void anAttemptPastItsDeadlineIsEndedAndItsWorkerToldToAbandonIt() {
    long runId = createRun(1, 3); // case timeout 1 minute
    FakeWorker hung = new FakeWorker("hung", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(hung);
    scheduler.step();
    Assignment a = hung.takeAssigned().get(0);
    clock.advance(Duration.ofSeconds(60));
    scheduler.step();
    assertThat(hung.abandoned).as("still within the deadline's grace").isEmpty();
    clock.advance(Duration.ofMillis(5_001));
    scheduler.step();
    assertThat(hung.abandoned).containsExactly(a.jobId());
    clock.advance(Duration.ofSeconds(1));
    scheduler.step();
    Assignment again = hung.takeAssigned().get(0);
    assertThat(again.jobId()).isEqualTo(a.jobId());
    assertThat(again.attempt()).isEqualTo(2);
    assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsExactly("timeout");
  }

  @Test
  void aSuspectedWorkerGetsNoNewJobsButKeepsWhatItHas() {
    long runId = createRun(4, 3);
    FakeWorker w = new FakeWorker("w", 2);
    scheduler.activate(runId);
    scheduler.workerJoined(w);
    scheduler.step();
    List<Assignment> first = w.takeAssigned();
    assertThat(first).hasSize(2);
    w.accepting = false; // its detector's suspicion crossed the drain level
    scheduler.attemptEnded(w, AttemptReport.of(first.get(0).jobId(), first.get(0).token(), pass()));
    scheduler.step();
    assertThat(w.assigned).isEmpty();
    assertThat(w.acks).extracting(Ack::status).containsExactly(AckStatus.RECORDED);
    w.accepting = true; // heard from again
    scheduler.step();
    assertThat(w.takeAssigned()).hasSize(1);
  }

  @Test
  void afterTheGraceALeaseFromBeforeTheRestartThatNobodyClaimedIsReleasedAtOnceNotAtItsExpiry() {
    aLeaseNobodyClaimsIsReleasedAtTheGracesEnd(null); // the coordinator restarts: its successor is built then
  }

  @Test
  void aStandbysGraceStartsWhenItTakesTheLeadNotWhenItWasBuilt() {
    // A standby's scheduler is built first, and steps only once the leader is gone, a minute later. Timed
    // from its construction the grace was long over, and the lease, issued after that, was no orphan: the
    // case waited out its whole lease. Timed from the takeover, both hold as after a restart.
    Scheduler standby = scheduler(5);
    clock.advance(Duration.ofSeconds(60));
    aLeaseNobodyClaimsIsReleasedAtTheGracesEnd(standby);
  }

  /**
   * A case leased to a worker that dies with its coordinator a second later; {@code successor} (built now if
   * null) takes over with another worker: the lease waits out the grace, then is released and run again on
   * the other worker, long before it would have expired.
   */
  private void aLeaseNobodyClaimsIsReleasedAtTheGracesEnd(Scheduler successor) {
    long runId = createRun(1, 3);
    FakeWorker gone = new FakeWorker("gone", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(gone);
    scheduler.step();
    Assignment a = gone.takeAssigned().get(0);
    long leasedAt = clock.millis();

    clock.advance(Duration.ofSeconds(1));
    Scheduler next = successor != null ? successor : scheduler(3);
    FakeWorker survivor = new FakeWorker("survivor", 1);
    next.activate(runId);
    next.workerJoined(survivor);
    next.step();
    assertThat(survivor.assigned).as("within the grace, its holder may still come back").isEmpty();
    clock.advance(Scheduler.Settings.RECLAIM_GRACE);
    next.step();
    next.step();
    assertThat(survivor.takeAssigned()).extracting(Assignment::jobId).containsExactly(a.jobId());
    assertThat(clock.millis() - leasedAt).isLessThan(Scheduler.Settings.DEFAULT_LEASE_DURATION.toMillis());
    assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsExactly("coordinator_restarted");
    assertThat(store.run(runId).orElseThrow().counters().redeliveries()).isEqualTo(1);
  }

  @Test
  void theGraceEndsAsSoonAsEveryWorkerOfTheEarlierCoordinatorIsBack() {
    long runId = createRun(2, 3);
    FakeWorker w1 = new FakeWorker("w1", 1);
    FakeWorker w2 = new FakeWorker("w2", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(w1);
    scheduler.workerJoined(w2);
    scheduler.step();
    Assignment kept = w1.takeAssigned().get(0);
    Assignment dropped = w2.takeAssigned().get(0);

    clock.advance(Duration.ofSeconds(1)); // the coordinator is killed; its successor starts on the store
    Scheduler restarted = scheduler(3);
    restarted.activate(runId);
    restarted.step();
    FakeWorker back1 = new FakeWorker("w1", 1);
    back1.held = List.of(new HeldLease(kept.jobId(), kept.token()));
    FakeWorker back2 = new FakeWorker("w2", 1); // it lost its job meanwhile (say, its case process died)
    clock.advance(Duration.ofMillis(300));
    restarted.workerJoined(back1);
    restarted.workerJoined(back2);
    restarted.step();
    restarted.step();
    assertThat(back2.takeAssigned()).as("released as soon as both are back, not after the 10 s grace")
        .extracting(Assignment::jobId).containsExactly(dropped.jobId());
    assertThat(back1.abandoned).isEmpty();
    assertThat(store.attempts(runId)).extracting(AttemptView::jobId, AttemptView::ending)
        .containsExactly(tuple(dropped.jobId(), "coordinator_restarted"));
  }

  @Test
  void aCaseThatTimesOutIsTriedOnceMoreThenEndsFailedAsTimedOut() {
    long runId = createRun(1, 5);
    FakeWorker w = new FakeWorker("w", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(w);
    for (int attempt = 1; attempt <= 2; attempt++) {
      scheduler.step();
      clock.advance(Duration.ofSeconds(1));
      scheduler.step();
      Assignment a = w.takeAssigned().get(0);
      assertThat(a.attempt()).isEqualTo(attempt);
      scheduler.attemptEnded(w, AttemptReport.failed(a.jobId(), a.token(), new InfraFailure(InfraFailure.Kind.TIMEOUT, "ran past 60000ms")));
    }
    scheduler.step();
    RunCounters c = scheduler.completion(runId).join();
    assertThat(c.jobsFailed()).as("2 of its 5 attempts: a hanging case does not cost 5 timeouts").isEqualTo(1);
    assertThat(store.jobs(runId).get(0).failureReason()).startsWith("timed out 2 times (retried at most 1 time)");
  }

  @Test
  void aJobHandedBackByADrainingWorkerGoesBackAtOnceWithoutUsingAnAttempt() {
    long runId = createRun(1, 1); // a single attempt: charging the hand-back would end the job
    FakeWorker draining = new FakeWorker("draining", 1);
    scheduler.activate(runId);
    scheduler.workerJoined(draining);
    scheduler.step();
    Assignment a = draining.takeAssigned().get(0);
    draining.accepting = false;
    FakeWorker other = new FakeWorker("other", 1);
    scheduler.workerJoined(other);
    scheduler.attemptEnded(draining, AttemptReport.failed(a.jobId(), a.token(), new InfraFailure(InfraFailure.Kind.HANDED_BACK, "worker is draining")));
    scheduler.step();
    scheduler.step(); // no clock move: a hand-back has no backoff
    Assignment again = other.takeAssigned().get(0);
    assertThat(again.jobId()).isEqualTo(a.jobId());
    assertThat(again.attempt()).isEqualTo(1);
    assertThat(draining.acks).extracting(Ack::status).containsExactly(AckStatus.RELEASED);
    assertThat(store.attempts(runId)).extracting(AttemptView::ending).containsExactly("handed_back");
  }

  @Test
  void attemptDurationsComeFromTheMonotonicClockEvenWhenTheWallClockStepsBack() {
    long[] nanos = {0};
    Scheduler s = Scheduler.builder(store, clock, () -> nanos[0], new SplittableRandom(1)).build();
    long runId = createRun(1, 3);
    FakeWorker w = new FakeWorker("w", 1);
    s.activate(runId);
    s.workerJoined(w);
    s.step();
    Assignment a = w.takeAssigned().get(0);
    clock.advance(Duration.ofSeconds(-60)); // NTP steps the wall clock back a minute
    nanos[0] += Duration.ofMillis(2_000).toNanos();
    s.attemptEnded(w, AttemptReport.of(a.jobId(), a.token(), pass()).withTiming(30, 1_500));
    s.step();
    AttemptView attempt = store.attempts(runId).get(0);
    assertThat(attempt.endedAtMillis()).as("wall clock, for people").isLessThan(attempt.startedAtMillis());
    assertThat(attempt.timing()).isEqualTo(new dev.tally.core.store.AttemptTiming(2_000, 30, 1_500));
  }

  private static long tokenOf(List<Assignment> assignments, long jobId) {
    return assignments.stream().filter(a -> a.jobId() == jobId).findFirst().orElseThrow().token();
  }

  /** A worker handle that records what the scheduler sends it. */
  /** A run of {@code cases} cases of evaluator {@code kind}. */
  private long createRun(int cases, String kind) {
    List<CaseRecord> records = new ArrayList<>();
    for (int i = 0; i < cases; i++) {
      records.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}"));
    }
    return store.createRun(new RunSpec("test", new EvaluatorSpec(kind, Map.of(), Duration.ofMinutes(1)), 3), records);
  }

  /**
   * A run whose first case sits on a slow worker while a fast one does the other seven in 200 ms each, on a
   * scheduler with the product's speculation policy; returns the slow worker's attempt.
   */
  private Assignment runToTheEndBesideAStraggler(Scheduler s, long runId, FakeWorker slow, FakeWorker fast) {
    s.activate(runId);
    s.workerJoined(slow);
    s.step();
    s.workerJoined(fast);
    s.step();
    Assignment straggler = slow.takeAssigned().get(0);
    for (int i = 0; i < 7; i++) {
      Assignment a = fast.takeAssigned().get(0);
      clock.advance(Duration.ofMillis(200));
      s.attemptEnded(fast, AttemptReport.of(a.jobId(), a.token(), pass()));
      s.step();
    }
    return straggler;
  }

  @Test
  void nearARunsEndAStragglerIsCopiedToAnIdleWorkerAndTheFirstResultWinsWhileTheOtherIsAbandonedAndFenced() {
    long runId = createRun(8, "noop");
    Scheduler s = Scheduler.builder(store, clock, clock, new SplittableRandom(7))
        .speculation(SpeculationPolicy.defaults()).build();
    FakeWorker slow = new FakeWorker("slow", 1);
    FakeWorker fast = new FakeWorker("fast", 1);
    CompletableFuture<RunCounters> done = s.completion(runId);
    Assignment straggler = runToTheEndBesideAStraggler(s, runId, slow, fast);
    // 1.4 s in: the straggler has run past its run's typical 200 ms times two, and past the 1 s floor.
    s.step();
    List<Assignment> copies = fast.takeAssigned();
    assertThat(copies).hasSize(1);
    Assignment copy = copies.get(0);
    assertThat(copy.jobId()).isEqualTo(straggler.jobId());
    assertThat(copy.token()).isGreaterThan(straggler.token());

    clock.advance(Duration.ofMillis(200));
    s.attemptEnded(fast, AttemptReport.of(copy.jobId(), copy.token(), pass()));
    s.step();
    assertThat(slow.abandoned).as("the slow attempt lost the race").containsExactly(straggler.jobId());
    assertThat(done).isCompleted();
    assertThat(done.join().recorded()).isEqualTo(8);

    // The slow worker finishes anyway: its result is fenced, and the case is still counted once.
    s.attemptEnded(slow, AttemptReport.of(straggler.jobId(), straggler.token(), pass()));
    s.step();
    assertThat(slow.acks).extracting(Ack::status).containsExactly(AckStatus.FENCED);
    RunCounters c = store.run(runId).orElseThrow().counters();
    assertThat(c.recorded()).isEqualTo(8);
    assertThat(c.staleResultsFenced()).isEqualTo(1);
    assertThat(c.redeliveries()).isZero();
    assertThat(store.attempts(runId)).extracting(AttemptView::ending)
        .containsOnly("recorded", dev.tally.core.store.BatchRules.ABANDONED_ENDING);
  }

  @Test
  void aStragglerIsNotCopiedBeforeItsTimeButTheSchedulerAsksToBeSteppedWhenItComes() {
    long runId = createRun(8, "noop");
    Scheduler s = Scheduler.builder(store, clock, clock, new SplittableRandom(7))
        .speculation(new SpeculationPolicy(SpeculationPolicy.Mode.AUTO, 2, Duration.ofSeconds(3), 0.1, 5)).build();
    FakeWorker slow = new FakeWorker("slow", 1);
    FakeWorker fast = new FakeWorker("fast", 1);
    runToTheEndBesideAStraggler(s, runId, slow, fast);
    long due = s.step();
    assertThat(fast.takeAssigned()).as("1.4 s is not yet past the 3 s floor").isEmpty();
    assertThat(due).isEqualTo(clock.millis() + 1_600);
    clock.advance(Duration.ofMillis(1_600));
    s.step();
    assertThat(fast.takeAssigned()).hasSize(1);
  }

  @Test
  void aModelRunsStragglerIsNotCopiedUnlessSpeculationIsOnForEveryEvaluator() {
    long runId = createRun(8, "model");
    Scheduler s = Scheduler.builder(store, clock, clock, new SplittableRandom(7))
        .speculation(SpeculationPolicy.defaults()).build();
    FakeWorker slow = new FakeWorker("slow", 1);
    FakeWorker fast = new FakeWorker("fast", 1);
    runToTheEndBesideAStraggler(s, runId, slow, fast);
    clock.advance(Duration.ofSeconds(5));
    s.step();
    assertThat(fast.takeAssigned()).as("a backup of a paid call pays twice").isEmpty();
  }

  @Test
  void aLostAttemptWhoseBackupLivesIsNotRedeliveredAndTheBackupFinishesTheCase() {
    long runId = createRun(8, "noop");
    Scheduler s = Scheduler.builder(store, clock, clock, new SplittableRandom(7))
        .speculation(SpeculationPolicy.defaults()).build();
    FakeWorker slow = new FakeWorker("slow", 1);
    FakeWorker fast = new FakeWorker("fast", 1);
    CompletableFuture<RunCounters> done = s.completion(runId);
    runToTheEndBesideAStraggler(s, runId, slow, fast);
    s.step();
    Assignment copy = fast.takeAssigned().get(0);
    s.workerLost(slow, "connection reset");
    s.step();
    assertThat(fast.takeAssigned()).as("the case is not back in the queue").isEmpty();
    s.attemptEnded(fast, AttemptReport.of(copy.jobId(), copy.token(), pass()));
    s.step();
    assertThat(done.join().recorded()).isEqualTo(8);
    assertThat(done.join().redeliveries()).isZero();
    assertThat(store.attempts(runId)).extracting(AttemptView::ending)
        .containsOnly("recorded", dev.tally.core.store.BatchRules.DROPPED_ENDING);
  }

  @Test
  void aBackupGoesOnlyToAFreeSlotNotIntoAPrefetchWindowBehindARunningCase() {
    long runId = createRun(8, "noop");
    Scheduler s = Scheduler.builder(store, clock, clock, new SplittableRandom(7))
        .speculation(SpeculationPolicy.defaults()).build();
    FakeWorker slow = new FakeWorker("slow", 1);
    FakeWorker fast = new FakeWorker("fast", 1);
    runToTheEndBesideAStraggler(s, runId, slow, fast);
    FakeWorker busy = new FakeWorker("busy", 2);
    busy.slots = 1;
    long other = createRun(1, "noop");
    s.activate(other);
    s.workerJoined(busy);
    fast.accepting = false;
    s.step();
    assertThat(busy.takeAssigned()).as("the other run's one case fills busy's only slot").hasSize(1);
    clock.advance(Duration.ofSeconds(5));
    s.step();
    assertThat(busy.takeAssigned()).as("a copy would wait behind the running case").isEmpty();
  }

  static final class FakeWorker implements WorkerHandle {
    final String name;
    final int window;
    final List<Assignment> assigned = new ArrayList<>();
    final List<Ack> acks = new ArrayList<>();
    final List<JournalAck> journalAcks = new ArrayList<>();
    final List<Long> abandoned = new ArrayList<>();
    List<HeldLease> held = List.of();
    int slots;
    boolean accepting = true;
    boolean superseded;
    boolean shuttingDown;

    @Override
    public boolean superseded() {
      return superseded;
    }

    @Override
    public boolean shuttingDown() {
      return shuttingDown;
    }

    @Override
    public boolean acceptingWork() {
      return accepting;
    }

    FakeWorker(String name, int window) {
      this.name = name;
      this.window = window;
      this.slots = window;
    }

    @Override
    public int slots() {
      return slots;
    }

    @Override
    public List<HeldLease> heldAtJoin() {
      return held;
    }

    List<Assignment> takeAssigned() {
      List<Assignment> copy = new ArrayList<>(assigned);
      assigned.clear();
      return copy;
    }

    @Override
    public String workerId() {
      return name;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public int dispatchWindow() {
      return window;
    }

    @Override
    public void assign(List<Assignment> assignments) {
      assigned.addAll(assignments);
    }

    @Override
    public void acknowledge(List<Ack> acks) {
      this.acks.addAll(acks);
    }

    @Override
    public void acknowledgeJournal(List<JournalAck> acks) {
      journalAcks.addAll(acks);
    }

    @Override
    public void abandon(long jobId, long token, String reason) {
      abandoned.add(jobId);
    }

    @Override
    public void close(String reason) {}
  }

  /** A clock moved by the test: wall time and, moving with it, monotonic time. */
  static final class MutableClock extends Clock implements Ticker {
    private Instant now;

    MutableClock(Instant start) {
      this.now = start;
    }

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public long nanos() {
      return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }
  }
}

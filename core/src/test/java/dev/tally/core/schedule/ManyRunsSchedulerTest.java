package dev.tally.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.RecordStatus;
import dev.tally.core.Verdict;
import dev.tally.core.outlier.OutlierDetector;
import dev.tally.core.outlier.OutlierEvent;
import dev.tally.core.outlier.OutlierPolicy;
import dev.tally.core.schedule.SchedulerTest.FakeWorker;
import dev.tally.core.schedule.SchedulerTest.MutableClock;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunState;
import dev.tally.core.store.WorkerStatus;
import dev.tally.core.store.memory.InMemoryStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The scheduler serving many runs: cancel, fair share, and the observer hooks, stepped by hand. */
class ManyRunsSchedulerTest {
  private MutableClock clock;
  private InMemoryStore store;
  private Recorder seen;
  private Scheduler scheduler;

  /** Everything the observer hooks were told, in order. */
  static final class Recorder implements SchedulerObserver {
    final List<String> events = new ArrayList<>();
    final List<Long> latencies = new ArrayList<>();
    final List<List<WorkerStatus>> workers = new ArrayList<>();

    @Override
    public void recorded(RecordStatus status, long dispatchLatencyNanos) {
      events.add("recorded " + status);
      latencies.add(dispatchLatencyNanos);
    }

    @Override
    public void redelivered(long jobId, InfraFailure.Kind why) {
      events.add("redelivered " + jobId + " " + why);
    }

    @Override
    public void outlier(String workerName, OutlierEvent event) {
      events.add("outlier " + workerName + " " + event.type());
    }

    @Override
    public void workersChanged(List<WorkerStatus> statuses) {
      workers.add(statuses);
    }

    @Override
    public void runCounters(long runId, RunCounters counters) {
      events.add("counters " + runId + " ended " + counters.ended());
    }

    @Override
    public void committed(int evals, long commitNanos) {
      events.add("committed " + evals);
    }
  }

  @BeforeEach
  void setUp() {
    clock = new MutableClock(Instant.parse("2026-11-30T00:00:00Z"));
    store = InMemoryStore.create(clock);
    seen = new Recorder();
    scheduler = Scheduler.builder(store, clock, clock, new SplittableRandom(3)).observer(seen)
        .observer(new SchedulerObserver() {
          @Override
          public void committed(int evals, long commitNanos) {
            throw new IllegalStateException("a broken observer");
          }
        }).build();
  }

  @AfterEach
  void tearDown() {
    store.close();
  }

  private long createRun(int cases) {
    List<CaseRecord> records = new ArrayList<>();
    for (int i = 0; i < cases; i++) {
      records.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}"));
    }
    return store.createRun(new RunSpec("test", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 3), records);
  }

  private static Outcome pass() {
    return new Outcome(Verdict.PASS, 1.0, "ok", 3);
  }

  @Test
  void cancellingARunAbandonsItsLeasesFencesTheirLateResultsAndCompletesItsFutureOnce() {
    long runId = createRun(10);
    CompletableFuture<RunCounters> done = scheduler.activate(runId);
    FakeWorker w = new FakeWorker("w1", 4);
    scheduler.workerJoined(w);
    scheduler.step();
    List<Assignment> held = w.takeAssigned();
    assertThat(held).hasSize(4);
    scheduler.attemptEnded(w, AttemptReport.of(held.get(0).jobId(), held.get(0).token(), pass()));

    CompletableFuture<CancelResult> cancel = scheduler.cancel(runId);
    scheduler.step();
    assertThat(cancel.join().status()).isEqualTo(CancelResult.Status.CANCELLED);
    assertThat(cancel.join().pendingCancelled()).isEqualTo(6);
    assertThat(w.abandoned).containsExactlyInAnyOrder(held.get(1).jobId(), held.get(2).jobId(), held.get(3).jobId());
    assertThat(done.join()).isEqualTo(RunCounters.builder(10).passed(1).cancelled(9).scores(1, 1.0, 1.0).build());
    assertThat(w.assigned).as("nothing of a cancelled run is leased").isEmpty();

    scheduler.attemptEnded(w, AttemptReport.of(held.get(1).jobId(), held.get(1).token(), pass()));
    CompletableFuture<CancelResult> again = scheduler.cancel(runId);
    scheduler.step();
    assertThat(again.join().status()).isEqualTo(CancelResult.Status.ALREADY_CANCELLED);
    assertThat(w.acks.get(w.acks.size() - 1).status()).as("a late result of a cancelled job").isEqualTo(AckStatus.FENCED);
    assertThat(store.run(runId).orElseThrow().state()).isEqualTo(RunState.CANCELLED);
    assertThat(store.run(runId).orElseThrow().counters().staleResultsFenced()).isEqualTo(1);
    assertThat(store.jobs(runId)).extracting(JobView::state).filteredOn(s -> s == JobState.DONE).hasSize(1);
  }

  @Test
  void aRunThisSchedulerDoesNotServeIsCancelledInTheStoreAndActivatingAnEndedRunCompletesAtOnce() {
    long idle = createRun(3);
    CompletableFuture<CancelResult> cancel = scheduler.cancel(idle);
    scheduler.step();
    assertThat(cancel.join().status()).isEqualTo(CancelResult.Status.CANCELLED);
    CompletableFuture<RunCounters> done = scheduler.activate(idle);
    scheduler.step();
    assertThat(done).isCompletedWithValue(RunCounters.builder(3).cancelled(3).build());
  }

  @Test
  void aSmallRunActivatedAfterABigOneGetsLeasesInTheFirstStepAfterItsActivation() {
    long big = createRun(1_000);
    scheduler.activate(big);
    FakeWorker w = new FakeWorker("w1", 4);
    scheduler.workerJoined(w);
    scheduler.step();
    List<Assignment> first = w.takeAssigned();
    assertThat(first).extracting(Assignment::runId).containsOnly(big);

    long small = createRun(3);
    scheduler.activate(small);
    scheduler.attemptEnded(w, AttemptReport.of(first.get(0).jobId(), first.get(0).token(), pass()));
    scheduler.attemptEnded(w, AttemptReport.of(first.get(1).jobId(), first.get(1).token(), pass()));
    scheduler.step();
    assertThat(w.takeAssigned()).as("both freed slots go to the run that holds none").extracting(Assignment::runId)
        .containsExactly(small, small);
  }

  /**
   * As many big runs as the fleet has slots, each holding one: a slot freed by one of them used to tie
   * (0 leased) with a small run activated later, and the tie went to the older run every time, so the small
   * run waited until a big run ended (a breaker's server: 90 s). Ties now go to the run leased from least
   * recently, and a run never leased from comes first.
   */
  @Test
  void aSmallRunIsNotStarvedWhenAsManyBigRunsAsSlotsEachHoldOne() {
    FakeWorker w = new FakeWorker("w1", 4);
    scheduler.workerJoined(w);
    List<Long> big = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      big.add(createRun(1_000));
      scheduler.activate(big.get(i));
    }
    scheduler.step();
    List<Assignment> held = new ArrayList<>(w.takeAssigned());
    assertThat(held).extracting(Assignment::runId).containsExactlyInAnyOrderElementsOf(big);

    long small = createRun(1);
    CompletableFuture<RunCounters> smallDone = scheduler.activate(small);
    Assignment freed = held.remove(0); // the oldest run's case ends first: its run now holds none, as the small one
    scheduler.attemptEnded(w, AttemptReport.of(freed.jobId(), freed.token(), pass()));
    scheduler.step();
    assertThat(w.takeAssigned()).as("the freed slot goes to the run never leased from").extracting(Assignment::runId)
        .containsExactly(small);

    // and the big runs take turns at the slots their own ends free: none gets two while another holds none
    List<Assignment> now = new ArrayList<>(held);
    Map<Long, Integer> leases = new java.util.HashMap<>();
    for (int round = 0; round < 40; round++) {
      Assignment done = now.remove(0);
      scheduler.attemptEnded(w, AttemptReport.of(done.jobId(), done.token(), pass()));
      scheduler.step();
      for (Assignment a : w.takeAssigned()) {
        now.add(a);
        leases.merge(a.runId(), 1, Integer::sum);
      }
    }
    assertThat(smallDone).isNotDone(); // its one case is still out: the fake worker has not ended it
    assertThat(leases.keySet()).containsExactlyInAnyOrderElementsOf(big);
    assertThat(leases.values()).allSatisfy(n -> assertThat(n).isBetween(9, 11));
  }

  @Test
  void eachObserverHookFiresAndABrokenObserverNeitherStopsTheRunNorSilencesTheOthers() {
    long runId = createRun(3);
    scheduler.activate(runId);
    FakeWorker w = new FakeWorker("w1", 3);
    scheduler.workerJoined(w);
    scheduler.step();
    assertThat(seen.workers).as("a join is a worker change").isNotEmpty();
    assertThat(seen.workers.get(0)).extracting(WorkerStatus::name).containsExactly("w1");
    List<Assignment> got = w.takeAssigned();

    clock.advance(Duration.ofMillis(250));
    scheduler.attemptEnded(w, AttemptReport.of(got.get(0).jobId(), got.get(0).token(), pass()));
    scheduler.attemptEnded(w, AttemptReport.of(got.get(0).jobId(), got.get(0).token(), pass())); // a resend
    scheduler.attemptEnded(w, AttemptReport.failed(got.get(1).jobId(), got.get(1).token(),
        new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, "disk full")));
    seen.events.clear();
    scheduler.step();
    assertThat(seen.events).contains("recorded RECORDED", "recorded DUPLICATE", "redelivered " + got.get(1).jobId()
        + " EVALUATOR_CRASHED", "counters " + runId + " ended 1", "committed 2");
    assertThat(seen.latencies.get(0)).as("lease to result, monotonic").isEqualTo(Duration.ofMillis(250).toNanos());

    scheduler.workerLost(w, "connection reset");
    int before = seen.workers.size();
    scheduler.step();
    assertThat(seen.workers).hasSizeGreaterThan(before);
    assertThat(seen.workers.get(seen.workers.size() - 1)).anySatisfy(s -> {
      assertThat(s.name()).isEqualTo("w1");
      assertThat(s.leftReason()).isEqualTo("connection reset");
    });
  }

  @Test
  void anEjectionIsToldToTheObservers() {
    Recorder r = new Recorder();
    OutlierDetector detector = new OutlierDetector(OutlierPolicy.defaults());
    Scheduler s = Scheduler.builder(store, clock, clock, new SplittableRandom(5)).outliers(detector).observer(r).build();
    long runId = createRun(40);
    s.activate(runId);
    FakeWorker bad = new FakeWorker("bad", 1);
    s.workerJoined(bad);
    s.step();
    for (int i = 0; i < 10 && r.events.stream().noneMatch(e -> e.startsWith("outlier bad EJECTED")); i++) {
      for (Assignment a : bad.takeAssigned()) {
        s.attemptEnded(bad, AttemptReport.failed(a.jobId(), a.token(),
            new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, "endpoint down")));
      }
      clock.advance(Duration.ofMillis(10));
      s.step();
    }
    assertThat(r.events).anyMatch(e -> e.startsWith("outlier bad EJECTED"));
  }
}

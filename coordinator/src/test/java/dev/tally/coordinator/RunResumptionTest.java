package dev.tally.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.CaseRecord;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.store.SqliteStore;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which run a submission resumes, and when an earlier coordinator's leases are released. */
class RunResumptionTest {
  private static final Instant NOW = Instant.parse("2026-12-01T00:00:00Z");
  private static final EvaluatorSpec NOOP = new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1));
  private static final List<CaseRecord> CASES = List.of(
      new CaseRecord(0, "a", "{\"id\":\"a\"}"), new CaseRecord(1, "b", "{\"id\":\"b\"}"));

  @TempDir Path dir;
  private Store store;
  private RunResumption onEphemeralPort;

  @BeforeEach
  void open() {
    store = SqliteStore.open(dir.resolve("t.db"));
    onEphemeralPort = new RunResumption(store, Clock.fixed(NOW, ZoneOffset.UTC), false, RedeliveryPolicy.defaults());
  }

  @AfterEach
  void close() {
    store.close();
  }

  private static RunSpec spec(String digest) {
    return new RunSpec("/data/cases.jsonl", NOOP, 5, digest);
  }

  @Test
  void aNewSubmissionCreatesARun() {
    RunResumption.Choice c = onEphemeralPort.runFor(spec("d1"), CASES);
    assertThat(c.resumed()).isEmpty();
    assertThat(c.changedSince()).isEmpty();
    assertThat(store.jobs(c.runId())).extracting(JobView::caseId).containsExactly("a", "b");
  }

  @Test
  void theSameSpecAndCasesResumeTheUnfinishedRun() {
    long first = store.createRun(spec("d1"), CASES);
    RunResumption.Choice c = onEphemeralPort.runFor(spec("d1"), CASES);
    assertThat(c.runId()).isEqualTo(first);
    assertThat(c.resumed()).hasValueSatisfying(t -> assertThat(t.run().runId()).isEqualTo(first));
    assertThat(store.runs()).hasSize(1);
  }

  @Test
  void anEditedDatasetIsANewRunAndTheOldOneIsReported() {
    long old = store.createRun(spec("d1"), CASES);
    RunResumption.Choice c = onEphemeralPort.runFor(spec("d2"), CASES);
    assertThat(c.runId()).isNotEqualTo(old);
    assertThat(c.resumed()).isEmpty();
    assertThat(c.changedSince()).extracting(RunView::runId).containsExactly(old);
  }

  /** A coordinator killed after its run's end, before the results: the same command says which run finished. */
  @Test
  void aNewRunNamesTheLatestFinishedRunOfTheSameSpec() {
    long older = store.createRun(spec("d1"), List.of()); // no cases: finished at once
    long latest = store.createRun(spec("d1"), List.of());
    store.createRun(spec("d2"), List.of());
    long cancelled = store.createRun(spec("d1"), CASES);
    store.cancelRun(cancelled, NOW.toEpochMilli());
    RunResumption.Choice c = onEphemeralPort.runFor(spec("d1"), CASES);
    assertThat(c.resumed()).isEmpty();
    assertThat(c.finishedBefore()).map(RunView::runId).hasValue(latest);
    assertThat(older).isLessThan(latest);
    assertThat(onEphemeralPort.runFor(spec("d3"), CASES).finishedBefore()).isEmpty();
  }

  @Test
  void theSameSpecWithCasesInAnotherOrderIsANewRun() {
    long old = store.createRun(spec("d1"), CASES);
    RunResumption.Choice c = onEphemeralPort.runFor(spec("d1"), List.of(
        new CaseRecord(0, "b", "{\"id\":\"b\"}"), new CaseRecord(1, "a", "{\"id\":\"a\"}")));
    assertThat(c.runId()).isNotEqualTo(old);
    assertThat(c.resumed()).isEmpty();
  }

  @Test
  void anEphemeralPortReleasesTheEarlierCoordinatorsLeasesAtOnce() {
    long runId = store.createRun(spec("d1"), CASES);
    leaseAll(runId);
    RunResumption.Choice c = onEphemeralPort.runFor(spec("d1"), CASES);
    assertThat(c.resumed()).hasValueSatisfying(t -> assertThat(t.leasesReleased()).isEqualTo(2));
    assertThat(store.jobs(runId)).extracting(JobView::state).containsOnly(JobState.PENDING);
  }

  @Test
  void aFixedPortLeavesTheLeasesForReconnectingWorkers() {
    long runId = store.createRun(spec("d1"), CASES);
    leaseAll(runId);
    RunResumption onFixedPort = new RunResumption(store, Clock.fixed(NOW, ZoneOffset.UTC), true, RedeliveryPolicy.defaults());
    RunResumption.Choice c = onFixedPort.runFor(spec("d1"), CASES);
    assertThat(c.resumed()).hasValueSatisfying(t -> assertThat(t.leasesReleased()).isZero());
    assertThat(store.jobs(runId)).extracting(JobView::state).containsOnly(JobState.LEASED);
  }

  private void leaseAll(long runId) {
    long now = NOW.toEpochMilli() - 1_000;
    store.apply(StoreBatch.builder(now, List.of(runId), RedeliveryPolicy.defaults()).lease(new LeaseRequest("w1", 2, now + 30_000)).build());
  }

  @Test
  void aServerTakesOverEveryRunThatHasNotEndedOldestFirst() {
    long finished = store.createRun(spec("f"), List.of());
    long first = store.createRun(spec("1"), CASES);
    long cancelled = store.createRun(spec("c"), CASES);
    store.cancelRun(cancelled, NOW.toEpochMilli());
    long second = store.createRun(spec("2"), CASES);
    store.apply(StoreBatch.builder(NOW.toEpochMilli(), List.of(second), RedeliveryPolicy.defaults())
        .lease(new LeaseRequest("w1", 1, NOW.toEpochMilli() + 60_000)).build());

    List<RunResumption.TakeOver> taken = onEphemeralPort.takeOverUnfinished();
    assertThat(taken).extracting(t -> t.run().runId()).containsExactly(first, second);
    assertThat(taken).extracting(RunResumption.TakeOver::leasesReleased).containsExactly(0, 1);
    assertThat(finished).isNotIn(first, second);
  }
}

package dev.tally.coordinator.report;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.CaseState;
import dev.tally.core.Verdict;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The results lines of a run read a page at a time ({@link RunReport#forEachResult}): every ended case once,
 * in dataset order across pages, and the attempt history of exactly the cases tried more than once.
 */
class RunReportResultsTest {
  private static final long NOW = Instant.parse("2026-12-01T00:00:00Z").toEpochMilli();

  @Test
  void aRunOfSeveralPagesGivesEveryEndedCaseOnceInOrderWithTheHistoryOfARetriedOne() throws Exception {
    InMemoryStore store = InMemoryStore.create(Clock.fixed(Instant.ofEpochMilli(NOW), ZoneOffset.UTC));
    int n = RunReport.RESULTS_PAGE * 2 + 345;
    List<CaseRecord> cases = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      cases.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}"));
    }
    long runId = store.createRun(new RunSpec("d", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 5, "x"), cases);
    RedeliveryPolicy redelivery = RedeliveryPolicy.defaults();
    // Lease all; hand the first one back (a lost worker), then record all but the last case.
    List<Assignment> leased = store.apply(StoreBatch.builder(NOW, List.of(runId), redelivery)
        .lease(new LeaseRequest("w1", n, NOW + 60_000)).build()).leases().get(0);
    assertThat(leased).hasSize(n);
    Assignment first = leased.get(0);
    store.apply(StoreBatch.builder(NOW, List.of(runId), redelivery).release(new ReleaseRequest(first.jobId(), first.token(),
        new InfraFailure(InfraFailure.Kind.WORKER_LOST, "worker lost"), NOW, CaseState.RUNNING, AttemptTiming.NONE)).build());
    Assignment again = store.apply(StoreBatch.builder(NOW, List.of(runId), redelivery)
        .lease(new LeaseRequest("w2", 1, NOW + 60_000)).build()).leases().get(0).get(0);
    assertThat(again.jobId()).isEqualTo(first.jobId());
    StoreBatch.Builder records = StoreBatch.builder(NOW, List.of(runId), redelivery)
        .record(new RecordRequest(again.jobId(), again.token(), "w2", new Outcome(Verdict.PASS, 1.0, "", 1), AttemptTiming.NONE));
    for (Assignment a : leased.subList(1, n - 1)) {
      records.record(new RecordRequest(a.jobId(), a.token(), "w1", new Outcome(Verdict.PASS, 1.0, "", 1), AttemptTiming.NONE));
    }
    store.apply(records.build());

    List<JsonNode> lines = new ArrayList<>();
    RunReport.forEachResult(store, runId, lines::add);

    assertThat(lines).as("every ended case, and not the one still leased").hasSize(n - 1);
    for (int i = 0; i < n - 1; i++) {
      assertThat(lines.get(i).get("id").asText()).isEqualTo("c" + i);
    }
    assertThat(lines.get(0).get("history")).as("the retried case shows its two attempts").hasSize(2);
    assertThat(lines.get(0).get("worker").asText()).isEqualTo("w2");
    assertThat(lines.subList(1, n - 1)).allSatisfy(l -> assertThat(l.has("history")).isFalse());
  }
}

package dev.tally.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.core.Assignment;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Verdict;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.schedule.WorkerHandle;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

class LocalWorkerTest {
  /** Records every event, in order. */
  static final class Events implements WorkerEvents {
    final List<WorkerHandle> joined = new CopyOnWriteArrayList<>();
    final List<AttemptReport> reports = new CopyOnWriteArrayList<>();
    final List<String> lost = new CopyOnWriteArrayList<>();

    @Override
    public void workerJoined(WorkerHandle worker) {
      joined.add(worker);
    }

    @Override
    public void attemptEnded(WorkerHandle worker, AttemptReport report) {
      reports.add(report);
    }

    @Override
    public void workerLost(WorkerHandle worker, String reason) {
      lost.add(reason);
    }
  }

  /** An assignment in run {@code jobId} (a run's evaluator is fixed by its first assignment). */
  private static Assignment assignment(long jobId, EvaluatorSpec spec, String caseJson) {
    return new Assignment(jobId, jobId, 7, 1, "c" + jobId, caseJson, spec);
  }

  @Test
  void runsAssignedCasesAndReportsEachWithItsToken() {
    Events events = new Events();
    LocalWorker worker = LocalWorker.start("in-process", 2, 2, events, "store-a");
    try {
      assertThat(events.joined).containsExactly(worker);
      assertThat(worker.dispatchWindow()).isEqualTo(4);
      EvaluatorSpec sleep = new EvaluatorSpec("sleep", Map.of(), Duration.ofSeconds(10));
      worker.assign(List.of(
          new Assignment(1, 1, 7, 1, "c1", "{\"id\":\"c1\",\"millis\":5}", sleep),
          new Assignment(2, 1, 7, 1, "c2", "{\"id\":\"c2\"}", sleep)));
      await().atMost(Duration.ofSeconds(10)).until(() -> events.reports.size() == 2);
      assertThat(events.reports).extracting(AttemptReport::jobId).containsExactlyInAnyOrder(1L, 2L);
      assertThat(events.reports).allMatch(r -> r.token() == 7 && r.outcome() != null && r.outcome().verdict() == Verdict.PASS);
    } finally {
      worker.close("test over");
    }
    assertThat(events.lost).containsExactly("test over");
  }

  @Test
  void anAbandonedCaseIsStoppedAndNotReported() {
    Events events = new Events();
    LocalWorker worker = LocalWorker.start("in-process", 1, 0, events, "store-a");
    try {
      EvaluatorSpec sleep = new EvaluatorSpec("sleep", Map.of("millis", "60000"), Duration.ofMinutes(2));
      worker.assign(List.of(assignment(1, sleep, "{\"id\":\"c1\"}")));
      worker.abandon(1, 7, "lease revoked");
      EvaluatorSpec noop = new EvaluatorSpec("noop", Map.of(), Duration.ofSeconds(10));
      worker.assign(List.of(assignment(2, noop, "{\"id\":\"c2\"}")));
      // The single slot is free again only if the sleeping case really stopped.
      await().atMost(Duration.ofSeconds(10)).until(() -> events.reports.size() == 1);
      assertThat(events.reports.get(0).jobId()).isEqualTo(2);
    } finally {
      worker.close("test over");
    }
  }

  @Test
  void anUnknownEvaluatorIsAReportedRetryableFailure() {
    Events events = new Events();
    LocalWorker worker = LocalWorker.start("in-process", 1, 0, events, "store-a");
    try {
      worker.assign(List.of(assignment(1, new EvaluatorSpec("nope", Map.of(), Duration.ofSeconds(1)), "{\"id\":\"c1\"}")));
      await().atMost(Duration.ofSeconds(5)).until(() -> events.reports.size() == 1);
      assertThat(events.reports.get(0).failure().kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
      assertThat(events.reports.get(0).failure().detail()).contains("nope");
    } finally {
      worker.close("test over");
    }
  }
}

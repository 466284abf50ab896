package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally run} stopped with SIGTERM mid-run reads as one stop: its local workers say that tally run
 * stopped them, nothing is reported lost or redelivered, and the same command finishes the run.
 */
class RunStopProcessTest {
  @TempDir Path dir;

  @Test
  void stoppingTallyRunStopsItsWorkersWithoutReportingThemLost() throws Exception {
    int total = 200;
    Path dataset = Files.write(dir.resolve("cases.jsonl"),
        java.util.stream.IntStream.range(0, total).mapToObj(i -> "{\"id\":\"c" + i + "\",\"millis\":200}").toList());
    Path db = dir.resolve("t.db");
    List<String> command = List.of("run", dataset.toString(), "--workers=2", "--slots=2", "--evaluator=sleep", "--db=" + db,
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress");
    try (TallyProcess run = TallyProcess.start(dir, "run-1.log", command)) {
      try {
        await("some cases recorded").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
            .until(() -> TallyProcess.counters(db).map(c -> c.recorded() >= 20).orElse(false));
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        throw new AssertionError(e.getMessage() + "; tally output:\n" + run.output(), e);
      }
      Signals.send(run.process.pid(), "TERM");
      run.waitFor(60);
      assertThat(run.output()).contains("tally: stopped before run 1 finished")
          .as("a stop is not a loss").doesNotContain("lost").doesNotContain("redeliver");
    }
    Path logs = dir.resolve("t.db-logs").resolve("run-1");
    for (String worker : List.of("worker-1.log", "worker-2.log")) {
      assertThat(Files.readString(logs.resolve(worker))).as(worker)
          .contains("tally worker: " + RunnerCommand.STOPPED_BEFORE_THE_END).doesNotContain("SIGTERM");
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      assertThat(store.workerStatuses()).isNotEmpty()
          .allSatisfy(w -> assertThat(w.leftReason()).isEqualTo("the coordinator stopped"));
    }

    try (TallyProcess again = TallyProcess.start(dir, "run-2.log", command)) {
      assertThat(again.waitFor(120)).as("output:%n%s", again.output()).isZero();
      assertThat(again.output()).contains("resuming run 1").contains("by the previous coordinator's workers");
    }
    assertThat(Files.readAllLines(dir.resolve("results.jsonl"))).hasSize(total);
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      RunView finished = store.runs().get(0);
      assertThat(finished.counters().recorded()).isEqualTo(total);
      assertThat(finished.counters().duplicatesSuppressed()).isZero();
    }
  }
}

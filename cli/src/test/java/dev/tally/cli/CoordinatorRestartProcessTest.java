package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The coordinator itself killed with {@code kill -9}, twice in one run, and the same {@code tally run}
 * command started again each time: it resumes the run, and every case is recorded exactly once.
 */
class CoordinatorRestartProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void killingTheCoordinatorTwiceMidRunLosesNothingAndCountsNothingTwice() throws Exception {
    int total = 300;
    Path dataset = TallyProcess.sleepDataset(dir.resolve("cases.jsonl"), total, "c", 7);
    Path db = dir.resolve("t.db");
    List<String> command = List.of(
        "run", dataset.toString(), "--workers=2", "--slots=2", "--evaluator=sleep", "--db=" + db,
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"),
        "--heartbeat-interval=200ms", "--detection-window=1s", "--no-progress");

    List<Long> killedCoordinators = new ArrayList<>();
    for (int round = 1; round <= 2; round++) {
      long target = total * round / 3;
      try (TallyProcess tally = TallyProcess.start(dir, "run-" + round + ".log", command)) {
        try {
          await("round " + round + ": " + target + " recorded").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
              .until(() -> TallyProcess.counters(db).map(c -> c.recorded() >= target).orElse(false));
        } catch (org.awaitility.core.ConditionTimeoutException e) {
          throw new AssertionError(e.getMessage() + "; tally output:\n" + tally.output(), e);
        }
        Signals.send(tally.process.pid(), "KILL");
        killedCoordinators.add(tally.process.pid());
        tally.process.waitFor();
      }
    }
    long recordedBeforeLastStart = TallyProcess.counters(db).orElseThrow().recorded();

    try (TallyProcess tally = TallyProcess.start(dir, "run-3.log", command)) {
      assertThat(tally.waitFor(120)).as("output:%n%s", tally.output()).isZero();
      assertThat(tally.output()).contains("resuming run 1");
    }

    List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
    assertThat(results).hasSize(total);
    for (int i = 0; i < total; i++) {
      JsonNode row = JSON.readTree(results.get(i));
      assertThat(row.get("id").asText()).isEqualTo("c" + i);
      assertThat(row.get("verdict").asText()).isEqualTo("pass");
    }
    try (SqliteStore store = SqliteStore.open(db)) {
      assertThat(store.runs()).as("the run was resumed, never started over").hasSize(1);
      RunView run = store.runs().get(0);
      assertThat(run.ended()).isTrue();
      assertThat(run.counters().recorded()).isEqualTo(total);
      assertThat(run.counters().duplicatesSuppressed()).isZero();
      List<AttemptView> attempts = store.attempts(run.runId());
      Map<Long, Long> recordedPerJob = attempts.stream().filter(a -> a.ending().equals("recorded"))
          .collect(Collectors.groupingBy(AttemptView::jobId, Collectors.counting()));
      assertThat(recordedPerJob).hasSize(total).allSatisfy((job, n) -> assertThat(n).isEqualTo(1));
      Map<Long, AttemptView> recordedAttempt = attempts.stream().filter(a -> a.ending().equals("recorded"))
          .collect(Collectors.toMap(AttemptView::jobId, Function.identity()));
      assertThat(attempts)
          .as("no case already recorded ran again")
          .noneMatch(a -> !a.ending().equals("recorded") && a.startedAtMillis() > recordedAttempt.get(a.jobId()).endedAtMillis());
      assertThat(recordedBeforeLastStart).isLessThan(total);
    }
    // The killed coordinators' worker processes noticed and exited.
    await("no worker outlives its coordinator").atMost(Duration.ofSeconds(15)).until(() ->
        ProcessHandle.allProcesses().noneMatch(p -> killedCoordinators.stream().anyMatch(pid -> TallyProcess.commandLine(p.pid()).contains("--parent-pid=" + pid))));
  }

  @Test
  void aRemoteWorkerKeepsItsLeasesAndResendsItsResultsAcrossACoordinatorRestart() throws Exception {
    int total = 60;
    int port = Ports.freeFixedLoopbackPort();
    Path dataset = dir.resolve("cases.jsonl");
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      lines.add("{\"id\":\"c" + i + "\",\"millis\":300}");
    }
    Files.write(dataset, lines);
    Path db = dir.resolve("t.db");
    List<String> command = List.of(
        "run", dataset.toString(), "--workers=0", "--listen=127.0.0.1:" + port, "--evaluator=sleep", "--db=" + db,
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress");
    long crashedAtMillis;
    try (TallyProcess worker = TallyProcess.start(dir, "worker.log", List.of("worker", "--coordinator=127.0.0.1:" + port, "--slots=2", "--name=remote"))) {
      try (TallyProcess first = TallyProcess.start(dir, "run-1.log", command)) {
        try {
          await("a quarter recorded").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
              .until(() -> TallyProcess.counters(db).map(c -> c.recorded() >= total / 4).orElse(false));
        } catch (org.awaitility.core.ConditionTimeoutException e) {
          throw new AssertionError(e.getMessage() + "; run output:\n" + first.output() + "\nworker output:\n" + worker.output(), e);
        }
        Signals.send(first.process.pid(), "KILL");
        crashedAtMillis = System.currentTimeMillis();
        first.process.waitFor();
      }
      try (TallyProcess second = TallyProcess.start(dir, "run-2.log", command)) {
        assertThat(second.waitFor(120)).as("output:%n%s", second.output()).isZero();
      }
      assertThat(worker.process.isAlive()).as("the worker rode out the restart").isTrue();
    }
    assertThat(Files.readAllLines(dir.resolve("results.jsonl"))).hasSize(total);
    try (SqliteStore store = SqliteStore.open(db)) {
      RunView run = store.runs().get(0);
      assertThat(store.runs()).hasSize(1);
      assertThat(run.counters().recorded()).isEqualTo(total);
      List<AttemptView> attempts = store.attempts(run.runId());
      Map<Long, Long> recordedPerJob = attempts.stream().filter(a -> a.ending().equals("recorded"))
          .collect(Collectors.groupingBy(AttemptView::jobId, Collectors.counting()));
      assertThat(recordedPerJob).hasSize(total).allSatisfy((job, n) -> assertThat(n).isEqualTo(1));
      assertThat(attempts)
          .as("a lease issued before the crash was kept by its worker and recorded after the restart")
          .anyMatch(a -> a.ending().equals("recorded") && a.startedAtMillis() < crashedAtMillis && a.endedAtMillis() > crashedAtMillis);
    }
  }
}

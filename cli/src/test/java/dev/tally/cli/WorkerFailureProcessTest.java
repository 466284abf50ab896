package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.store.JdbcStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * The promise under the two plain deaths, with real processes and real signals: a worker killed with
 * {@code kill -9} (its socket closes) and a worker frozen with {@code SIGSTOP} (its socket stays open,
 * silent) while {@code tally run} works through 900 sleep cases on 3 worker JVMs; the killed worker is
 * started again by its supervisor. On both stores: a SQLite file and a PostgreSQL database.
 */
class WorkerFailureProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration WINDOW = Duration.ofSeconds(1);

  @TempDir Path dir;

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"sqlite", "postgresql"})
  void runFinishesEveryCaseExactlyOnceThroughKillAndFreeze(String storeKind) throws Exception {
    int total = 900;
    Path dataset = TallyProcess.sleepDataset(dir.resolve("cases.jsonl"), total, "sleep-", 42);
    StoreUnderTest db = StoreUnderTest.of(storeKind, dir);

    // One slot per worker and 900 cases keep the run long enough (about 15 s of sleeping per worker) that
    // the thawed worker is back, with its late results, well before the last case ends, even on a loaded
    // machine where local health stretches the conviction of the frozen worker up to 9 windows (2 of 3
    // workers fall silent at once). A window of 3 jobs per worker (1 slot + 2 prefetched) means the
    // frozen one surely holds a running job when it stops. Speculation is off: this test is about
    // redelivery and fencing of the frozen worker's own jobs; a backup attempt that records them first
    // would leave it nothing to lose (and nothing fenced).
    try (TallyProcess tally =
        TallyProcess.start(dir, "tally.log", List.of(
            "run", dataset.toString(), "--workers=3", "--slots=1", "--prefetch=2", "--evaluator=sleep", "--speculation=off", db.dbArgument(),
            "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"),
            "--heartbeat-interval=200ms", "--detection-window=" + WINDOW.toMillis() + "ms", "--no-progress"), db.env())) {
      tally.awaiting(await("three workers started").atMost(Duration.ofSeconds(90)),
          () -> tally.worker("local-1").isPresent() && tally.worker("local-2").isPresent() && tally.worker("local-3").isPresent());
      ProcessHandle killed = tally.worker("local-1").orElseThrow();
      ProcessHandle frozen = tally.worker("local-2").orElseThrow();

      tally.awaiting(await("25% recorded").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)),
          () -> db.counters().map(c -> c.recorded() >= total / 4).orElse(false));
      Signals.send(killed.pid(), "KILL");
      Signals.send(frozen.pid(), "STOP");
      int outputAtFreeze = tally.output().length(); // a reap of local-2 before the freeze must not count
      // Hold the freeze for twice the detection window (the scenario), and until the coordinator has
      // reaped the frozen worker and redelivered its jobs.
      tally.awaiting(await("frozen worker reaped").pollDelay(WINDOW.multipliedBy(2)).atMost(Duration.ofSeconds(30)),
          () -> tally.output().indexOf("worker local-2 lost (reaped", outputAtFreeze) >= 0);
      long thawedAtMillis = System.currentTimeMillis();
      Signals.send(frozen.pid(), "CONT");
      tally.awaiting(await("the killed worker is started again by tally run").atMost(Duration.ofSeconds(30)),
          () -> tally.worker("local-1").map(p -> p.pid() != killed.pid()).orElse(false));

      int exit = tally.waitFor(120);
      assertThat(exit).as("exit code; output:%n%s", tally.output()).isZero();
      assertThat(killed.isAlive()).isFalse();

      // Every case exactly once in the results, in dataset order, all passed.
      List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
      assertThat(results).hasSize(total);
      Set<String> ids = new HashSet<>();
      for (int i = 0; i < total; i++) {
        JsonNode row = JSON.readTree(results.get(i));
        assertThat(row.get("id").asText()).isEqualTo("sleep-" + i);
        assertThat(row.get("verdict").asText()).isEqualTo("pass");
        ids.add(row.get("id").asText());
      }
      assertThat(ids).hasSize(total);

      JsonNode summary = JSON.readTree(dir.resolve("summary.json").toFile());
      assertThat(summary.get("total").asLong()).isEqualTo(total);
      assertThat(summary.get("recorded").asLong()).isEqualTo(total);
      assertThat(summary.get("passed").asLong()).isEqualTo(total);
      assertThat(summary.get("redeliveries").asLong()).as("the killed and the frozen worker's jobs were redelivered").isPositive();
      assertThat(summary.get("staleResultsFenced").asLong()).as("the frozen worker's late results are fenced; output:%n%s", tally.output()).isPositive();

      try (JdbcStore store = db.open()) {
        RunView run = store.runs().get(0);
        assertThat(run.ended()).isTrue();
        assertThat(run.counters().recorded()).isEqualTo(total);
        List<JobView> jobs = store.jobs(run.runId());
        assertThat(jobs).hasSize(total).allMatch(j -> j.state() == JobState.DONE);
        List<AttemptView> attempts = store.attempts(run.runId());
        assertThat(attempts.stream().filter(a -> a.ending().equals("recorded")).count())
            .as("each job recorded exactly once").isEqualTo(total);
        List<AttemptView> thawedWorkers = attempts.stream().filter(a -> a.worker().equals("local-2")).toList();
        assertThat(thawedWorkers)
            .as("the thawed worker rejoined and took new work (thawed at %d); output:%n%s", thawedAtMillis, tally.output())
            .anyMatch(a -> a.ending().equals("recorded") && a.startedAtMillis() > thawedAtMillis);
      }
    }
  }

  /**
   * A coordinator paused (a long GC, SIGSTOP) for longer than the detection window must not blame its
   * workers for the silence: their heartbeats wait unread in its sockets, and it reaps no one.
   */
  @Test
  void aCoordinatorPausedLongerThanTheDetectionWindowReapsNoWorker() throws Exception {
    int total = 600;
    Path dataset = TallyProcess.sleepDataset(dir.resolve("cases.jsonl"), total, "c", 7);
    Path db = dir.resolve("t.db");
    try (TallyProcess tally = TallyProcess.start(dir, "tally.log", List.of(
        "run", dataset.toString(), "--workers=3", "--slots=2", "--evaluator=sleep", "--db=" + db,
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress"))) {
      await("20% recorded").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> TallyProcess.counters(db).map(c -> c.recorded() >= total / 5).orElse(false));
      // The default detector (phi) convicts after about 2.5 s of silence on a steady link.
      Signals.send(tally.process.pid(), "STOP");
      try {
        Thread.sleep(4_000); // the scenario itself: hold the stop past the window (not a wait for a condition)
      } finally {
        Signals.send(tally.process.pid(), "CONT");
      }
      assertThat(tally.waitFor(120)).as("exit code; output:%n%s", tally.output()).isZero();
      assertThat(tally.output()).as("no worker was reaped").doesNotContain("lost (reaped");
    }
    JsonNode summary = JSON.readTree(dir.resolve("summary.json").toFile());
    assertThat(summary.get("recorded").asLong()).isEqualTo(total);
    assertThat(summary.get("redeliveries").asLong()).as("no job was taken from a live worker").isZero();
    assertThat(summary.get("staleResultsFenced").asLong()).isZero();
  }
}

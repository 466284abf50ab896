package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a {@code tally worker} process stops, with real signals: a graceful drain on SIGTERM (rolling
 * restarts, spot instances, Kubernetes), at once on a second one, and by itself when no coordinator
 * welcomes it for its give-up time.
 */
class WorkerDrainProcessTest {
  @TempDir Path dir;

  /**
   * A dataset of one long case (id {@code long}, sleeping {@code longMillis} with the sleep evaluator)
   * first, then {@code shorts} cases of 300 ms.
   */
  private Path dataset(long longMillis, int shorts) throws Exception {
    List<String> lines = new ArrayList<>();
    lines.add("{\"id\":\"long\",\"millis\":" + longMillis + "}");
    for (int i = 0; i < shorts; i++) {
      lines.add("{\"id\":\"s" + i + "\",\"millis\":300}");
    }
    return Files.write(dir.resolve("cases.jsonl"), lines);
  }

  private TallyProcess coordinator(Path dataset, Path db, int port) throws Exception {
    // --prefetch 2: a one-slot worker holds the long case and two queued ones when the signal comes.
    // --speculation off: the long case outlasts the others many times over, and a backup of it on the helper
    // would make it run twice; this test is about the drain alone.
    return TallyProcess.start(dir, "run.log", List.of(
        "run", dataset.toString(), "--listen=127.0.0.1:" + port, "--workers=0", "--evaluator=sleep", "--prefetch=2",
        "--speculation=off",
        "--db=" + db, "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress"));
  }

  /** The job of case {@code caseId}, read without migrating a store a live coordinator may be creating. */
  private static Optional<JobView> job(Path db, String caseId) {
    if (!Files.exists(db)) {
      return Optional.empty();
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      List<RunView> runs = store.runs();
      if (runs.isEmpty()) {
        return Optional.empty();
      }
      return store.jobs(runs.get(0).runId()).stream().filter(j -> j.caseId().equals(caseId)).findFirst();
    } catch (RuntimeException notReadyYet) {
      return Optional.empty();
    }
  }

  private static boolean leasedTo(Path db, String caseId, String worker) {
    return job(db, caseId).map(j -> j.state() == JobState.LEASED && worker.equals(j.worker())).orElse(false);
  }

  @Test
  void sigtermHandsBackQueuedJobsAtOnceAndTheRunningCaseFinishesOnceAndIsDeliveredBeforeTheWorkerExitsZero() throws Exception {
    int port = Ports.freeFixedLoopbackPort();
    Path db = dir.resolve("t.db");
    int total = 7;
    try (TallyProcess run = coordinator(dataset(20_000, total - 1), db, port);
        TallyProcess drainer = TallyProcess.start(dir, "drainer.log", List.of(
            "worker", "--coordinator=127.0.0.1:" + port, "--slots=1", "--name=drainer"))) {
      await("the long case runs on the drainer").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> leasedTo(db, "long", "drainer"));
      Thread.sleep(5_000); // the scenario itself: SIGTERM 5 s into the 20 s case

      long termAtMillis = System.currentTimeMillis();
      long termAt = System.nanoTime();
      Signals.send(drainer.process.pid(), "TERM");
      try (TallyProcess helper = TallyProcess.start(dir, "helper.log", List.of(
          "worker", "--coordinator=127.0.0.1:" + port, "--slots=2", "--name=helper"))) {
        assertThat(drainer.waitFor(60)).as("drainer output:%n%s", drainer.output()).isZero();
        long exitedAfterMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - termAt);
        assertThat(exitedAfterMillis).as("it waited for its case (about 15 s more), not for the 30 s timeout")
            .isBetween(10_000L, 29_000L);
        assertThat(drainer.output()).contains("received SIGTERM: draining")
            .contains("tally worker: drained: every case finished and every result was delivered");
        assertThat(job(db, "long").orElseThrow().state()).as("recorded before the drainer exited").isEqualTo(JobState.DONE);

        assertThat(run.waitFor(120)).as("run output:%n%s", run.output()).isZero();
      }

      try (SqliteStore store = SqliteStore.openExisting(db)) {
        RunView view = store.runs().get(0);
        assertThat(view.counters().recorded()).isEqualTo(total);
        List<JobView> jobs = store.jobs(view.runId());
        assertThat(jobs).hasSize(total).allMatch(j -> j.state() == JobState.DONE);
        JobView longJob = jobs.stream().filter(j -> j.caseId().equals("long")).findFirst().orElseThrow();
        List<AttemptView> attempts = store.attempts(view.runId());
        assertThat(attempts.stream().filter(a -> a.jobId() == longJob.jobId()))
            .as("the long case ran once, on the drainer").singleElement()
            .satisfies(a -> assertThat(a.worker()).isEqualTo("drainer"))
            .satisfies(a -> assertThat(a.ending()).isEqualTo("recorded"));
        List<AttemptView> handedBack = attempts.stream().filter(a -> a.ending().equals("handed_back")).toList();
        assertThat(handedBack).as("the two queued jobs").hasSizeGreaterThanOrEqualTo(2)
            .allMatch(a -> a.worker().equals("drainer"));
        assertThat(handedBack).as("handed back at once, not when the drain ended")
            .allMatch(a -> a.endedAtMillis() - termAtMillis < 5_000);
        assertThat(attempts.stream().filter(a -> a.ending().equals("recorded")).count()).isEqualTo(total);
      }
    }
  }

  /** A second signal stops at once: the running case's process is killed, and the exit code says why. */
  @Test
  void aSecondSigtermDuringTheDrainStopsAtOnceAndKillsTheRunningCase() throws Exception {
    int port = Ports.freeFixedLoopbackPort();
    Path db = dir.resolve("t.db");
    // Each case writes its process id where the test can see it: the case has really started, and
    // afterwards, whether its process is gone.
    try (TallyProcess run = TallyProcess.start(dir, "run.log", List.of(
            "run", dataset(0, 2).toString(), "--listen=127.0.0.1:" + port, "--workers=0", "--prefetch=2", "--db=" + db,
            "--evaluator=exec", "--cmd=sh -c 'echo $$ > case-{id}.pid; exec sleep 120'",
            "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress"));
        TallyProcess drainer = TallyProcess.start(dir, "drainer.log", List.of(
            "worker", "--coordinator=127.0.0.1:" + port, "--slots=1", "--name=drainer"))) {
      Path pidFile = dir.resolve("case-long.pid");
      await("the long case runs").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> Files.exists(pidFile) && !Files.readString(pidFile).isBlank());
      long casePid = Long.parseLong(Files.readString(pidFile).trim());
      Signals.send(drainer.process.pid(), "TERM");
      await("draining").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> drainer.output().contains("received SIGTERM: draining"));
      assertThat(drainer.process.isAlive()).as("the 120 s case keeps it draining; output:%n%s", drainer.output()).isTrue();

      long secondAt = System.nanoTime();
      Signals.send(drainer.process.pid(), "TERM");

      assertThat(drainer.waitFor(30)).as("drainer output:%n%s", drainer.output()).isEqualTo(128 + 15);
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - secondAt)).as("at once").isLessThan(10_000);
      assertThat(drainer.output()).contains("received SIGTERM again: stopping at once");
      await("the case's process is killed").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100))
          .until(() -> ProcessHandle.of(casePid).map(p -> !p.isAlive()).orElse(true));
      await("the coordinator takes the long case back").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> job(db, "long").map(j -> j.state() == JobState.PENDING).orElse(false));
      assertThat(Files.exists(dir.resolve("case-s0.pid"))).as("the queued cases never started; drainer output:%n%s%ncoordinator output:%n%s",
          drainer.output(), run.output()).isFalse();
    }
  }

  @Test
  void aWorkerNoCoordinatorWelcomesGivesUpAfterItsTimeWithTheReason() throws Exception {
    int port = Ports.freeFixedLoopbackPort(); // nobody listens there
    long before = System.nanoTime();
    try (TallyProcess worker = TallyProcess.start(dir, "worker.log", List.of(
        "worker", "--coordinator=127.0.0.1:" + port, "--slots=1", "--give-up-after=2s"))) {
      assertThat(worker.waitFor(60)).as("worker output:%n%s", worker.output()).isEqualTo(1);
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before)).isGreaterThanOrEqualTo(2_000);
      assertThat(worker.output())
          .contains("cannot reach coordinator 127.0.0.1:" + port + " (attempt 1,")
          .contains("next attempt in")
          .contains("gave up: no Welcome from the coordinator at 127.0.0.1:" + port + " for 2.");
    }
  }
}

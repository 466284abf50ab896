package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.RunView;
import dev.tally.simulation.Checker;
import dev.tally.store.SqliteStore;
import dev.tally.worker.eval.FakeChatServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The model evaluator's never-pay-twice promise with real processes and real {@code kill -9}: a coordinator
 * ({@code tally run --workers=0 --listen}) and 3 {@code tally worker} processes run {@value #CASES}
 * arithmetic cases with {@code --evaluator model} against {@link FakeChatServer} on loopback, answering with
 * a latency; mid-run a worker, or the coordinator, is killed.
 *
 * <p>To know exactly which requests were in flight at a kill, the test holds the endpoint's answers ({@link
 * FakeChatServer#hold}) and waits until every slot of the fleet is waiting on it: every earlier answer has
 * then been journalled (a slot journals its response before it goes on to its next case), so the requests
 * whose response had not reached Tally at the kill are exactly those the server has in flight. Then, for
 * each kill: every case recorded exactly once (the invariant checker's I1-I5, one recorded attempt each, one
 * results line each) and {@code cases <= billed <= cases + in flight at the kill}.
 */
class ModelKillProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int CASES = 300;
  private static final int WORKERS = 3;
  private static final int SLOTS = 4;
  private static final String KEY = "sk-fake-kill-0123456789abcdef";
  private static final String KEY_ENV = "TALLY_TEST_MODEL_KEY";
  /** The endpoint's latency: long enough that a third of the run takes seconds, short enough for CI. */
  private static final Duration LATENCY = Duration.ofMillis(100);
  /** Starting four JVMs and answering 300 requests 12 at a time; minutes leave room for a loaded 2-core machine. */
  private static final Duration STAGE = Duration.ofSeconds(120);
  private static final long RUN_SECONDS = 180;
  /** Attempts per case: a killed worker's cases need a second, and false reaps under load a few more. */
  private static final int MAX_ATTEMPTS = 10;

  @TempDir Path dir;

  private FakeChatServer server;
  private Path dataset;
  private Path db;
  private List<String> ids;

  @BeforeEach
  void start() throws IOException {
    server = FakeChatServer.start(KEY);
    server.delay(LATENCY);
    ids = new ArrayList<>();
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < CASES; i++) {
      String id = "q" + i;
      ids.add(id);
      int a = 3 * i + 1;
      int b = 7 * i % 50;
      lines.add("{\"id\":\"" + id + "\",\"input\":\"What is " + a + " + " + b + "?\",\"target\":\"" + (a + b) + "\"}");
    }
    dataset = Files.write(dir.resolve("sums.jsonl"), lines);
    db = dir.resolve("tally.db");
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private List<String> runCommand(int port) {
    return List.of("run", dataset.toString(), "--workers=0", "--listen=127.0.0.1:" + port, "--db=" + db,
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress",
        // The product's detector: a kill -9 closes the worker's socket, seen at once; a short window only reaps
        // live workers starved of CPU on a loaded machine. Attempts to spare for such a reap all the same.
        "--max-attempts=" + MAX_ATTEMPTS,
        "--evaluator=model", "--base-url=" + server.baseUrl(), "--model=calc", "--api-key-env=" + KEY_ENV,
        "--scorer=numeric");
  }

  private List<TallyProcess> workers(int port) throws IOException {
    List<TallyProcess> workers = new ArrayList<>();
    for (int w = 1; w <= WORKERS; w++) {
      workers.add(TallyProcess.start(dir, "worker-" + w + ".log", List.of("worker", "--coordinator=127.0.0.1:" + port,
          "--slots=" + SLOTS, "--name=w" + w), Map.of(KEY_ENV, KEY)));
    }
    return workers;
  }

  /** Waits for {@code condition}, failing with every process's output if it does not come. */
  private static void awaitOr(String what, Callable<Boolean> condition, List<TallyProcess> processes) {
    try {
      await(what).atMost(STAGE).pollInterval(Duration.ofMillis(50)).until(condition);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      StringBuilder outputs = new StringBuilder();
      for (TallyProcess p : processes) {
        outputs.append("\n--- ").append(p.log.getFileName()).append(":\n").append(p.output());
      }
      throw new AssertionError(e.getMessage() + outputs, e);
    }
  }

  /**
   * Runs until a third of the cases are recorded, holds the endpoint's answers and waits until all {@value
   * #WORKERS} x {@value #SLOTS} slots wait on it: nothing answered is then outside the journal.
   */
  private void holdWithEverySlotWaiting(List<TallyProcess> processes) {
    awaitOr("a third recorded", () -> TallyProcess.counters(db).map(c -> c.recorded() >= CASES / 3).orElse(false), processes);
    server.hold();
    awaitOr("every slot waiting on the endpoint", () -> server.inFlight() == WORKERS * SLOTS, processes);
  }

  @Test
  void killingAWorkerMidRunPaysAgainOnlyTheRequestsInFlightAtTheKill() throws Exception {
    int port = Ports.freeFixedLoopbackPort();
    int inFlightAtKill;
    try (TallyProcess run = TallyProcess.start(dir, "run.log", runCommand(port))) {
      List<TallyProcess> workers = workers(port);
      List<TallyProcess> all = new ArrayList<>(workers);
      all.add(run);
      try {
        holdWithEverySlotWaiting(all);
        TallyProcess victim = workers.get(0);
        Signals.send(victim.process.pid(), "KILL");
        victim.process.waitFor();
        inFlightAtKill = server.inFlight();
        server.release();
        assertThat(run.waitFor(RUN_SECONDS)).as("tally run's output:%n%s", run.output()).isEqualTo(Main.EXIT_PASSED);
        assertThat(run.output()).contains("worker w1 lost");
      } finally {
        workers.forEach(TallyProcess::close);
      }
    }
    assertThat(inFlightAtKill).isEqualTo(WORKERS * SLOTS);
    assertEveryCaseOnceAndBilledAtMostAgainFor(inFlightAtKill);
  }

  @Test
  void killingTheCoordinatorMidRunAndRestartingItPaysAgainOnlyTheRequestsInFlightAtTheKill() throws Exception {
    int port = Ports.freeFixedLoopbackPort();
    int inFlightAtKill;
    List<TallyProcess> workers = workers(port);
    try {
      try (TallyProcess first = TallyProcess.start(dir, "run-1.log", runCommand(port))) {
        List<TallyProcess> all = new ArrayList<>(workers);
        all.add(first);
        holdWithEverySlotWaiting(all);
        Signals.send(first.process.pid(), "KILL");
        first.process.waitFor();
        inFlightAtKill = server.inFlight();
      }
      // The answers reach workers with no coordinator: each keeps its response until it can journal it.
      server.release();
      awaitOr("the held requests answered", () -> server.inFlight() == 0, workers);
      try (TallyProcess second = TallyProcess.start(dir, "run-2.log", runCommand(port))) {
        assertThat(second.waitFor(RUN_SECONDS)).as("tally run's output:%n%s", second.output()).isEqualTo(Main.EXIT_PASSED);
        assertThat(second.output()).contains("resuming run 1");
      }
    } finally {
      workers.forEach(TallyProcess::close);
    }
    assertThat(inFlightAtKill).isEqualTo(WORKERS * SLOTS);
    assertEveryCaseOnceAndBilledAtMostAgainFor(inFlightAtKill);
  }

  private void assertEveryCaseOnceAndBilledAtMostAgainFor(int inFlightAtKill) throws Exception {
    List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
    assertThat(results).hasSize(CASES);
    Set<String> seen = new HashSet<>();
    for (String line : results) {
      JsonNode row = JSON.readTree(line);
      assertThat(seen.add(row.get("id").asText())).as("%s once in the results", row.get("id")).isTrue();
      assertThat(row.get("verdict").asText()).as(line).isEqualTo("pass");
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      RunView run = store.runs().get(0);
      Checker.RunCheck check = Checker.checkRun(store, run.runId(), ids);
      assertThat(check.violations()).isEmpty();
      assertThat(check.counters().recorded()).isEqualTo(CASES);
      assertThat(run.counters().duplicatesSuppressed()).isZero();
      assertThat(store.attempts(run.runId()).stream().filter(a -> a.ending().equals("recorded")).count())
          .as("each case recorded by exactly one attempt").isEqualTo(CASES);
      for (String id : ids) {
        assertThat(store.journalledResponses(run.runId(), id)).as("case %s: one journalled response", id).hasSize(1);
      }
    }
    assertThat(server.billedOnceSettled(java.time.Duration.ofSeconds(10)))
        .as("billed requests: every case paid for, and again at most the %d in flight at the kill", inFlightAtKill)
        .isBetween(CASES, CASES + inFlightAtKill);
  }
}

package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunView;
import dev.tally.core.store.StoreException;
import dev.tally.store.SqliteStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The response journal's promise with real processes and {@code kill -9}: a coordinator ({@code tally run
 * --workers=0 --listen}) and two worker processes whose evaluator pays for a call (a line in a billing
 * file) and journals its response ({@link PayingWorker}); one worker is killed while a case it holds has its
 * response journalled but not yet reported, then the coordinator is killed and started again. Every case is
 * recorded once; the killed worker's journalled case is not paid again; and the calls billed are the cases
 * plus at most the calls in flight at each kill (the killed worker's slots, then every slot).
 */
class ResponseJournalProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int SLOTS = 2;

  @TempDir Path dir;

  @Test
  void killingAWorkerAndTheCoordinatorMidRunPaysOnlyTheCallsInFlightAgain() throws Exception {
    int total = 40;
    int port = Ports.freeFixedLoopbackPort();
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      lines.add("{\"id\":\"c" + i + "\"}");
    }
    Path dataset = Files.write(dir.resolve("cases.jsonl"), lines);
    Path db = dir.resolve("t.db");
    Path billing = dir.resolve("billing.txt");
    List<String> command = List.of(
        "run", dataset.toString(), "--workers=0", "--listen=127.0.0.1:" + port, "--evaluator=sleep", "--db=" + db,
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress",
        "--heartbeat-interval=200ms", "--detection-window=1s");
    String victim;
    try (TallyProcess b = worker("b", port, billing)) {
      try (TallyProcess first = TallyProcess.start(dir, "run-1.log", command)) {
        try (TallyProcess a = worker("a", port, billing)) {
          AtomicReference<String> found = new AtomicReference<>();
          try {
            await("a case of worker a journalled and not yet reported").atMost(Duration.ofSeconds(90))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> journalledButLeasedTo(db, "a").map(c -> {
                  found.set(c);
                  return true;
                }).orElse(false));
          } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError(e.getMessage() + "; run output:\n" + first.output() + "\nworker a:\n" + a.output(), e);
          }
          Signals.send(a.process.pid(), "KILL");
          a.process.waitFor();
          victim = found.get();
        }
        try {
          await("two thirds recorded").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
              .until(() -> TallyProcess.counters(db).map(c -> c.recorded() >= total * 2 / 3).orElse(false));
        } catch (org.awaitility.core.ConditionTimeoutException e) {
          throw new AssertionError(e.getMessage() + "; run output:\n" + first.output() + "\nworker b:\n" + b.output(), e);
        }
        Signals.send(first.process.pid(), "KILL");
        first.process.waitFor();
      }
      try (TallyProcess second = TallyProcess.start(dir, "run-2.log", command)) {
        assertThat(second.waitFor(120)).as("output:%n%s%nworker b:%n%s", second.output(), b.output()).isZero();
        assertThat(second.output()).contains("resuming run 1");
      }
    }

    List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
    assertThat(results).hasSize(total);
    Map<String, JsonNode> byId = new java.util.HashMap<>();
    for (String line : results) {
      JsonNode row = JSON.readTree(line);
      assertThat(byId.put(row.get("id").asText(), row)).as("case %s once", row.get("id")).isNull();
      assertThat(row.get("verdict").asText()).isEqualTo("pass");
    }
    List<String> bills = Files.readAllLines(billing);
    Map<String, Long> billsPerCase = bills.stream().map(l -> l.split(" ")[0])
        .collect(Collectors.groupingBy(Function.identity(), Collectors.counting()));
    assertThat(billsPerCase).as("every case was paid for").hasSize(total);
    assertThat(billsPerCase.get(victim)).as("%s was journalled before its worker died: paid once; bills:%n%s", victim,
        String.join("\n", bills)).isEqualTo(1);
    assertThat(byId.get(victim).get("output").asText()).as("its next attempt used the journalled response")
        .isEqualTo("journalled");
    assertThat(bills.size()).as("bills: the cases plus at most the calls in flight at each kill (a's %d slots, then all"
        + " %d)", SLOTS, 2 * SLOTS).isLessThanOrEqualTo(total + SLOTS + 2 * SLOTS);
    try (SqliteStore store = SqliteStore.open(db)) {
      RunView run = store.runs().get(0);
      assertThat(run.counters().recorded()).isEqualTo(total);
      assertThat(run.counters().duplicatesSuppressed()).isZero();
      assertThat(store.jobs(run.runId())).allSatisfy(j ->
          assertThat(store.journalledResponses(run.runId(), j.caseId())).as("case %s journalled", j.caseId()).hasSize(1));
    }
  }

  private TallyProcess worker(String name, int port, Path billing) throws java.io.IOException {
    return TallyProcess.startMain(PayingWorker.class, dir, "worker-" + name + ".log",
        List.of("127.0.0.1", Integer.toString(port), name, Integer.toString(SLOTS), billing.toString()), Map.of());
  }

  /** A case leased to {@code worker} whose response is journalled: killing the worker now must not cost a call. */
  private static Optional<String> journalledButLeasedTo(Path db, String worker) {
    if (!Files.exists(db)) {
      return Optional.empty();
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      Optional<RunView> run = store.runs().stream().findFirst();
      if (run.isEmpty()) {
        return Optional.empty();
      }
      for (JobView j : store.jobs(run.get().runId())) {
        if (j.state() == JobState.LEASED && worker.equals(j.worker())
            && !store.journalledResponses(run.get().runId(), j.caseId()).isEmpty()) {
          return Optional.of(j.caseId());
        }
      }
      return Optional.empty();
    } catch (StoreException notReadyYet) {
      return Optional.empty();
    }
  }
}

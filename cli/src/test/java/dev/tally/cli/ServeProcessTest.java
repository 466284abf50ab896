package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.RunCounters;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally run --evaluator exec --serve} end to end, with real worker processes, a real Python scorer and
 * real signals: a served process that dies mid-case is restarted and its case retried and recorded once,
 * and a worker stopped by SIGTERM leaves no served process behind.
 */
class ServeProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Answers each case with its id and its own pid; marks its start in {@code pids/}; on case {@code kill}
   * it SIGKILLs itself, on case {@code exit} it exits, each only the first time (a marker file says so);
   * sleeps a case's {@code millis} first.
   */
  private static final String SCORER = """
      import json, os, sys, time
      os.makedirs("pids", exist_ok=True)
      open(os.path.join("pids", str(os.getpid())), "w").close()
      def first_time(name):
          try:
              os.close(os.open(name, os.O_CREAT | os.O_EXCL))
              return True
          except FileExistsError:
              return False
      for line in sys.stdin:
          case = json.loads(line)
          time.sleep(case.get("millis", 0) / 1000)
          if case["id"] == "kill" and first_time("killed-once"):
              os.kill(os.getpid(), 9)
          if case["id"] == "exit" and first_time("exited-once"):
              sys.exit(4)
          print("scoring " + case["id"], flush=True)
          print(json.dumps({"verdict": "pass", "id": case["id"], "answer": case["id"], "pid": os.getpid()}), flush=True)
      """;

  @TempDir Path dir;

  /** {@code total} cases of {@code millis} each; with {@code deaths}, the 4th is "kill" and the 8th "exit". */
  private Path dataset(int total, long millis, boolean deaths) throws IOException {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      String id = deaths && i == 3 ? "kill" : deaths && i == 7 ? "exit" : "c" + i;
      lines.add("{\"id\":\"" + id + "\",\"millis\":" + millis + "}");
    }
    Files.writeString(dir.resolve("scorer.py"), SCORER);
    return Files.write(dir.resolve("cases.jsonl"), lines);
  }

  private Set<Long> servedPids() throws IOException {
    Path pids = dir.resolve("pids");
    if (!Files.isDirectory(pids)) {
      return Set.of();
    }
    try (Stream<Path> files = Files.list(pids)) {
      return files.map(p -> Long.parseLong(p.getFileName().toString())).collect(Collectors.toSet());
    }
  }

  /** Ended: no {@code /proc} entry, or a zombie waiting for a parent (PID 1 in a container may never reap it). */
  private static boolean gone(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      char state = stat.substring(stat.lastIndexOf(')') + 2).charAt(0);
      return state == 'Z' || state == 'X';
    } catch (IOException e) {
      return true;
    }
  }

  @Test
  void servedProcessesAreReusedAndOneThatDiesMidCaseIsRestartedItsCaseRetriedAndRecordedOnce() throws Exception {
    int total = 30;
    Path cases = dataset(total, 0, true);
    Path results = dir.resolve("results.jsonl");
    try (TallyProcess run = TallyProcess.start(dir, "run.log", List.of("run", cases.toString(), "--workers=1",
        "--slots=2", "--evaluator=exec", "--serve", "--cmd=python3 -u scorer.py", "--db=" + dir.resolve("t.db"),
        "--out=" + results, "--summary=" + dir.resolve("summary.json"), "--no-progress"))) {
      assertThat(run.waitFor(180)).as("run output:%n%s", run.output()).isZero();
    }

    List<JsonNode> lines = new ArrayList<>();
    for (String line : Files.readAllLines(results)) {
      lines.add(JSON.readTree(line));
    }
    assertThat(lines).as("each case once").hasSize(total);
    assertThat(lines.stream().map(l -> l.get("id").asText()).distinct().count()).isEqualTo(total);
    assertThat(lines).allSatisfy(l -> {
      assertThat(l.get("verdict").asText()).isEqualTo("pass");
      assertThat(l.get("answer").asText()).isEqualTo(l.get("id").asText());
      assertThat(l.get("output").asText()).isEqualTo("scoring " + l.get("id").asText() + "\n");
      assertThat(l.get("exitCode").isNull()).as("no exit code while serving").isTrue();
    });
    Map<String, JsonNode> byId = lines.stream().collect(Collectors.toMap(l -> l.get("id").asText(), l -> l));
    assertThat(byId.get("kill").get("attempts").asInt()).as("killed mid-case, then retried").isEqualTo(2);
    assertThat(byId.get("exit").get("attempts").asInt()).as("exited mid-case, then retried").isEqualTo(2);
    Set<Long> answeringPids = new HashSet<>();
    lines.forEach(l -> answeringPids.add(l.get("fields").get("pid").asLong()));
    assertThat(servedPids()).as("two slots, and one restart per death").hasSizeBetween(2, 4)
        .containsAll(answeringPids);
    JsonNode summary = JSON.readTree(dir.resolve("summary.json").toFile());
    assertThat(summary.get("recorded").asInt()).isEqualTo(total);
    assertThat(summary.get("passed").asInt()).isEqualTo(total);
    assertThat(servedPids()).as("the run is over: no served process left").allMatch(ServeProcessTest::gone);
  }

  @Test
  void aWorkerStoppedBySigtermLeavesNoServedProcessBehind() throws Exception {
    String output = stopWorkerMidRun("TERM");
    assertThat(output).contains("received SIGTERM: draining");
  }

  @Test
  void aWorkerKilledWithSigkillLeavesNoServedProcessBehind() throws Exception {
    stopWorkerMidRun("KILL"); // no chance to clean up: the supervisors' parent-death signal does it
  }

  /**
   * Runs a long serve run on one {@code tally worker} of two slots, sends the worker {@code signal} while
   * both slots serve, and checks that no served process outlives it; returns the worker's output.
   */
  private String stopWorkerMidRun(String signal) throws Exception {
    int total = 200;
    Path cases = dataset(total, 200, false);
    int port = Ports.freeFixedLoopbackPort();
    Path db = dir.resolve("t.db");
    try (TallyProcess run = TallyProcess.start(dir, "run.log", List.of("run", cases.toString(),
            "--listen=127.0.0.1:" + port, "--workers=0", "--evaluator=exec", "--serve", "--cmd=python3 -u scorer.py",
            "--db=" + db, "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"),
            "--no-progress"));
        TallyProcess worker = TallyProcess.start(dir, "worker.log", List.of(
            "worker", "--coordinator=127.0.0.1:" + port, "--slots=2", "--name=w"))) {
      await("both slots serve, and cases are recorded").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
          .until(() -> servedPids().size() >= 2
              && TallyProcess.counters(db).map(RunCounters::recorded).orElse(0L) >= 6);
      assertThat(servedPids()).as("one per slot, alive").hasSize(2).noneMatch(ServeProcessTest::gone);

      Signals.send(worker.process.pid(), signal);
      int exit = worker.waitFor(60);
      if (signal.equals("TERM")) {
        assertThat(exit).as("worker output:%n%s", worker.output()).isZero();
      }
      await("no served process outlives its worker").atMost(Duration.ofSeconds(10))
          .until(() -> servedPids().stream().allMatch(ServeProcessTest::gone));
      return worker.output();
    }
  }
}

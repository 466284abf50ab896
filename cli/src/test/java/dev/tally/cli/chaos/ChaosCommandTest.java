package dev.tally.cli.chaos;

import dev.tally.cli.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.RunSpec;
import dev.tally.simulation.Checker;
import dev.tally.store.SqliteStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The CI chaos run: {@code tally chaos --workers 3 --duration 60s} with real coordinator and worker
 * processes (the command itself runs in this JVM; its children are real JVMs, killed with {@code kill -9}
 * and frozen with {@code SIGSTOP}). Every fault kind is injected (the first three faults are one of each),
 * the invariants hold, and no process is left behind. About 75 s.
 */
class ChaosCommandTest {
  private static final Pattern FAULTS =
      Pattern.compile("faults injected: (\\d+) \\(worker kill -9 (\\d+), worker SIGSTOP/SIGCONT (\\d+), coordinator kill -9 (\\d+)\\)");

  @TempDir Path dir;

  @Test
  @Timeout(value = 240, unit = TimeUnit.SECONDS)
  void sixtySecondsOfKillsFreezesAndCoordinatorRestartsViolateNothing() {
    StringWriter text = new StringWriter();
    PrintWriter pw = new PrintWriter(text, true);
    CommandLine cl = new CommandLine(new ChaosCommand()).setOut(pw).setErr(pw);
    // Processes an earlier test class in this JVM may have left behind are not this run's to answer for.
    java.util.Set<Long> before = ProcessHandle.current().descendants().map(ProcessHandle::pid).collect(java.util.stream.Collectors.toSet());
    long started = System.nanoTime();
    int exit = cl.execute("--workers", "3", "--duration", "60s", "--seed", "20261130", "--work-dir", dir.resolve("chaos").toString(),
        "--finish-timeout", "60s");
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
    String output = text.toString();
    System.out.println(output);

    assertThat(exit).as("exit code after %d s; output:%n%s", seconds, output).isZero();
    Matcher m = FAULTS.matcher(output);
    assertThat(m.find()).as("a faults line; output:%n%s", output).isTrue();
    assertThat(List.of(m.group(2), m.group(3), m.group(4)))
        .as("each kind injected at least once: %s", m.group())
        .allSatisfy(n -> assertThat(Integer.parseInt(n)).isPositive());
    assertThat(output).contains("\nviolations: 0\n").contains("runs: ").contains("(0 left running)");
    assertThat(output).containsPattern("cases: [1-9]\\d* \\(");
    assertThat(ProcessHandle.current().descendants().filter(h -> h.isAlive() && !before.contains(h.pid())).toList())
        .as("no process the chaos run started is left").isEmpty();
  }

  /** The checks are not vacuous: an unfinished run and a results file with a missing and a repeated line are caught. */
  @Test
  void theCheckerReportsAnUnfinishedRunAndABadResultsFile() throws Exception {
    List<String> ids = List.of("a", "b", "c");
    Path results = dir.resolve("results.jsonl");
    Files.write(results, List.of("{\"id\":\"a\",\"verdict\":\"pass\"}", "{\"id\":\"a\",\"verdict\":\"pass\"}"));
    try (SqliteStore store = SqliteStore.open(dir.resolve("t.db"))) {
      long runId = store.createRun(new RunSpec(dir.resolve("cases.jsonl").toString(), new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 5),
          List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}"), new CaseRecord(1, "b", "{\"id\":\"b\"}"), new CaseRecord(2, "c", "{\"id\":\"c\"}")));
      assertThat(Checker.checkRun(store, runId, ids).violations())
          .anyMatch(v -> v.contains("did not finish"))
          .anyMatch(v -> v.contains("is not in a terminal state"));
      assertThat(ResultsFileCheck.check(store, runId, ids, results))
          .anyMatch(v -> v.contains("has 2 lines for 3 cases"))
          .anyMatch(v -> v.contains("appears again"));
      assertThat(Checker.checkRun(store, runId, List.of("a", "c", "b")).violations())
          .anyMatch(v -> v.contains("not the dataset's cases in dataset order"));
    }
  }
}

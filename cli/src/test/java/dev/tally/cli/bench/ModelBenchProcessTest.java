package dev.tally.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.cli.Main;
import dev.tally.cli.TallyProcess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code tally bench --evaluator model} as a real process on a small run: it starts the fake endpoint in a
 * process of its own, pays one request per eval, keeps the requests in flight within workers x slots, prints
 * its figures with the settings and the command.
 */
class ModelBenchProcessTest {
  /** JVMs start (coordinator, endpoint, two workers) and 330 requests are answered; minutes for a loaded machine. */
  private static final long BENCH_SECONDS = 240;

  @TempDir Path dir;

  @Test
  void aSmallModelBenchPaysOneRequestPerEvalWithinTheConcurrencyAndPrintsItsFigures() throws Exception {
    List<String> args = List.of("bench", "--evaluator=model", "--workers=2", "--slots=3", "--cases=300", "--latency=20ms",
        "--db=" + dir.resolve("bench.db"));
    String output;
    try (TallyProcess bench = TallyProcess.start(dir, "bench.log", args)) {
      int exit = bench.waitFor(BENCH_SECONDS);
      output = bench.output();
      assertThat(exit).as(output).isEqualTo(Main.EXIT_PASSED);
    }
    assertThat(output)
        .contains("command: tally " + String.join(" ", args))
        .contains("evaluator model against a fake endpoint on loopback (its own process), latency 20ms, concurrency 6 (workers x slots)")
        .containsPattern("\\d+ evals/s")
        .containsPattern("coordinator CPU: \\d+ ms, [0-9.]+ us/eval")
        .contains("recorded 300 of 300 (duplicates suppressed 0");
    Matcher endpoint = Pattern.compile("endpoint: (\\d+) requests billed for 300 evals, (\\d+) requests, most in flight at once (\\d+) of 6\\n")
        .matcher(output);
    assertThat(endpoint.find()).as(output).isTrue();
    assertThat(Integer.parseInt(endpoint.group(1))).isEqualTo(300);
    assertThat(Integer.parseInt(endpoint.group(2))).isEqualTo(300);
    assertThat(Integer.parseInt(endpoint.group(3))).isBetween(1, 6);
  }

  @Test
  void aLatencyWithoutTheModelEvaluatorIsAUsageError() {
    StringWriter err = new StringWriter();
    int exit = new CommandLine(new BenchCommand()).setErr(new PrintWriter(err)).execute("--latency=10ms");
    assertThat(exit).isEqualTo(Main.EXIT_USAGE);
  }
}

package dev.tally.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.worker.eval.EvalContext;
import dev.tally.worker.eval.Evaluation;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The parts of {@code bench-connections} that need no processes: option checks, the simulated case's start
 * stamp, and the exact percentiles. (The measurement itself is run by hand; it takes minutes.)
 */
class ConnectionsBenchCommandTest {
  @Test
  void badOptionsAreUsageErrorsBeforeAnythingStarts() {
    for (String[] args : List.of(
        new String[] {"--processes", "2"},
        new String[] {"--workers", "2", "--processes", "3"},
        new String[] {"--load", "0"},
        new String[] {"--load", "1.5"},
        new String[] {"--cases", "0"})) {
      StringWriter err = new StringWriter();
      int exit = new CommandLine(new ConnectionsBenchCommand()).setErr(new PrintWriter(err)).execute(args);
      assertThat(exit).as("exit for %s", List.of(args)).isEqualTo(2);
      assertThat(err.toString()).contains("--processes must be >= 3").contains("Usage:");
    }
  }

  @Test
  void theSimulatedCaseReportsWhenItStartedOnTheMonotonicClock() {
    long before = System.nanoTime();
    Evaluation e = new ConnectionsBenchCommand.StampEvaluator(Map.of("millis", "0"))
        .evaluate(new EvalContext("c", "{\"id\":\"c\"}", Duration.ofSeconds(5), System::nanoTime));
    long after = System.nanoTime();
    assertThat(e).isInstanceOf(Evaluation.Finished.class);
    Outcome o = ((Evaluation.Finished) e).outcome();
    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    assertThat(Long.parseLong(o.outputTail())).isBetween(before, after);
  }

  @Test
  void percentilesAreNearestRankOverEveryValue() {
    long[] sorted = new long[100];
    for (int i = 0; i < 100; i++) {
      sorted[i] = (i + 1) * 1_000_000L; // 1..100 ms
    }
    assertThat(ConnectionsBenchCommand.percentileMillis(sorted, 50)).isEqualTo(50.0);
    assertThat(ConnectionsBenchCommand.percentileMillis(sorted, 99)).isEqualTo(99.0);
    assertThat(ConnectionsBenchCommand.percentileMillis(sorted, 100)).isEqualTo(100.0);
    assertThat(ConnectionsBenchCommand.percentile(new long[0], 50)).isEqualTo(-1);
  }
}

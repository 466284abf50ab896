package dev.tally.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The parts of {@code bench-stragglers} that need no processes: its option checks. (The measurement itself
 * is run by hand; it takes minutes.)
 */
class StragglerBenchCommandTest {
  @Test
  void badOptionsAreUsageErrorsBeforeAnythingStarts() {
    for (String[] args : List.of(
        new String[] {"--workers", "1"},
        new String[] {"--cases", "0"},
        new String[] {"--case-millis", "0"},
        new String[] {"--stretch", "0.5"},
        new String[] {"--stretch", "5000"},
        new String[] {"--speculation", "on"})) {
      StringWriter err = new StringWriter();
      int exit = new CommandLine(new StragglerBenchCommand()).setErr(new PrintWriter(err)).execute(args);
      assertThat(exit).as("exit for %s", List.of(args)).isEqualTo(2);
      assertThat(err.toString()).as("for %s", List.of(args)).contains("Usage:");
    }
  }
}

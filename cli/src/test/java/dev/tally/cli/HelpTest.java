package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Every command's {@code --help} renders cleanly and says what the command really does. */
class HelpTest {
  private record Help(int exit, String out, String picocliWarnings) {}

  /** Picocli reports a bad description (an unescaped {@code %}) on System.err, not through the command line's err. */
  private static Help help(String... args) {
    PrintStream systemErr = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    StringWriter out = new StringWriter();
    try {
      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      CommandLine cl = Main.commandLine();
      cl.setOut(new PrintWriter(out, true));
      cl.setErr(new PrintWriter(out, true));
      int exit = cl.execute(args);
      return new Help(exit, out.toString(), captured.toString(StandardCharsets.UTF_8));
    } finally {
      System.setErr(systemErr);
    }
  }

  /** The help with its line wrapping undone. */
  private static String oneLine(String help) {
    return help.replaceAll("\\s+", " ");
  }

  @Test
  void everyCommandsHelpRendersWithoutPicocliWarnings() {
    Map<String, CommandLine> commands = Main.commandLine().getSubcommands();
    assertThat(commands).containsKeys("run", "resume", "worker", "status", "bench", "bench-detectors", "bench-failover", "simulate", "chaos");
    for (String name : commands.keySet()) {
      Help h = help(name, "--help");
      assertThat(h.exit()).as("tally %s --help", name).isZero();
      assertThat(h.out()).as("tally %s --help", name).contains("Usage: tally " + name);
      assertThat(h.picocliWarnings()).as("tally %s --help on System.err", name).isEmpty();
      assertThat(h.out()).as("tally %s --help: a default left unrendered", name).doesNotContain("${DEFAULT-VALUE}").doesNotContain("default: null");
    }
    assertThat(help("--help").picocliWarnings()).isEmpty();
  }

  @Test
  void simulateListsEveryFaultItCanPlant() {
    String simulate = oneLine(help("simulate", "--help").out());
    for (dev.tally.simulation.PlantedFault fault : dev.tally.simulation.PlantedFault.values()) {
      assertThat(simulate).as("tally simulate --help").contains(fault.cliName());
    }
  }

  @Test
  void theDefaultsShownAreTheBuildersAndResumeNeedsItsStore() {
    String run = oneLine(help("run", "--help").out());
    assertThat(run).contains("How often workers heartbeat (default: 500ms)").contains("Default: phi,")
        .contains("(default: 127.0.0.1:0, a free loopback port)").contains("tally.db beside the dataset")
        .contains("What an acknowledged result survives (default: "
            + dev.tally.coordinator.CoordinatorBuilder.DEFAULT_DURABILITY.configName() + ")");
    // The noop bench's own prefetch (BenchCommand.BENCH_PREFETCH): the most the protocol allows.
    assertThat(oneLine(help("bench", "--help").out()))
        .contains("as many again as it has slots (default: " + dev.tally.protocol.ProtocolLimits.MAX_PREFETCH + ")");
    String resume = oneLine(help("resume", "--help").out());
    assertThat(resume).contains(" --db=STORE ").doesNotContain("beside the dataset").doesNotContain("[--db=STORE]");
  }
}

package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.List;
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

  /** What {@code tally ARGS} says on stderr and its exit code, through the command line main builds. */
  private static Help mistaken(String... args) {
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine(args);
    cl.setErr(new PrintWriter(err, true));
    return new Help(cl.execute(args), err.toString(), "");
  }

  /** The list of commands shows each one's first description line: it must be a whole sentence. */
  @Test
  void everyCommandsFirstDescriptionLineIsAWholeSentence() {
    for (CommandLine sub : Main.commandLine().getSubcommands().values()) {
      String[] description = sub.getCommandSpec().usageMessage().description();
      if (sub.getCommand() instanceof CommandLine.HelpCommand) {
        continue;
      }
      assertThat(description).as(sub.getCommandName()).isNotEmpty();
      assertThat(description[0]).as(sub.getCommandName() + "'s first description line").endsWith(".");
    }
  }

  /** The machine's trouble is said in one line with its causes, exit 1; a bug keeps its stack trace. */
  @Test
  void aCommandThatFailsOnAFileOrTheStoreSaysItInOneLine() throws Exception {
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine().setErr(new PrintWriter(err, true));
    java.io.IOException e = new java.io.IOException("cannot write results.jsonl", new java.io.IOException("No space left on device"));

    assertThat(Main.failure(e, cl, null)).isEqualTo(Main.EXIT_FAILED);
    assertThat(err.toString()).isEqualTo("tally: cannot write results.jsonl: No space left on device" + System.lineSeparator());
    IllegalStateException bug = new IllegalStateException("a bug");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> Main.failure(bug, cl, null)).isSameAs(bug);
  }

  @Test
  void aServerStoreInADirectoryThatIsNotThereIsRefused() {
    Help refused = mistaken("server", "--db", "/nonexistent-tally-dir/x.db");
    assertThat(refused.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(refused.out()).startsWith("tally: --db /nonexistent-tally-dir/x.db: the directory /nonexistent-tally-dir does not exist");
    assertThat(java.nio.file.Path.of("/nonexistent-tally-dir")).doesNotExist();
  }

  /** A server's fleet: in-process slots in range, and without them a fixed worker port for remote workers. */
  @Test
  void aServerWithNoWorkerAndNoFixedPortOrWithInProcessSlotsOutOfRangeIsRefused() {
    Help none = mistaken("server", "--workers", "0");
    assertThat(none.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(none.out()).startsWith("tally: --workers 0 needs --listen HOST:PORT with a fixed port, so remote workers"
        + " can find the server (or --in-process K)");
    for (String bad : new String[] {"-1", "100000"}) {
      Help refused = mistaken("server", "--in-process", bad);
      assertThat(refused.exit()).as(bad).isEqualTo(Main.EXIT_USAGE);
      assertThat(refused.out()).as(bad).startsWith("tally: --in-process must be from 0 to ").contains("got " + bad);
    }
  }

  @Test
  void theApisOptionsWithoutItsAddressAreRefusedNotIgnored() {
    for (String option : ApiOptions.API_ONLY) {
      String[] args = option.equals("--metrics-public") ? new String[] {"run", "cases.jsonl", option}
          : new String[] {"run", "cases.jsonl", option, option.equals("--idempotency-ttl") ? "1h" : "token.txt"};
      Help refused = mistaken(args);
      assertThat(refused.exit()).as(option).isEqualTo(Main.EXIT_USAGE);
      assertThat(refused.out().lines()).containsExactly(
          "tally: " + option + " is for the HTTP API, which tally run serves only with --http HOST:PORT",
          "See 'tally run --help' for its options.");
    }
  }

  /** The benchmarks and the simulation check their numbers after parsing, and say it as every command does. */
  @Test
  void aBenchOrSimulationNumberOutOfRangeIsSaidAsAnyOtherMistake() {
    Help bench = mistaken("bench", "--cases", "0");
    assertThat(bench.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(bench.out().lines()).containsExactly(
        "tally: --workers, --slots and --cases must be >= 1, got 3, 2 and 0", "See 'tally bench --help' for its options.");

    Help simulate = mistaken("simulate", "--seeds", "0");
    assertThat(simulate.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(simulate.out().lines()).containsExactly(
        "tally: --seeds must be >= 1, got 0", "See 'tally simulate --help' for its options.");

    Help plant = mistaken("simulate", "--plant", "nope");
    assertThat(plant.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(plant.out()).startsWith("tally: --plant: ").contains("skip-fencing").contains("'nope'");
  }

  @Test
  void aMistakeInASubcommandsArgumentsIsSaidInAFewLinesNotItsWholeUsage() {
    Help badValue = mistaken("run", "cases.jsonl", "--workers", "x");
    assertThat(badValue.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(badValue.out().lines()).containsExactly(
        "tally: Invalid value for option '--workers': 'x' is not an int", "See 'tally run --help' for its options.");

    Help misspelt = mistaken("run", "cases.jsonl", "--evaluatr", "exec");
    assertThat(misspelt.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(misspelt.out()).contains("--evaluatr").contains("--evaluator").doesNotContain("Usage:");
    assertThat(misspelt.out().lines()).hasSizeLessThan(5);

    // The unknown option alone is named, not its value or the dataset its value displaced; the nearest option
    // is offered, by edits (picocli's letter pairs offered --worker-token-file first).
    for (String[] args : List.of(new String[] {"run", "cases.jsonl", "--wokers", "2"},
        new String[] {"run", "--wokers", "2", "cases.jsonl"}, new String[] {"run", "cases.jsonl", "--wokers=2"})) {
      Help typo = mistaken(args);
      assertThat(typo.exit()).isEqualTo(Main.EXIT_USAGE);
      assertThat(typo.out().lines()).as(String.join(" ", args)).containsExactly(
          "tally: unknown option '" + (args[args.length - 1].equals("--wokers=2") ? "--wokers=2" : "--wokers") + "'",
          "Did you mean: --workers?", "See 'tally run --help' for its options.");
    }
    assertThat(mistaken("run", "cases.jsonl", "--bogus", "--wokers").out())
        .startsWith("tally: unknown options '--bogus', '--wokers'").contains("Did you mean: --workers for --wokers?")
        .doesNotContain("Possible solutions");
    assertThat(mistaken("run", "x", "--wokers=2", "--slotz", "3").out())
        .contains("Did you mean: --workers for --wokers, --slots for --slotz?");
    // A misspelt required option is named, not hidden behind "Missing required option" (the --db it meant).
    Help status = mistaken("status", "--dbb", "x.db");
    assertThat(status.out().lines()).containsExactly("tally: unknown option '--dbb'", "Did you mean: --db?",
        "See 'tally status --help' for its options.");
    // An option's value that looks like an option is its value, not an unknown option.
    assertThat(Main.unknownOptions(Main.commandLine().getSubcommands().get("run"),
        new String[] {"run", "x", "--prompt", "--what", "--nope=1", "--", "--after"})).containsExactly("--nope=1");

    // Checked by the command itself, after parsing: the same few lines.
    Help outOfRange = mistaken("run", "cases.jsonl", "--workers", "99");
    assertThat(outOfRange.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(outOfRange.out().lines()).containsExactly(
        "tally: --workers must be from 0 to 64, got 99", "See 'tally run --help' for its options.");
  }

  @Test
  void anUnknownCommandGetsTheNamesOfTheCommandsOnOneLineAfterAnySuggestion() {
    Help unknown = mistaken("rnu");
    assertThat(unknown.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(unknown.out()).startsWith("tally: Unmatched argument at index 0: 'rnu'").contains("Commands: run, resume, ")
        .endsWith("See 'tally --help' for what each does, and 'tally help COMMAND' for its options." + System.lineSeparator());
    assertThat(unknown.out().lines()).hasSizeLessThan(6);
    // Two letters swapped: picocli's letter pairs find nothing; one edit away is run.
    assertThat(unknown.out()).contains("Did you mean: run or runs?");
    assertThat(mistaken("rnu", "cases.jsonl").out()).contains("Did you mean: run or runs?");
    assertThat(mistaken("xyzzy").out()).doesNotContain("Did you mean");
    assertThat(Main.nearest("sevrer", java.util.List.of("server", "submit", "help"))).containsExactly("server");
    assertThat(Main.nearest("wiat", java.util.List.of("wait", "worker", "run"))).containsExactly("wait");
    // Ours comes first where picocli would guess other commands; what was typed is shown without its escapes.
    assertThat(mistaken("wiat").out()).contains("Did you mean: wait?").doesNotContain("Did you mean: tally status");
    assertThat(mistaken("\u001b[31mrun").out()).contains("'?[31mrun'").doesNotContain("\u001b");

    Help misspelt = mistaken("statu");
    assertThat(misspelt.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(misspelt.out()).contains("Did you mean: status?", "Commands: run, ");
    assertThat(misspelt.out().lines()).hasSizeLessThan(8);
  }

  @Test
  void helpAndVersionWorkForEveryCommand() {
    StringWriter out = new StringWriter();
    CommandLine cl = Main.commandLine(new String[] {"help", "run"});
    cl.setOut(new PrintWriter(out, true));
    assertThat(cl.execute("help", "run")).isZero();
    assertThat(out.toString()).startsWith("Usage: tally run");

    String version = String.join("", Main.commandLine().getCommandSpec().version());
    for (String command : new String[] {"run", "status", "worker"}) {
      StringWriter printed = new StringWriter();
      CommandLine line = Main.commandLine(new String[] {command, "--version"});
      line.setOut(new PrintWriter(printed, true));
      assertThat(line.execute(command, "--version")).isZero();
      assertThat(printed.toString().strip()).as("tally %s --version", command).isEqualTo(version);
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
      assertThat(h.out()).as("tally %s --help: an option's value named by its Java field, not a label", name)
          .doesNotContainPattern("=<[a-z][A-Za-z]*>");
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

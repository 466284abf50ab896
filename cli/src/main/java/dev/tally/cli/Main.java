package dev.tally.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code tally} command. Exit codes: 0 every case passed; 1 the run finished with a fail or an error
 * (or could not finish); 2 bad usage or bad input.
 */
@Command(
    name = "tally",
    mixinStandardHelpOptions = true,
    version = "tally 0.1.0",
    description = "Fault-tolerant distributed eval runner.",
    subcommands = {RunCommand.class, ResumeCommand.class, WorkerCommand.class, StatusCommand.class, BenchCommand.class, dev.tally.cli.detect.DetectorBenchCommand.class, SimulateCommand.class, FailoverBenchCommand.class, ChaosCommand.class})
public final class Main {
  /** Every case passed. */
  static final int EXIT_PASSED = 0;
  /** The run finished with a fail or an error, or could not finish. */
  static final int EXIT_FAILED = 1;
  /** Bad usage or bad input (picocli's usage-error code is 2 as well). */
  static final int EXIT_USAGE = 2;

  private Main() {}

  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /** The configured command line, for tests. */
  static CommandLine commandLine() {
    return new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true);
  }
}

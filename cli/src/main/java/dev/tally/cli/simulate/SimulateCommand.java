package dev.tally.cli.simulate;

import dev.tally.cli.*;
import dev.tally.simulation.FaultKind;
import dev.tally.simulation.PlantedFault;
import dev.tally.simulation.SimulationResult;
import dev.tally.simulation.SimulationRunner;
import java.io.PrintStream;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tally simulate}: deterministic simulation of the real scheduler, detectors and store semantics
 * under virtual time and seeded faults, checked against invariants I1–I5 and the connection actor's {@code
 * WorkerEvents} contract ({@code WE:}) after every history. A thin shell
 * over {@link SimulationRunner}; all the logic lives in the simulation module.
 */
@Command(name = "simulate", mixinStandardHelpOptions = true,
    description = {"Run seeded, deterministic simulations of the scheduler under faults and check invariants I1-I5"
        + ", the connection actor's WorkerEvents contract (violations marked WE) and the leader rule of coordinators"
        + " that take over from each other (EPOCH).",
        "Exits 0 only if every history passes; a failing seed prints the command that replays it."})
public final class SimulateCommand implements Callable<Integer> {

  @Option(names = "--seeds", defaultValue = "100", description = "How many seeds to run (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int seeds;

  @Option(names = "--start", defaultValue = "1", description = "The first seed (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  long start;

  @Option(names = "--seed", description = "Run this one seed and print its whole trace.", paramLabel = "SEED")
  Long seed;

  @Option(names = "--plant", paramLabel = "FAULT", completionCandidates = PlantableFaults.class,
      description = "Plant a known bug to see the checker catch it, one of: ${COMPLETION-CANDIDATES}.")
  String plant;

  /** The faults {@code --plant} takes, by their command-line names: {@link PlantedFault} is their one owner. */
  static final class PlantableFaults implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return java.util.Arrays.stream(PlantedFault.values()).map(PlantedFault::cliName).iterator();
    }
  }

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintStream out = System.out;
    PlantedFault planted;
    try {
      planted = plant == null ? null : PlantedFault.parse(plant);
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--plant: " + e.getMessage());
    }
    if (seed == null && seeds < 1) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--seeds must be >= 1, got " + seeds);
    }
    ch.qos.logback.classic.Level before = quietCoreLogs();
    try {
      return simulate(out, planted);
    } finally {
      restoreCoreLogs(before);
    }
  }

  private int simulate(PrintStream out, PlantedFault planted) {
    SimulationRunner runner = new SimulationRunner(planted);
    if (seed != null) {
      SimulationResult r = runner.run(seed, true);
      out.print(r.trace());
      out.printf("seed %d: %d cases, %d ms of virtual time, faults %s; trace sha256 %s%n", r.seed(), r.cases(),
          r.virtualMillis(), faults(r.faults()), r.traceHash());
      printVerdict(out, r);
      return r.passed() ? Main.EXIT_PASSED : Main.EXIT_FAILED;
    }
    SimulationRunner.Summary s = runner.runMany(start, seeds, r -> {
      if (!r.passed()) {
        printVerdict(out, r);
      }
    });
    out.printf("%d seeds (%d..%d)%s: %d passed, %d failed; %d cases, %d redeliveries, %d duplicates suppressed,"
            + " %d stale results fenced, %d attempts abandoned to a faster one (%d of them finished too),"
            + " %d coordinator takeovers, %d writes refused for a stale leader epoch; faults %s; %.1f s, %.0f seeds/s%n",
        s.seeds(), start, start + seeds - 1, planted == null ? "" : " with " + planted.cliName() + " planted",
        s.passed(), s.failures().size(), s.cases(), s.redeliveries(), s.duplicates(), s.fenced(), s.abandoned(),
        s.bothFinished(), s.takeovers(), s.staleWritesRefused(), faults(s.faults()),
        s.wallMillis() / 1000.0, s.seedsPerSecond());
    return s.allPassed() ? Main.EXIT_PASSED : Main.EXIT_FAILED;
  }

  private static void printVerdict(PrintStream out, SimulationResult r) {
    if (r.passed()) {
      out.printf("seed %d passed%n", r.seed());
      return;
    }
    out.printf("seed %d FAILED (%s):%n", r.seed(), r.endReason());
    r.violations().forEach(v -> out.println("  " + v));
    out.println("replay: " + r.replayCommand());
  }

  private static String faults(Map<FaultKind, Integer> faults) {
    return faults.entrySet().stream().map(e -> e.getKey().siteName() + " " + e.getValue())
        .collect(Collectors.joining(", ", "{", "}"));
  }

  /**
   * A simulation reaps, fences and redelivers thousands of times on purpose; the scheduler's warnings about
   * it are the point, not news. Errors still show.
   */
  private static ch.qos.logback.classic.Level quietCoreLogs() {
    if (org.slf4j.LoggerFactory.getLogger("dev.tally") instanceof ch.qos.logback.classic.Logger logger) {
      ch.qos.logback.classic.Level before = logger.getLevel();
      logger.setLevel(ch.qos.logback.classic.Level.ERROR);
      return before;
    }
    return null;
  }

  /** Puts the level back (null: inherit again), so that a simulation run inside a JVM leaves its logging as it was. */
  private static void restoreCoreLogs(ch.qos.logback.classic.Level before) {
    if (org.slf4j.LoggerFactory.getLogger("dev.tally") instanceof ch.qos.logback.classic.Logger logger) {
      logger.setLevel(before);
    }
  }
}

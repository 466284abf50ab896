package dev.tally.simulation;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.EnumSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The simulation's promises: replayable histories, the invariants over the CI budget, and a checker that bites. */
class SimulationTest {

  /** The CI budget: at least this many seeds, in well under two minutes on a 2-core machine. */
  static final int CI_SEEDS = 500;

  /** A planted fault must be caught within this many seeds. */
  static final int PLANTED_BUDGET = 200;

  @Test
  void theSameSeedGivesTheSameHistoryByteForByte() {
    for (long seed : new long[] {1, 17, 4242}) {
      SimulationResult first = new SimulationRunner().run(seed, true);
      SimulationResult second = new SimulationRunner().run(seed, true);
      assertThat(second.trace()).as("trace of seed %d", seed).isEqualTo(first.trace());
      assertThat(second.traceHash()).isEqualTo(first.traceHash());
      assertThat(first.trace()).contains("history ends");
    }
    assertThat(new SimulationRunner().run(1).traceHash()).isNotEqualTo(new SimulationRunner().run(2).traceHash());
  }

  @Test
  void aHistoryKeepsItsHashWhetherOrNotItsTextIsKept() {
    assertThat(new SimulationRunner().run(99, false).traceHash()).isEqualTo(new SimulationRunner().run(99, true).traceHash());
  }

  @Test
  void fiveHundredSeedsKeepEveryInvariantUnderEveryKindOfFault() {
    SimulationRunner.Summary s = new SimulationRunner().runMany(1, CI_SEEDS);
    System.out.printf("%d seeds in %d ms: %.1f seeds/s; %d cases, faults %s, %d redeliveries, %d duplicates, %d fenced,"
        + " %d takeovers, %d stale-epoch writes refused%n", s.seeds(), s.wallMillis(), s.seedsPerSecond(), s.cases(), s.faults(),
        s.redeliveries(), s.duplicates(), s.fenced(), s.takeovers(), s.staleWritesRefused());
    assertThat(s.failures())
        .as(() -> s.failures().stream()
            .map(r -> "seed " + r.seed() + ": " + r.violations() + "\n  replay: " + r.replayCommand())
            .collect(Collectors.joining("\n")))
        .isEmpty();
    // The budget exercised what it claims to: every fault site fired, and the guarantees were at work.
    assertThat(s.faults().keySet()).containsExactlyInAnyOrderElementsOf(EnumSet.allOf(FaultKind.class));
    assertThat(s.duplicates()).as("duplicates suppressed").isPositive();
    assertThat(s.fenced()).as("stale results fenced").isPositive();
    assertThat(s.redeliveries()).as("redeliveries").isPositive();
    // Speculative execution was at work under those faults: backups raced their originals, and in some cases
    // both attempts finished and sent their outcome; each such case was still recorded once (I1-I3 above).
    assertThat(s.abandoned()).as("attempts abandoned to a faster attempt of their case").isPositive();
    assertThat(s.bothFinished()).as("cases whose two attempts both finished").isPositive();
    // Coordinators took over from each other (a standby after a frozen or killed leader, a restart after a
    // lapsed lease), and thawed leaders tried to write under their stale epoch and were refused (EPOCH above).
    assertThat(s.takeovers()).as("leader epochs taken after the first").isPositive();
    assertThat(s.staleWritesRefused()).as("writes the store refused for a stale leader epoch").isPositive();
    assertThat(s.wallMillis()).as("CI budget: %d seeds in under two minutes", CI_SEEDS).isLessThan(120_000);
  }

  /**
   * The story of issue 11's SIGSTOP, told by one history: the leader freezes past its lease, the standby takes
   * the lead under a higher epoch, the workers' sessions move to it, and the thawed leader's commit is refused
   * by the store, after which it steps down and writes nothing; the history keeps every invariant (EPOCH
   * included).
   */
  @Test
  void aLeaderFrozenPastItsLeaseIsReplacedAndWritesNothingOnceThawed() {
    SimulationRunner runner = new SimulationRunner();
    SimulationResult r = null;
    for (long seed = 1; seed <= PLANTED_BUDGET && r == null; seed++) {
      SimulationResult candidate = runner.run(seed, true);
      if (candidate.trace().contains("the store refused a commit under epoch")) {
        r = candidate;
      }
    }
    assertThat(r).as("a seed among the first %d has a thawed leader whose commit the store refused", PLANTED_BUDGET).isNotNull();
    assertThat(r.violations()).isEmpty();
    java.util.List<String> lines = r.trace().lines().toList();
    int refused = indexOf(lines, "the store refused a commit under epoch");
    String frozen = lines.get(refused).replaceAll(".* coordinator (c\\d+): the store refused a commit under epoch (\\d+).*", "$1 $2");
    String name = frozen.split(" ")[0];
    long epoch = Long.parseLong(frozen.split(" ")[1]);
    int froze = indexOf(lines, "fault coordinator-freeze: coordinator " + name + " (epoch " + epoch + ")");
    int tookOver = indexOf(lines, "leads under epoch " + (epoch + 1));
    assertThat(froze).as("the leader froze").isNotNegative();
    assertThat(tookOver).as("another coordinator took the next epoch while it was frozen").isBetween(froze, refused);
    assertThat(lines.get(refused + 1)).contains("coordinator " + name + " steps down from epoch " + epoch);
    String successor = lines.get(tookOver).replaceAll(".* coordinator (c\\d+) leads under epoch.*", "$1");
    assertThat(lines.subList(tookOver, lines.size())).as("workers found the new leader")
        .anyMatch(l -> l.contains("accepted by coordinator " + successor));
    assertThat(lines.subList(refused + 2, lines.size())).as("nothing more of the deposed leader")
        .noneMatch(l -> l.endsWith("accepted by coordinator " + name));
  }

  private static int indexOf(java.util.List<String> lines, String text) {
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).contains(text)) {
        return i;
      }
    }
    return -1;
  }

  @ParameterizedTest(name = "{0} is caught within the CI budget")
  @CsvSource({"count-duplicates, I2", "skip-fencing, I3", "drop-on-reap, I4", "join-before-loss, WE", "reap-without-loss, WE",
      "starve-later-runs, FS",
      "accept-any-token, AUTH", "keep-ended-lease, I1", "skip-epoch-check, EPOCH"})
  void aPlantedFaultIsCaughtWithinTheCiBudget(String fault, String invariant) {
    SimulationRunner runner = new SimulationRunner(PlantedFault.parse(fault));
    SimulationResult failed = runner.firstFailure(1, PLANTED_BUDGET);
    assertThat(failed).as("a seed among the first %d fails with %s planted", PLANTED_BUDGET, fault).isNotNull();
    System.out.printf("%s: first failing seed %d: %s%n", fault, failed.seed(), failed.violations());
    assertThat(failed.violations()).anyMatch(v -> v.startsWith(invariant + ":"));
    assertThat(failed.replayCommand()).isEqualTo("tally simulate --seed " + failed.seed() + " --plant " + fault);

    // The failing seed replays exactly.
    SimulationResult again = runner.run(failed.seed());
    assertThat(again.violations()).isEqualTo(failed.violations());
    assertThat(again.traceHash()).isEqualTo(failed.traceHash());
  }

  @Test
  void parsesPlantedFaultsByTheirCommandLineNames() {
    assertThat(PlantedFault.parse("count-duplicates")).isEqualTo(PlantedFault.COUNT_DUPLICATES);
    assertThat(PlantedFault.parse("SKIP_FENCING")).isEqualTo(PlantedFault.SKIP_FENCING);
    assertThat(PlantedFault.parse(" drop-on-reap ")).isEqualTo(PlantedFault.DROP_ON_REAP);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> PlantedFault.parse("nope"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("count-duplicates");
  }
}

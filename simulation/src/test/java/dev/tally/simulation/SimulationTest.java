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
    // A refused commit of a frozen leader (a leader cut off from the store has its own story, below).
    SimulationResult r = firstHistory("a thawed leader whose commit the store refused", h -> h.trace().contains("fault coordinator-freeze")
        && !h.trace().contains("fault store-cut") && h.trace().contains("the store refused a commit under epoch"));
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

  /**
   * The story of a database restart longer than the lease, told by one history: the store goes down for every
   * coordinator, the leader's looks fail past its lease and it holds on in doubt instead of stepping down, and
   * when the store answers again its row is still its epoch, so it renews and leads on; every invariant holds.
   */
  @Test
  void aLeaderThatCannotReachTheStoreForMoreThanItsLeaseHoldsOnAndRenewsWhenNobodyTookOver() {
    String downForAll = "fault store-cut: the store is down for every coordinator";
    String renewal = " ms after its last renewal: no other coordinator had taken the lead";
    String inDoubt = "for a whole lease: in doubt, it holds on";
    // A renewal after a doubt that began after the store went down (a frozen leader renews late too).
    SimulationResult r = firstHistory("a leader that renewed after the store was down", h -> {
      java.util.List<String> lines = h.trace().lines().toList();
      int down = indexOf(lines, downForAll);
      int doubt = down < 0 ? -1 : indexOf(lines.subList(down, lines.size()), inDoubt);
      return doubt >= 0 && indexOf(lines.subList(down + doubt, lines.size()), renewal) >= 0;
    });
    java.util.List<String> lines = r.trace().lines().toList();
    int down = indexOf(lines, downForAll);
    int renewed = down + indexOf(lines.subList(down, lines.size()), inDoubt);
    renewed += indexOf(lines.subList(renewed, lines.size()), renewal);
    String[] who = lines.get(renewed).replaceAll(".* coordinator (c\\d+) renewed epoch (\\d+) (\\d+) ms after.*", "$1 $2 $3").split(" ");
    String name = who[0];
    long epoch = Long.parseLong(who[1]);
    int doubt = indexOf(lines, "coordinator " + name + " could not renew epoch " + epoch + " for a whole lease: in doubt");
    assertThat(doubt).as("in doubt after the store went down").isBetween(down, renewed);
    assertThat(lines.subList(down, renewed)).as("it held on: no step-down, no other epoch")
        .noneMatch(l -> l.contains("steps down from epoch " + epoch) || l.contains("leads under epoch " + (epoch + 1)));
    assertThat(Long.parseLong(who[2])).as("it renewed past its lease").isGreaterThanOrEqualTo(3_000);
  }

  /**
   * The story of a leader cut off from a store its standby still reaches: the standby takes the next epoch
   * once the lease lapses, and the cut-off leader, once a commit or a look of it lands, writes nothing under
   * its old epoch and steps down; every invariant holds (EPOCH included).
   */
  @Test
  void aLeaderCutOffFromTheStoreItsStandbyReachesIsReplacedAndThenStepsDown() {
    SimulationResult r = firstHistory("a cut-off leader replaced by its standby", h -> {
      java.util.List<String> lines = h.trace().lines().toList();
      int cut = indexOf(lines, "is cut off from the store for");
      if (cut < 0) {
        return false;
      }
      String[] who = cutOff(lines.get(cut));
      int next = indexOf(lines, "leads under epoch " + (Long.parseLong(who[1]) + 1));
      return next > cut && indexOf(lines, "coordinator " + who[0] + " steps down from epoch " + who[1]) > next;
    });
    java.util.List<String> lines = r.trace().lines().toList();
    String[] who = cutOff(lines.get(indexOf(lines, "is cut off from the store for")));
    int down = indexOf(lines, "coordinator " + who[0] + " steps down from epoch " + who[1]);
    assertThat(lines.subList(down + 1, lines.size())).as("nothing more of the deposed leader")
        .noneMatch(l -> l.endsWith("accepted by coordinator " + who[0]));
  }

  /** The coordinator and epoch a {@code store-cut} of the leader names: {@code [name, epoch]}. */
  private static String[] cutOff(String line) {
    return line.replaceAll(".* coordinator (c\\d+) \\(epoch (\\d+)\\) is cut off.*", "$1 $2").split(" ");
  }

  /**
   * The first history among the first {@link #PLANTED_BUDGET} seeds that tells {@code story}, with its trace;
   * it keeps every invariant.
   */
  private static SimulationResult firstHistory(String story, java.util.function.Predicate<SimulationResult> tells) {
    SimulationRunner runner = new SimulationRunner();
    for (long seed = 1; seed <= PLANTED_BUDGET; seed++) {
      SimulationResult candidate = runner.run(seed, true);
      if (tells.test(candidate)) {
        assertThat(candidate.violations()).as("seed %d", seed).isEmpty();
        return candidate;
      }
    }
    throw new AssertionError("no seed among the first " + PLANTED_BUDGET + " has " + story);
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

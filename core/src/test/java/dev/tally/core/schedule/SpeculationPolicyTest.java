package dev.tally.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.schedule.SpeculationPolicy.Backup;
import dev.tally.core.schedule.SpeculationPolicy.Candidate;
import dev.tally.core.schedule.SpeculationPolicy.Mode;
import dev.tally.core.schedule.SpeculationPolicy.Target;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class SpeculationPolicyTest {
  private static final SpeculationPolicy POLICY = SpeculationPolicy.defaults();
  /** A holder with no recorded attempt yet. */
  private static final double UNKNOWN = Double.NaN;

  @Test
  void leavesALongCaseAloneOnAHolderKnownToRunItsCasesInTheirUsualTime() {
    Target idle = new Target("w2", 1, 1.0);
    // CPython's test_cmd_line: 20 s among modules of 700 ms, on a worker whose cases take their usual time.
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 20_000, 700, 1.0)), List.of(idle), 0, 3)).isEmpty();
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 20_000, 700, 1.9)), List.of(idle), 0, 3)).isEmpty();
    // A holder twice slow or more, or not yet known, may be the cause: the case is copied.
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 20_000, 700, 2.0)), List.of(idle), 0, 3)).hasSize(1);
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 20_000, 700, UNKNOWN)), List.of(idle), 0, 3)).hasSize(1);
  }

  @Test
  void copiesACaseQueuedBehindALongOneOnAHealthyHolder() {
    Target idle = new Target("w2", 1, 1.0);
    // Prefetched behind test_cmd_line: it has not started, and a copy on the idle slot starts at once.
    assertThat(POLICY.choose(List.of(new Candidate(2, "w1", 20_000, 700, 1.0, true)), List.of(idle), 0, 3))
        .containsExactly(new Backup(2, "w2"));
    assertThat(POLICY.choose(List.of(new Candidate(2, "w1", 999, 700, 1.0, true)), List.of(idle), 0, 3))
        .as("not before the usual threshold").isEmpty();
  }

  @Test
  void copiesNothingBeforeAnAttemptHasRunTwiceTheTypicalDurationAndAtLeastASecond() {
    Target idle = new Target("w2", 1, 1.0);
    // Typical 300 ms: a straggler from 1 s on (the floor), not from 600 ms.
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 999, 300, UNKNOWN)), List.of(idle), 0, 4)).isEmpty();
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 1_000, 300, UNKNOWN)), List.of(idle), 0, 4))
        .containsExactly(new Backup(1, "w2"));
    // Typical 2 s: a straggler from 4 s on.
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 3_999, 2_000, UNKNOWN)), List.of(idle), 0, 4)).isEmpty();
    assertThat(POLICY.choose(List.of(new Candidate(1, "w1", 4_000, 2_000, UNKNOWN)), List.of(idle), 0, 4)).hasSize(1);
  }

  @Test
  void copiesACaseOnAKnownSlowWorkerAtOnceWhenACopyWouldEndAtLeastASecondSooner() {
    Target idle = new Target("w2", 1, 1.0);
    // Typical 500 ms on a 10x worker: about 5 s, so a fresh copy ends 4.5 s sooner.
    assertThat(POLICY.choose(List.of(new Candidate(1, "slow", 10, 500, 10.0)), List.of(idle), 0, 4))
        .containsExactly(new Backup(1, "w2"));
    // On a 2x worker a copy saves 500 ms at best: not worth it before the usual threshold.
    assertThat(POLICY.choose(List.of(new Candidate(1, "meh", 10, 500, 2.0)), List.of(idle), 0, 4)).isEmpty();
  }

  @Test
  void copiesTheCaseWithTheLongestEstimatedTimeLeftFirst() {
    // Both are past the threshold; the one on the 10x worker has far more left, though it ran less.
    List<Candidate> cs = List.of(new Candidate(1, "w1", 5_000, 1_000, UNKNOWN), new Candidate(2, "slow", 2_500, 1_000, 10.0));
    assertThat(POLICY.choose(cs, List.of(new Target("w3", 1, 1.0)), 0, 4)).containsExactly(new Backup(2, "w3"));
  }

  @Test
  void neverCopiesOntoTheHolderOrASlowWorker() {
    Candidate c = new Candidate(1, "w1", 5_000, 1_000, 2.0);
    assertThat(POLICY.choose(List.of(c), List.of(new Target("w1", 3, 1.0)), 0, 8)).isEmpty();
    // Four workers known: w4 is in the slowest quarter and takes no copy; the unknown newcomer does.
    List<Target> targets = List.of(new Target("w4", 2, 9.0), new Target("new", 1, Double.NaN));
    List<Candidate> view = List.of(c, new Candidate(2, "w2", 10, 1_000, 1.0), new Candidate(3, "w3", 10, 1_000, 1.1));
    assertThat(POLICY.choose(view, targets, 0, 8)).containsExactly(new Backup(1, "new"));
  }

  @Test
  void capsTheBackupsInFlightAtATenthOfTheSlotsButAlwaysAllowsTwo() {
    assertThat(POLICY.maxBackups(4)).as("a straggler's running case and its prefetched one").isEqualTo(2);
    assertThat(POLICY.maxBackups(40)).isEqualTo(4);
    List<Candidate> many = List.of(new Candidate(1, "w1", 9_000, 1_000, UNKNOWN), new Candidate(2, "w1", 8_000, 1_000, UNKNOWN),
        new Candidate(3, "w1", 7_000, 1_000, UNKNOWN), new Candidate(4, "w1", 6_000, 1_000, UNKNOWN));
    List<Target> room = List.of(new Target("w2", 8, 1.0));
    assertThat(POLICY.choose(many, room, 0, 30)).extracting(Backup::jobId).containsExactly(1L, 2L, 3L);
    assertThat(POLICY.choose(many, room, 2, 30)).extracting(Backup::jobId).containsExactly(1L);
    assertThat(POLICY.choose(many, room, 3, 30)).isEmpty();
  }

  @Test
  void spreadsCopiesOverTheTargetsWithTheMostRoom() {
    List<Candidate> two = List.of(new Candidate(1, "w1", 9_000, 1_000, UNKNOWN), new Candidate(2, "w1", 8_000, 1_000, UNKNOWN));
    List<Target> targets = List.of(new Target("w2", 1, 1.0), new Target("w3", 2, 1.0));
    assertThat(POLICY.choose(two, targets, 0, 40)).containsExactly(new Backup(1, "w3"), new Backup(2, "w2"));
  }

  @Test
  void autoLeavesPaidEvaluatorsAloneAndOnOrOffDecideForEveryRun() {
    assertThat(POLICY.copies("exec")).isTrue();
    assertThat(POLICY.copies("noop")).isTrue();
    assertThat(POLICY.copies("model")).as("a backup of a paid call pays twice").isFalse();
    assertThat(POLICY.withMode(Mode.ON).copies("model")).isTrue();
    assertThat(POLICY.withMode(Mode.OFF).copies("exec")).isFalse();
    assertThat(Mode.parse("On")).isEqualTo(Mode.ON);
    assertThatThrownBy(() -> Mode.parse("maybe")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'maybe'").hasMessageContaining("on, off or auto");
  }

  @Test
  void refusesSettingsThatMakeNoSense() {
    assertThatThrownBy(() -> new SpeculationPolicy(Mode.AUTO, 0.5, Duration.ZERO, 0.1, 5))
        .hasMessageContaining("slownessFactor");
    assertThatThrownBy(() -> new SpeculationPolicy(Mode.AUTO, 2, Duration.ofMillis(-1), 0.1, 5))
        .hasMessageContaining("minElapsed");
    assertThatThrownBy(() -> new SpeculationPolicy(Mode.AUTO, 2, Duration.ZERO, 0, 5)).hasMessageContaining("capShare");
    assertThatThrownBy(() -> new SpeculationPolicy(Mode.AUTO, 2, Duration.ZERO, 0.1, 0)).hasMessageContaining("minSamples");
  }
}

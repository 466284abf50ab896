package dev.tally.core.lead;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LeaderLeaseTest {
  private static final LeaderLease.Settings SETTINGS =
      new LeaderLease.Settings(Duration.ofSeconds(3), Duration.ofSeconds(1), Duration.ofMillis(500), Duration.ofSeconds(30));
  private static final LeaderAddress HERE = new LeaderAddress("10.0.0.1:7070", "http://10.0.0.1:7071");
  private static final long T0 = 1_700_000_000_000L;
  private static final long SECOND = 1_000_000_000L;

  @Test
  void takesTheLeadOfAStoreNobodyLedUnderEpochOne() {
    LeaderLease lease = new LeaderLease("a", SETTINGS);
    LeaderLease.Decision d = lease.decide(new LeaderRead(LeaderRow.NONE, T0), HERE);
    assertThat(d).isEqualTo(new LeaderLease.Acquire(LeaderRow.NONE, new LeaderRow(1, "a", HERE.text(), T0 + 3_000)));
    assertThat(lease.leading()).as("not before the swap is won").isFalse();
    assertThat(lease.swapped(d, true, 0)).isNull();
    assertThat(lease.leading()).isTrue();
    assertThat(lease.epoch()).isEqualTo(1);
    assertThat(lease.nextCheckIn()).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void standsByWhileAnotherLeadersLeaseHoldsByTheStoresClockAndTakesOverOnceItLapses() {
    LeaderLease lease = new LeaderLease("b", SETTINGS);
    LeaderRow held = new LeaderRow(4, "a", "workers=10.0.0.2:7070", T0 + 3_000);
    assertThat(lease.decide(new LeaderRead(held, T0 + 2_999), HERE)).isEqualTo(new LeaderLease.StandBy(held));
    assertThat(lease.nextCheckIn()).isEqualTo(Duration.ofMillis(500));
    LeaderLease.Decision d = lease.decide(new LeaderRead(held, T0 + 3_000), HERE);
    assertThat(d).isEqualTo(new LeaderLease.Acquire(held, new LeaderRow(5, "b", HERE.text(), T0 + 6_000)));
    lease.swapped(d, false, 0);
    assertThat(lease.leading()).as("another standby won the swap").isFalse();
  }

  /**
   * A leader that closed cleanly gave the lead up, but its row read as one that had just lapsed: the next
   * coordinator's first look waited a whole lease for it to come back (each `tally run` straight after
   * another on one store started 3 s late). A released row is taken at once, even on a first look.
   */
  @Test
  void aRowGivenUpOnCloseIsTakenAtOnceByTheNextCoordinatorsFirstLook() {
    LeaderLease leader = new LeaderLease("a", SETTINGS);
    leader.swapped(leader.decide(new LeaderRead(LeaderRow.NONE, T0), HERE), true, 0);
    LeaderRow mine = new LeaderRow(1, "a", HERE.text(), T0 + 3_000);
    LeaderLease.Renew release = leader.release(new LeaderRead(mine, T0 + 1_000));
    assertThat(release.next().released()).isTrue();
    assertThat(release.next().epoch()).isEqualTo(1);
    assertThat(release.next().lapsedAt(T0 + 1_000)).isTrue();

    LeaderLease next = new LeaderLease("b", SETTINGS);
    LeaderLease.Decision d = next.decide(new LeaderRead(release.next(), T0 + 1_050), HERE);
    assertThat(d).isEqualTo(new LeaderLease.Acquire(release.next(), new LeaderRow(2, "b", HERE.text(), T0 + 4_050)));
    // a row that lapsed without being given up still gets its lease: its leader may be reconnecting
    LeaderLease third = new LeaderLease("c", SETTINGS);
    LeaderRow lapsed = new LeaderRow(1, "a", HERE.text(), T0 + 1_000);
    assertThat(lapsed.released()).isFalse();
    assertThat(third.decide(new LeaderRead(lapsed, T0 + 1_050), HERE)).isEqualTo(new LeaderLease.StandBy(lapsed));
  }

  @Test
  void renewsItsOwnEpochAndStepsDownWhenTheRowNamesAnother() {
    LeaderLease lease = new LeaderLease("a", SETTINGS);
    lease.swapped(lease.decide(new LeaderRead(LeaderRow.NONE, T0), HERE), true, 0);
    LeaderRow mine = new LeaderRow(1, "a", HERE.text(), T0 + 3_000);
    LeaderLease.Decision renew = lease.decide(new LeaderRead(mine, T0 + 1_000), HERE);
    assertThat(renew).isEqualTo(new LeaderLease.Renew(mine, new LeaderRow(1, "a", HERE.text(), T0 + 4_000)));
    assertThat(lease.swapped(renew, true, SECOND)).isNull();
    // Frozen past its lease: a standby took epoch 2. The thawed leader reads the row and steps down.
    LeaderRow theirs = new LeaderRow(2, "b", "workers=10.0.0.2:7070", T0 + 9_000);
    LeaderLease.Decision d = lease.decide(new LeaderRead(theirs, T0 + 8_000), HERE);
    assertThat(d).isInstanceOfSatisfying(LeaderLease.StepDown.class,
        s -> assertThat(s.why()).contains("epoch 2 took the lead", "10.0.0.2:7070", "held epoch 1"));
    assertThat(lease.leading()).isFalse();
  }

  @Test
  void aRenewalWhoseSwapFailsStepsDown() {
    LeaderLease lease = new LeaderLease("a", SETTINGS);
    lease.swapped(lease.decide(new LeaderRead(LeaderRow.NONE, T0), HERE), true, 0);
    LeaderLease.Decision renew = lease.decide(new LeaderRead(new LeaderRow(1, "a", null, T0 + 3_000), T0 + 1_000), HERE);
    assertThat(lease.swapped(renew, false, SECOND)).isNotNull();
    assertThat(lease.leading()).isFalse();
  }

  @Test
  void aLeaderThatCouldNotRenewForAWholeLeaseByItsOwnClockHasLapsed() {
    LeaderLease lease = new LeaderLease("a", SETTINGS);
    assertThat(lease.lapsed(100 * SECOND)).as("a standby has nothing to lapse").isFalse();
    lease.swapped(lease.decide(new LeaderRead(LeaderRow.NONE, T0), HERE), true, 10 * SECOND);
    assertThat(lease.lapsed(12 * SECOND)).isFalse();
    assertThat(lease.lapsed(13 * SECOND - 1)).isFalse();
    assertThat(lease.lapsed(13 * SECOND)).isTrue();
  }

  @Test
  void aLeaderInDoubtHoldsOnForItsPatienceThenRenewsIfTheRowIsStillItsEpochOrStepsDownIfNot() {
    LeaderLease lease = new LeaderLease("a", SETTINGS);
    assertThat(lease.outOfPatience(100 * SECOND)).as("a standby has no patience to run out of").isFalse();
    lease.swapped(lease.decide(new LeaderRead(LeaderRow.NONE, T0), HERE), true, 10 * SECOND);
    // In doubt from 13 s (a lease after its last renewal); out of patience from 43 s (30 s more).
    assertThat(lease.lapsed(20 * SECOND)).isTrue();
    assertThat(lease.outOfPatience(43 * SECOND - 1)).isFalse();
    assertThat(lease.outOfPatience(43 * SECOND)).isTrue();
    assertThat(lease.sinceRenewalNanos(20 * SECOND)).isEqualTo(10 * SECOND);

    // The store answers at 40 s: the row, lapsed by the store's clock too, is still epoch 1: renewed.
    LeaderLease.Decision renew = lease.decide(new LeaderRead(new LeaderRow(1, "a", null, T0 + 3_000), T0 + 30_000), HERE);
    assertThat(renew).isInstanceOf(LeaderLease.Renew.class);
    assertThat(lease.swapped(renew, true, 40 * SECOND)).isNull();
    assertThat(lease.lapsed(42 * SECOND)).isFalse();
    assertThat(lease.outOfPatience(60 * SECOND)).isFalse();

    // In doubt again, and the next answer names epoch 2: a standby led meanwhile.
    LeaderLease.Decision deposed = lease.decide(new LeaderRead(new LeaderRow(2, "b", null, T0 + 70_000), T0 + 60_000), HERE);
    assertThat(deposed).isInstanceOfSatisfying(LeaderLease.StepDown.class, d -> assertThat(d.why()).contains("epoch 2 took the lead"));
    assertThat(lease.leading()).isFalse();
    assertThat(lease.outOfPatience(1_000 * SECOND)).isFalse();
  }

  @Test
  void aStandbyThatCouldNotReachTheStoreGivesTheRowItFindsAgainALeaseBeforeTakingOver() {
    LeaderLease standby = new LeaderLease("b", SETTINGS);
    LeaderRow led = new LeaderRow(1, "a", null, T0 + 3_000);
    assertThat(standby.decide(new LeaderRead(led, T0 + 1_000), HERE)).isInstanceOf(LeaderLease.StandBy.class);
    standby.unanswered(); // the store goes away for both, for 20 s
    // Back: the row lapsed 17 s ago by the store's clock, but the leader may have been as blind: it gets a lease.
    assertThat(standby.decide(new LeaderRead(led, T0 + 20_000), HERE)).isInstanceOf(LeaderLease.StandBy.class);
    assertThat(standby.decide(new LeaderRead(led, T0 + 22_999), HERE)).isInstanceOf(LeaderLease.StandBy.class);
    // It did not renew within the lease: taken over.
    assertThat(standby.decide(new LeaderRead(led, T0 + 23_000), HERE)).isInstanceOf(LeaderLease.Acquire.class);

    // The same, and the leader renews within the lease: the standby goes on standing by, and judges the new
    // row by the ordinary rule from then on.
    LeaderLease other = new LeaderLease("c", SETTINGS);
    other.unanswered();
    assertThat(other.decide(new LeaderRead(led, T0 + 20_000), HERE)).isInstanceOf(LeaderLease.StandBy.class);
    LeaderRow renewed = new LeaderRow(1, "a", null, T0 + 23_500);
    assertThat(other.decide(new LeaderRead(renewed, T0 + 20_600), HERE)).isInstanceOf(LeaderLease.StandBy.class);
    assertThat(other.decide(new LeaderRead(renewed, T0 + 23_500), HERE)).as("lapsed by the ordinary rule")
        .isInstanceOf(LeaderLease.Acquire.class);

    // A row nobody ever held is taken at once, blind or not.
    LeaderLease first = new LeaderLease("d", SETTINGS);
    first.unanswered();
    assertThat(first.decide(new LeaderRead(LeaderRow.NONE, T0), HERE)).isInstanceOf(LeaderLease.Acquire.class);
  }

  /** A standby started during an outage gives a row that lapsed just before its first look a lease (chaos saw it otherwise). */
  @Test
  void aStandbysFirstLookGivesARowThatLapsedLessThanALeaseAgoALeaseAndTakesAnOlderOneAtOnce() {
    LeaderRow led = new LeaderRow(2, "a", null, T0 + 3_000);
    LeaderLease fresh = new LeaderLease("b", SETTINGS);
    assertThat(fresh.decide(new LeaderRead(led, T0 + 4_000), HERE)).as("lapsed 1 s ago").isInstanceOf(LeaderLease.StandBy.class);
    assertThat(fresh.decide(new LeaderRead(led, T0 + 6_999), HERE)).isInstanceOf(LeaderLease.StandBy.class);
    assertThat(fresh.decide(new LeaderRead(led, T0 + 7_000), HERE)).as("a lease after the first look, not renewed")
        .isInstanceOf(LeaderLease.Acquire.class);

    LeaderLease renewing = new LeaderLease("c", SETTINGS);
    assertThat(renewing.decide(new LeaderRead(led, T0 + 4_000), HERE)).isInstanceOf(LeaderLease.StandBy.class);
    LeaderRow renewed = new LeaderRow(2, "a", null, T0 + 7_500);
    assertThat(renewing.decide(new LeaderRead(renewed, T0 + 4_500), HERE)).as("the leader was alive").isInstanceOf(LeaderLease.StandBy.class);
    assertThat(renewing.decide(new LeaderRead(renewed, T0 + 7_500), HERE)).as("then the ordinary rule")
        .isInstanceOf(LeaderLease.Acquire.class);

    LeaderLease late = new LeaderLease("d", SETTINGS);
    assertThat(late.decide(new LeaderRead(led, T0 + 6_000), HERE)).as("lapsed a whole lease ago: its leader is gone")
        .isInstanceOf(LeaderLease.Acquire.class);
  }

  @Test
  void aPatienceOfZeroStepsDownAtTheLapse() {
    LeaderLease lease = new LeaderLease("a", new LeaderLease.Settings(Duration.ofSeconds(3), Duration.ofSeconds(1),
        Duration.ofMillis(500), Duration.ZERO));
    lease.swapped(lease.decide(new LeaderRead(LeaderRow.NONE, T0), HERE), true, 10 * SECOND);
    assertThat(lease.outOfPatience(13 * SECOND - 1)).isFalse();
    assertThat(lease.outOfPatience(13 * SECOND)).isTrue();
  }

  @Test
  void settingsRefuseALeaseThatHoldsTwoRenewalsOrLess() {
    assertThatThrownBy(() -> new LeaderLease.Settings(Duration.ofSeconds(2), Duration.ofSeconds(1), Duration.ofMillis(500),
        Duration.ZERO)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("more than two renewals");
    assertThatThrownBy(() -> new LeaderLease.Settings(Duration.ofSeconds(3), Duration.ZERO, Duration.ofMillis(500),
        Duration.ZERO)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("renewal interval must be positive");
    assertThatThrownBy(() -> new LeaderLease.Settings(Duration.ofSeconds(3), Duration.ofSeconds(1), Duration.ofMillis(500),
        Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("patience must not be negative, got -1ms");
  }

  @Test
  void anAddressReadsBackFromItsTextAndUnknownPartsAreSkipped() {
    assertThat(LeaderAddress.parse(HERE.text())).isEqualTo(HERE);
    assertThat(LeaderAddress.parse("workers=h:1 future=x")).isEqualTo(new LeaderAddress("h:1", null));
    assertThat(LeaderAddress.parse(null)).isEqualTo(LeaderAddress.UNKNOWN);
    assertThat(LeaderAddress.UNKNOWN.toString()).isEqualTo("an unknown address");
    assertThatThrownBy(() -> new LeaderAddress("a b", null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'a b'");
  }
}

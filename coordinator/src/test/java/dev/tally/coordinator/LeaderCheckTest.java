package dev.tally.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.lead.LeaderAddress;
import dev.tally.core.lead.LeaderLease;
import dev.tally.core.store.StaleEpochException;
import dev.tally.core.store.Store;
import dev.tally.core.store.WorkerStatus;
import dev.tally.core.store.memory.InMemoryStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The one look at the leader row, carried out, on two instances of one in-memory store under a clock the test
 * moves: who leads, the epoch each instance's writes carry, and the step-down of a leader that was deposed
 * while it did not look (frozen).
 */
class LeaderCheckTest {
  private static final LeaderLease.Settings TIMING =
      new LeaderLease.Settings(Duration.ofSeconds(3), Duration.ofSeconds(1), Duration.ofMillis(500), Duration.ofSeconds(30));
  private static final LeaderAddress A = new LeaderAddress("a:7070", null);
  private static final LeaderAddress B = new LeaderAddress("b:7070", null);

  /** The store's clock, moved by hand. */
  private static final class Hand extends Clock {
    long millis = 1_700_000_000_000L;

    @Override
    public ZoneOffset getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis);
    }
  }

  private static void write(Store store, String worker) {
    store.saveWorkerStatuses(List.of(new WorkerStatus(worker, worker, "", true, 0, null, 0, 0, 0, null, 0.0, 1)));
  }

  @Test
  void aStandbyLeadsOnceTheLeaseLapsesAndTheDeposedLeaderWritesNothingAndStepsDown() {
    Hand clock = new Hand();
    InMemoryStore durable = InMemoryStore.create(clock);
    Store one = durable.reopen();
    Store two = durable.reopen();
    LeaderCheck first = new LeaderCheck(one, new LeaderLease("one", TIMING));
    LeaderCheck second = new LeaderCheck(two, new LeaderLease("two", TIMING));
    assertThat(one.writeEpoch()).as("nothing is written before the lead is won").isEqualTo(Store.NOT_LEADING);

    assertThat(first.check(A, 0)).isEqualTo(new LeaderCheck.Leads(1, true, dev.tally.core.lead.LeaderRow.NONE));
    assertThat(one.writeEpoch()).isEqualTo(1);
    assertThat(second.check(B, 0)).isInstanceOf(LeaderCheck.StandsBy.class);
    assertThatThrownBy(() -> write(two, "w0")).isInstanceOf(StaleEpochException.class);
    write(one, "w1");

    clock.millis += 1_000; // a renewal keeps the epoch
    assertThat(first.check(A, 1_000_000_000L)).isInstanceOf(LeaderCheck.Leads.class)
        .extracting(o -> ((LeaderCheck.Leads) o).tookOver()).isEqualTo(false);

    clock.millis += 2_999; // the leader freezes: the lease still holds
    assertThat(second.check(B, 0)).isInstanceOf(LeaderCheck.StandsBy.class);
    clock.millis += 1; // and now it has lapsed
    LeaderCheck.Outcome took = second.check(B, 0);
    assertThat(took).isInstanceOf(LeaderCheck.Leads.class);
    assertThat(((LeaderCheck.Leads) took).epoch()).isEqualTo(2);
    assertThat(((LeaderCheck.Leads) took).tookOver()).isTrue();
    assertThat(two.writeEpoch()).isEqualTo(2);

    // The thawed leader's write is refused before it looks at the row; its look then steps it down.
    assertThatThrownBy(() -> write(one, "w2")).isInstanceOf(StaleEpochException.class)
        .hasMessageContaining("leader epoch 1 is stale").hasMessageContaining("epoch 2");
    LeaderCheck.Outcome down = first.check(A, 5_000_000_000L);
    assertThat(down).isInstanceOf(LeaderCheck.SteppedDown.class);
    assertThat(((LeaderCheck.SteppedDown) down).why()).contains("epoch 2 took the lead");
    assertThat(one.writeEpoch()).isEqualTo(Store.NOT_LEADING);
    assertThat(first.lastSeen().epoch()).isEqualTo(2);
    write(two, "w3");
    assertThat(durable.workerStatuses()).extracting(WorkerStatus::workerId).containsExactlyInAnyOrder("w1", "w3");
  }

  @Test
  void aLeaderInDoubtWhoseRowIsStillItsEpochWhenTheStoreAnswersAgainRenewsAndWritesOn() {
    Hand clock = new Hand();
    InMemoryStore durable = InMemoryStore.create(clock);
    Store one = durable.reopen();
    Store two = durable.reopen();
    LeaderCheck first = new LeaderCheck(one, new LeaderLease("one", TIMING));
    LeaderCheck second = new LeaderCheck(two, new LeaderLease("two", TIMING));
    assertThat(first.check(A, 0)).isInstanceOf(LeaderCheck.Leads.class);

    // The store is unreachable for every coordinator alike for 20 s (a database restarting): the looks fail.
    assertThat(first.failed(Duration.ofSeconds(2).toNanos(), "unreachable"))
        .isEqualTo(new LeaderCheck.Unanswered(false, false, Duration.ofSeconds(2).toNanos()));
    assertThat(first.failed(Duration.ofSeconds(3).toNanos(), "unreachable"))
        .isEqualTo(new LeaderCheck.Unanswered(true, true, Duration.ofSeconds(3).toNanos()));
    assertThat(first.failed(Duration.ofSeconds(19).toNanos(), "unreachable"))
        .isEqualTo(new LeaderCheck.Unanswered(true, false, Duration.ofSeconds(19).toNanos()));
    clock.millis += 20_000;
    long now = Duration.ofSeconds(20).toNanos();
    assertThat(first.lease().lapsed(now)).as("in doubt").isTrue();
    assertThat(first.lease().outOfPatience(now)).as("within the patience").isFalse();
    // The store is back and the leader looks first: nobody took over, so it renews and writes on.
    assertThat(first.check(A, now)).isInstanceOfSatisfying(LeaderCheck.Leads.class, l -> {
      assertThat(l.epoch()).isEqualTo(1);
      assertThat(l.tookOver()).isFalse();
      assertThat(l.lateSinceNanos()).as("the renewal before it").hasValue(0);
    });
    assertThat(first.check(A, now + 1)).isInstanceOfSatisfying(LeaderCheck.Leads.class,
        l -> assertThat(l.lateSinceNanos()).as("within the lease").isEmpty());
    // A look whose read waited 10 s for a connection renews from when the row was read, not from before the
    // wait: the lease is not taken for lapsed again at the next look a second later.
    long answered = now + Duration.ofSeconds(10).toNanos();
    assertThat(first.check(A, () -> answered)).isInstanceOf(LeaderCheck.Leads.class);
    assertThat(first.check(A, answered + Duration.ofSeconds(1).toNanos())).isInstanceOfSatisfying(LeaderCheck.Leads.class,
        l -> assertThat(l.lateSinceNanos()).as("renewed a second ago").isEmpty());
    assertThat(first.lease().lapsed(now)).isFalse();
    write(one, "w1");
    assertThat(second.check(B, now)).as("the renewed lease holds again").isInstanceOf(LeaderCheck.StandsBy.class);
    assertThat(first.lease().outOfPatience(answered + Duration.ofSeconds(1 + 33).toNanos())).isTrue();
  }

  @Test
  void aLeaderWhoseLooksFailForTheLeaseAndItsPatienceStepsDownAndWritesNothing() {
    Hand clock = new Hand();
    Store store = InMemoryStore.create(clock);
    LeaderCheck check = new LeaderCheck(store, new LeaderLease("one", TIMING));
    check.check(A, 0);
    assertThat(check.failed(Duration.ofSeconds(33).toNanos() - 1, "unreachable"))
        .isEqualTo(new LeaderCheck.Unanswered(true, true, Duration.ofSeconds(33).toNanos() - 1));
    assertThat(check.failed(Duration.ofSeconds(33).toNanos(), "leader: reading the store failed"))
        .isEqualTo(new LeaderCheck.SteppedDown("could not renew the lead of epoch 1 for a whole lease (3s) and the patience"
            + " after it (30s): leader: reading the store failed"));
    assertThat(store.writeEpoch()).isEqualTo(Store.NOT_LEADING);
    assertThat(check.failed(Duration.ofSeconds(40).toNanos(), "unreachable")).as("a standby has no doubt")
        .isEqualTo(new LeaderCheck.Unanswered(false, false, 0));
  }

  @Test
  void aLeaderThatCouldNotRenewForAWholeLeaseHasLapsedByItsOwnClock() {
    Hand clock = new Hand();
    Store store = InMemoryStore.create(clock);
    LeaderCheck check = new LeaderCheck(store, new LeaderLease("one", TIMING));
    check.check(A, 0);
    assertThat(check.lease().lapsed(Duration.ofMillis(2_999).toNanos())).isFalse();
    assertThat(check.lease().lapsed(Duration.ofSeconds(3).toNanos())).isTrue();
    assertThat(check.stepDown("could not renew").why()).isEqualTo("could not renew");
    assertThat(store.writeEpoch()).isEqualTo(Store.NOT_LEADING);
  }
}

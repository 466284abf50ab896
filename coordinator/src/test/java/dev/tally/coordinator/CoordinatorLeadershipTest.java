package dev.tally.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.lead.LeaderLease;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.StaleEpochException;
import dev.tally.core.store.Store;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two coordinators on one store file: one leads, one stands by and takes over when the leader goes. */
class CoordinatorLeadershipTest {
  /** Short, so a takeover takes a second, not the product's 3.5 s; the rule is the same. */
  private static final LeaderLease.Settings FAST =
      new LeaderLease.Settings(Duration.ofMillis(900), Duration.ofMillis(300), Duration.ofMillis(100), Duration.ofSeconds(30));

  @TempDir Path dir;

  @Test
  void theProductsDefaultsLetAStandbyLeadWithinFiveSeconds() {
    LeaderLease.Settings d = Coordinator.builder().leaderLease();
    assertThat(d.lease()).isEqualTo(CoordinatorBuilder.DEFAULT_LEADER_LEASE).isEqualTo(Duration.ofSeconds(3));
    assertThat(d.renewEvery()).isEqualTo(Duration.ofSeconds(1));
    assertThat(d.retryEvery()).isEqualTo(Duration.ofMillis(500));
    assertThat(d.lease().plus(d.retryEvery())).isLessThan(Duration.ofSeconds(5));
    assertThat(d.patience()).as("a leader in doubt waits as long as a write waits for its database")
        .isEqualTo(dev.tally.store.JdbcStore.RECONNECT_PATIENCE);
  }

  @Test
  void aStandbyServesReadsRefusesWritesAndLeadsOnceTheLeaderCloses() throws Exception {
    Path db = dir.resolve("shared.db");
    Coordinator leader = Coordinator.builder().storeFile(db).standby(true).leaderLease(FAST).start();
    Coordinator standby = null;
    try {
      assertThat(leader.leading()).isTrue();
      assertThat(leader.epoch()).isEqualTo(1);
      long runId = leader.store().createRun(new RunSpec("cases", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 3),
          List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}")));

      standby = Coordinator.builder().storeFile(db).standby(true).leaderLease(FAST).start();
      assertThat(standby.leading()).isFalse();
      assertThat(standby.leader().epoch()).isEqualTo(1);
      // A leader on port 0 takes the lead before it binds its port: its first renewal advertises the port.
      Coordinator waiting = standby;
      await("the leader's worker port advertised").atMost(Duration.ofSeconds(30))
          .until(() -> ("127.0.0.1:" + leader.port()).equals(waiting.leader().leaderAddress().workers()));
      assertThat(standby.store().run(runId)).as("a standby reads").isPresent();
      Coordinator s = standby;
      assertThatThrownBy(() -> s.cancel(runId)).isInstanceOf(StaleEpochException.class).hasMessageContaining("standby");
      assertThatThrownBy(() -> s.store().cancelRun(runId, 0)).isInstanceOf(StaleEpochException.class);
      boolean[] ranOnLead = {false};
      standby.whenLeading(() -> ranOnLead[0] = true);
      assertThat(ranOnLead[0]).isFalse();

      leader.close(); // gives the lease up at once
      await("the standby leads").atMost(Duration.ofSeconds(30)).until(s::leading);
      assertThat(standby.epoch()).isEqualTo(2);
      assertThat(ranOnLead[0]).isTrue();
      assertThat(standby.port()).isPositive();
      assertThat(standby.cancel(runId).get().status()).isNotNull();
    } finally {
      leader.close();
      if (standby != null) {
        standby.close();
      }
    }
  }

  @Test
  void aLeaderWhoseEpochIsTakenStepsDown() throws Exception {
    Path db = dir.resolve("shared.db");
    try (Coordinator leader = Coordinator.builder().storeFile(db).standby(true).leaderLease(FAST).start();
        dev.tally.store.SqliteStore usurper = dev.tally.store.SqliteStore.open(db)) {
      assertThat(leader.leading()).isTrue();
      // Another coordinator takes the lead as if the leader's lease had lapsed (it was frozen).
      dev.tally.core.lead.LeaderRow row = usurper.leader().row();
      assertThat(usurper.swapLeader(row, new dev.tally.core.lead.LeaderRow(row.epoch() + 1, "usurper", null,
          row.expiresAtMillis() + 60_000))).isTrue();
      await("the leader steps down").atMost(Duration.ofSeconds(30)).until(() -> leader.steppedDown().isPresent());
      assertThat(leader.steppedDown().get()).contains("epoch 2 took the lead", "held epoch 1");
      assertThat(leader.leading()).isFalse();
      assertThatThrownBy(() -> leader.store().cancelRun(1, 0)).isInstanceOf(StaleEpochException.class);
    }
  }

  /**
   * A leader whose lead is taken while its scheduler's commit waits for the store (a database down for it
   * alone) steps down by its leadership's look, with no commit refused: the future of its run fails, naming
   * why. It used to stay incomplete, and a {@code tally run} waiting on it waited for ever.
   */
  @Test
  void aLeaderThatStepsDownFailsTheFuturesOfItsRunsSayingWhy() throws Exception {
    dev.tally.core.store.memory.InMemoryStore durable = dev.tally.core.store.memory.InMemoryStore.create(java.time.Clock.systemUTC());
    java.util.concurrent.CountDownLatch storeBack = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch commitWaiting = new java.util.concurrent.CountDownLatch(1);
    dev.tally.core.store.memory.InMemoryStore own = durable.reopen();
    // The leader's own store: every commit of its scheduler waits until the test lets it go.
    Store waitingCommits = (Store) java.lang.reflect.Proxy.newProxyInstance(Store.class.getClassLoader(), new Class<?>[] {Store.class},
        (proxy, method, args) -> {
          if (method.getName().equals("apply")) {
            commitWaiting.countDown();
            storeBack.await();
          }
          try {
            return method.invoke(own, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
    long runId = durable.createRun(new RunSpec("cases", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 3),
        List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}")));
    try (Coordinator leader = Coordinator.builder().store(waitingCommits).leaderLease(FAST).start()) {
      java.util.concurrent.CompletableFuture<dev.tally.core.store.RunCounters> done = leader.submit(runId);
      assertThat(commitWaiting.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("the scheduler commits").isTrue();
      Store usurper = durable.reopen();
      dev.tally.core.lead.LeaderRow row = usurper.leader().row();
      assertThat(usurper.swapLeader(row, new dev.tally.core.lead.LeaderRow(row.epoch() + 1, "usurper", null,
          row.expiresAtMillis() + 60_000))).isTrue();
      assertThatThrownBy(() -> done.get(30, java.util.concurrent.TimeUnit.SECONDS))
          .hasCauseInstanceOf(dev.tally.core.store.StoreException.class)
          .hasMessageContaining("this coordinator gave up its lead of the store: epoch 2 took the lead");
      assertThat(leader.steppedDown()).isPresent();
      storeBack.countDown(); // the store is back: the waiting commit is refused, and the coordinator closes
    } finally {
      storeBack.countDown();
    }
  }

  @Test
  void aCoordinatorThatMayNotStandByRefusesAStoreAnotherLeads() throws Exception {
    Path db = dir.resolve("shared.db");
    try (Coordinator leader = Coordinator.builder().storeFile(db).standby(true).leaderLease(FAST).start()) {
      assertThatThrownBy(() -> Coordinator.builder().storeFile(db).leaderLease(FAST).start())
          .isInstanceOfSatisfying(CoordinatorBuilder.StartException.class,
              e -> assertThat(e.reason()).isEqualTo(CoordinatorBuilder.StartException.Reason.STORE_LED))
          .hasMessageContaining("another coordinator leads").hasMessageContaining("127.0.0.1:" + leader.port());
    }
  }
}

package dev.tally.store;

import static dev.tally.store.StoreContractTest.T0;
import static dev.tally.store.StoreContractTest.cases;
import static dev.tally.store.StoreContractTest.lease;
import static dev.tally.store.StoreContractTest.rec;
import static dev.tally.store.StoreContractTest.record;
import static dev.tally.store.StoreContractTest.spec;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.Assignment;
import dev.tally.core.RecordStatus;
import dev.tally.core.Verdict;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.StoreBatchResult;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A {@link PostgresStore} whose server is stopped at once ({@code pg_ctl stop -m immediate}) and started
 * again under it: the write waiting meanwhile is applied whole once the server is back, and nothing is
 * recorded twice.
 */
class PostgresRestartTest {

  @Test
  void aBatchWaitsOutTheServersRestartAndIsAppliedWholeOnce() throws Exception {
    try (PostgresFixture.Dedicated server = PostgresFixture.Dedicated.start()) {
      StoreLocation.Postgres db = server.createDatabase("restarted");
      try (PostgresStore store = PostgresStore.open(db, null, Clock.systemUTC(), dev.tally.core.store.Durability.FULL)) {
        long runId = store.createRun(spec(3), cases(4));
        List<Assignment> leased = store.apply(lease(T0, "w1", 4)).leases().get(0);
        assertThat(leased).hasSize(4);

        server.stopImmediately();
        CompletableFuture<StoreBatchResult> applying = CompletableFuture.supplyAsync(
            () -> store.apply(record(T0 + 1, leased.stream().map(a -> rec(a, "w1", Verdict.PASS))
                .toArray(dev.tally.core.store.StoreBatch.RecordRequest[]::new))));
        server.restart();
        StoreBatchResult result = applying.get(60, TimeUnit.SECONDS);

        assertThat(result.recordStatuses()).hasSize(4).containsOnly(RecordStatus.RECORDED);
        assertThat(store.jobs(runId)).extracting(JobView::state).containsOnly(JobState.DONE);
        assertThat(store.run(runId).orElseThrow().counters().passed()).isEqualTo(4);
        assertThat(store.attempts(runId)).as("one attempt per case").hasSize(4);
      }
    }
  }

  /**
   * A store opened while its server is down (a coordinator started during a restart) waits for it and opens
   * once it is back (chaos found coordinators that gave up at once, exit 2, "not a usable Tally store"); a
   * store that is not one is refused at once, unreachable or not.
   */
  @Test
  void openingWaitsForAServerThatIsDownAndBackWithinThePatience() throws Exception {
    try (PostgresFixture.Dedicated server = PostgresFixture.Dedicated.start()) {
      StoreLocation.Postgres db = server.createDatabase("waited");
      Stores.Options options = Stores.Options.defaults();
      try (JdbcStore before = Stores.open(db, options)) {
        before.leader(); // a reader in the pool, which dies with the server
        server.stopImmediately();
        // A read on a connection that died says so (the pool's "connection is closed" from the clean-up hid it).
        Throwable lost = org.assertj.core.api.Assertions.catchThrowable(before::leader);
        assertThat(Stores.unreachable(db, lost)).as("%s", lost).isTrue();
      }
      CompletableFuture<JdbcStore> opening = CompletableFuture.supplyAsync(
          () -> Stores.whileUnreachable(db, "opening", () -> Stores.open(db, options)));
      // While down, opening is refused (never a store half-opened), and it is said to be unreachable.
      Throwable refused = org.assertj.core.api.Assertions.catchThrowable(() -> Stores.open(db, options));
      assertThat(Stores.unreachable(db, refused)).as("%s", refused).isTrue();
      assertThat(opening).as("still waiting").isNotDone();
      server.restart();
      try (JdbcStore store = opening.get(60, TimeUnit.SECONDS)) {
        assertThat(store.runs()).isEmpty();
      }
    }
    assertThat(Stores.unreachable(new StoreLocation.SqliteFile(java.nio.file.Path.of("x.db")), new java.io.EOFException()))
        .as("a file is never unreachable").isFalse();
    assertThat(Stores.unreachable(new StoreLocation.Postgres("h", 1, "d", null, null),
        new dev.tally.core.store.StoreException("is a newer Tally's store"))).isFalse();
  }

  @Test
  void theLeaderRowCanBeSwappedAgainOnceTheServerIsBack() throws Exception {
    try (PostgresFixture.Dedicated server = PostgresFixture.Dedicated.start()) {
      StoreLocation.Postgres db = server.createDatabase("led");
      try (PostgresStore store = PostgresStore.open(db, null, Clock.systemUTC(), dev.tally.core.store.Durability.FULL)) {
        long far = System.currentTimeMillis() + 3_600_000;
        dev.tally.core.lead.LeaderRow first = new dev.tally.core.lead.LeaderRow(1, "a", null, far);
        assertThat(store.swapLeader(dev.tally.core.lead.LeaderRow.NONE, first)).isTrue();

        server.stopImmediately();
        server.restart();
        // A standby only ever swaps this row, and its connection idled through the restart: its first try
        // finds that connection dead and swaps on a new one at once. Before, every try failed on the dead
        // connection; then the first did, and the next, half a second later, swapped.
        dev.tally.core.lead.LeaderRow second = new dev.tally.core.lead.LeaderRow(2, "b", null, far);
        assertThat(store.swapLeader(first, second)).as("swapped at the first try after the restart").isTrue();
        assertThat(store.leader().row()).isEqualTo(second);
      }
    }
  }
}

package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import net.jqwik.api.lifecycle.AfterProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The store contract against {@link PostgresStore} on a real PostgreSQL ({@link PostgresFixture}), plus
 * what is particular to it: its migrations from an empty database, its connection settings.
 */
class PostgresStoreTest extends StoreContractTest {

  /** Every test's databases go when it ends (a property's tries' with the next test). */
  @AfterEach
  void dropDatabases() {
    PostgresFixture.dropCreated();
  }

  /** The property's tries' databases go when the property ends. */
  @AfterProperty
  void dropPropertyDatabases() {
    PostgresFixture.dropCreated();
  }

  @Override
  protected Store newStore(Path dir) {
    return PostgresFixture.open(PostgresFixture.databaseFor(dir));
  }

  /**
   * A trigger makes PostgreSQL itself abort the statement that leases a job, so the failure happens inside
   * the store's transaction after its records and releases have run.
   */
  @Override
  protected AutoCloseable failLeasesIn(Path dir) throws SQLException {
    StoreLocation.Postgres db = PostgresFixture.databaseFor(dir);
    try (Connection c = PostgresFixture.connect(db); Statement s = c.createStatement()) {
      s.execute("CREATE FUNCTION injected_lease_failure() RETURNS trigger LANGUAGE plpgsql AS"
          + " $$ BEGIN RAISE EXCEPTION 'injected lease failure'; END $$");
      s.execute("CREATE TRIGGER injected_lease_failure BEFORE UPDATE OF state ON jobs FOR EACH ROW"
          + " WHEN (NEW.state = 'leased') EXECUTE FUNCTION injected_lease_failure()");
    }
    return () -> {
      try (Connection c = PostgresFixture.connect(db); Statement s = c.createStatement()) {
        s.execute("DROP TRIGGER injected_lease_failure ON jobs");
        s.execute("DROP FUNCTION injected_lease_failure()");
      }
    };
  }

  @Test
  void migratesAnEmptyDatabaseToTheWholeSchemaAndOpensItAgainWithoutMigrating() throws SQLException {
    StoreLocation.Postgres db = PostgresFixture.freshDatabase();
    String storeId;
    try (PostgresStore store = PostgresFixture.open(db)) {
      storeId = store.storeId();
      assertThat(storeId).matches("[0-9a-f]{32}");
    }
    List<String> migrated = appliedVersions(db);
    assertThat(migrated).as("the whole schema first, then the later migrations").startsWith("1");
    try (PostgresStore again = PostgresFixture.open(db);
        PostgresStore reader = PostgresStore.openExisting(db, PostgresFixture.password())) {
      assertThat(again.storeId()).as("the same store").isEqualTo(storeId);
      assertThat(reader.storeId()).isEqualTo(storeId);
      assertThatThrownBy(() -> reader.createRun(spec(3), cases(2))).isInstanceOf(StoreException.class)
          .hasMessageContaining("reading only");
    }
    assertThat(appliedVersions(db)).as("opening it again migrated nothing").isEqualTo(migrated);
  }

  /** The versions of the migrations applied to {@code db}, in the order they were applied; all succeeded. */
  private static List<String> appliedVersions(StoreLocation.Postgres db) throws SQLException {
    List<String> out = new java.util.ArrayList<>();
    try (Connection c = PostgresFixture.connect(db); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT version, success FROM flyway_schema_history ORDER BY installed_rank")) {
      while (rs.next()) {
        assertThat(rs.getBoolean(2)).as("migration %s succeeded", rs.getString(1)).isTrue();
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  @Test
  void refusesToReadADatabaseWithoutTallysSchema() {
    StoreLocation.Postgres db = PostgresFixture.freshDatabase();
    assertThatThrownBy(() -> PostgresStore.openExisting(db, PostgresFixture.password()))
        .isInstanceOf(StoreException.class).hasMessageContaining("schema").hasMessageContaining("missing")
        .hasMessageContaining(db.describe());
  }

  @Test
  void writesWithSynchronousCommitAndReadsInOneSnapshotPerRead() {
    try (PostgresStore store = PostgresFixture.open(PostgresFixture.freshDatabase())) {
      String synchronousCommit = store.onWriter("test", c -> show(c, "synchronous_commit"));
      String isolation = store.read("test", c -> show(c, "transaction_isolation"));
      String readOnly = store.read("test", c -> show(c, "transaction_read_only"));
      assertThat(synchronousCommit).isEqualTo("on");
      assertThat(isolation).isEqualTo("repeatable read");
      assertThat(readOnly).isEqualTo("on");
    }
  }

  @Test
  void relaxedDurabilityTurnsSynchronousCommitOffForTheWriterOnly() {
    try (PostgresStore store = PostgresStore.open(PostgresFixture.freshDatabase(), PostgresFixture.password(),
        java.time.Clock.systemUTC(), dev.tally.core.store.Durability.RELAXED)) {
      String synchronousCommit = store.onWriter("test", c -> show(c, "synchronous_commit"));
      assertThat(synchronousCommit).isEqualTo("off");
    }
  }

  private static String show(Connection c, String setting) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }
}

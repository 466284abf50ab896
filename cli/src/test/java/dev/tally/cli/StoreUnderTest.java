package dev.tally.cli;

import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.StoreException;
import dev.tally.store.JdbcStore;
import dev.tally.store.PostgresFixture;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;
import java.util.Optional;

/**
 * The store a process test runs {@code tally} on: a SQLite file in the test's directory, or a fresh
 * database on the test PostgreSQL ({@link PostgresFixture}). A parameterised test takes the kind's name
 * ({@code @ValueSource(strings = {"sqlite", "postgresql"})}).
 *
 * @param location where the store is
 * @param env what a {@code tally} process needs in its environment to reach it (PostgreSQL's password)
 */
record StoreUnderTest(StoreLocation location, Map<String, String> env) {

  /** The store of kind {@code kind} ({@code sqlite} or {@code postgresql}) for a test working in {@code dir}. */
  static StoreUnderTest of(String kind, Path dir) {
    return switch (kind) {
      case "sqlite" -> new StoreUnderTest(new StoreLocation.SqliteFile(dir.resolve("t.db")), Map.of());
      case "postgresql" -> new StoreUnderTest(PostgresFixture.freshDatabase(), PostgresFixture.processEnv());
      default -> throw new IllegalArgumentException("no store kind " + kind);
    };
  }

  /** The {@code --db} argument. */
  String dbArgument() {
    return "--db=" + location.describe();
  }

  /** Opens the store (migrating it, as a coordinator would). */
  JdbcStore open() {
    return Stores.open(location, options());
  }

  /** The first run's counters as the store holds them now; empty until the store and its run are there. */
  Optional<RunCounters> counters() {
    if (location instanceof StoreLocation.SqliteFile f) {
      return TallyProcess.counters(f.file());
    }
    try (JdbcStore store = openExisting()) {
      return store.runs().stream().findFirst().map(RunView::counters);
    } catch (StoreException notReadyYet) {
      return Optional.empty();
    }
  }

  /** Opens the store to read it, never migrating (as {@code tally status} does). */
  JdbcStore openExisting() {
    return Stores.openExisting(location, options());
  }

  /**
   * A new JDBC connection to the store, for a test's own queries of tables the store's API does not read
   * (a SQLite file read-only).
   */
  java.sql.Connection connect() throws java.sql.SQLException {
    if (location instanceof StoreLocation.SqliteFile f) {
      return java.sql.DriverManager.getConnection("jdbc:sqlite:" + f.file().toUri() + "?mode=ro");
    }
    return PostgresFixture.connect((StoreLocation.Postgres) location);
  }

  private Stores.Options options() {
    return new Stores.Options(Clock.systemUTC(), null, env, dev.tally.core.store.Durability.FULL);
  }

  @Override
  public String toString() {
    return location.describe();
  }
}

package dev.tally.cli;

import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.StoreException;
import dev.tally.store.JdbcStore;
import dev.tally.store.PostgresFixture;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import java.io.IOException;
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

  /** How many times {@link #freezeOutsideWriteTransaction} tries before it gives up. */
  private static final int FREEZE_TRIES = 200;

  /**
   * Sends SIGSTOP to {@code pid}, a coordinator writing to this store, at a moment it holds no write
   * transaction. On SQLite a process frozen inside one keeps the database's single write lock (in WAL mode
   * SQLite's write lock is the POSIX lock on byte 120 of the {@code -shm} file), and nothing, a standby's
   * takeover included, can write until it thaws: a limit of SQLite that the README states, and that
   * PostgreSQL does not share (it ends a session idle inside a transaction after 2 s). So on SQLite a freeze
   * that caught the lock is undone at once and tried again; on PostgreSQL the first freeze stands.
   *
   * @return how many freezes it took (1 when the first one stood)
   * @throws AssertionError if every one of {@value #FREEZE_TRIES} freezes caught the lock
   */
  int freezeOutsideWriteTransaction(long pid) throws IOException, InterruptedException {
    for (int tries = 1; tries <= FREEZE_TRIES; tries++) {
      Signals.send(pid, "STOP");
      if (!(location instanceof StoreLocation.SqliteFile f) || !holdsSqliteWriteLock(pid, f.file())) {
        return tries;
      }
      Signals.send(pid, "CONT");
    }
    throw new AssertionError("process " + pid + " held SQLite's write lock at each of " + FREEZE_TRIES + " freezes");
  }

  /** Whether {@code pid} holds the WAL write lock of the SQLite database {@code file}, as {@code /proc/locks} says. */
  private static boolean holdsSqliteWriteLock(long pid, Path file) throws IOException {
    Path shm = file.resolveSibling(file.getFileName() + "-shm");
    if (!java.nio.file.Files.exists(shm)) {
      return false;
    }
    long inode = ((Number) java.nio.file.Files.getAttribute(shm, "unix:ino")).longValue();
    // A line: "8: POSIX  ADVISORY  WRITE 26400 fe:00:2172018 120 120" (id, kind, mode, type, pid, dev:inode, from, to).
    for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/locks"))) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 8 && f[1].equals("POSIX") && f[3].equals("WRITE") && f[4].equals(Long.toString(pid))
          && f[5].endsWith(":" + inode) && f[6].equals("120")) {
        return true;
      }
    }
    return false;
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

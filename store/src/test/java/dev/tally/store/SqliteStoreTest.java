package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The store contract against {@link SqliteStore}, plus what is particular to one SQLite file. */
class SqliteStoreTest extends StoreContractTest {

  private static final String FILE = "tally.db";

  @Override
  protected Store newStore(Path dir) {
    return SqliteStore.open(dir.resolve(FILE));
  }

  /**
   * A trigger makes SQLite itself abort the statement that leases a job, so the failure happens inside
   * the store's transaction after its records and releases have run.
   */
  @Override
  protected AutoCloseable failLeasesIn(Path dir) throws SQLException {
    try (Connection c = connect(dir); Statement s = c.createStatement()) {
      s.execute("CREATE TRIGGER injected_lease_failure BEFORE UPDATE OF state ON jobs"
          + " WHEN NEW.state = 'leased' BEGIN SELECT RAISE(ABORT, 'injected lease failure'); END");
    }
    return () -> {
      try (Connection c = connect(dir); Statement s = c.createStatement()) {
        s.execute("DROP TRIGGER injected_lease_failure");
      }
    };
  }

  private static Connection connect(Path dir) throws SQLException {
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(FILE));
    try (Statement s = c.createStatement()) {
      s.execute("PRAGMA busy_timeout = 5000");
    }
    return c;
  }

  private static String query(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Test
  void aStoreMadeBeforeVersion11KeepsItsRunsJobsAndAttemptsAndGainsNamesStatesAndKeys() throws Exception {
    String url = "jdbc:sqlite:" + dir.resolve(FILE).toAbsolutePath();
    org.flywaydb.core.Flyway.configure().dataSource(url, null, null).locations("classpath:db/migration/sqlite")
        .target("10").load().migrate();
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      s.execute("INSERT INTO runs (id, dataset, evaluator_kind, case_timeout_millis, max_attempts, created_at_millis,"
          + " finished_at_millis, state, total, passed) VALUES (1, 'a.jsonl', 'noop', 60000, 3, 5, 9, 'finished', 1, 1),"
          + " (2, 'b.jsonl', 'noop', 60000, 3, 6, 0, 'active', 2, 0)");
      s.execute("INSERT INTO jobs (id, run_id, position, case_id, case_json, state, token, attempts, verdict, worker)"
          + " VALUES (1, 1, 0, 'x', '{\"id\":\"x\"}', 'done', 1, 1, 'pass', 'w1'),"
          + " (2, 2, 0, 'y', '{\"id\":\"y\"}', 'pending', 0, 0, NULL, NULL),"
          + " (3, 2, 1, 'z', '{\"id\":\"z\"}', 'pending', 0, 0, NULL, NULL)");
      s.execute("INSERT INTO attempts (job_id, token, worker, started_at_millis, ended_at_millis, ending)"
          + " VALUES (1, 1, 'w1', 5, 9, 'recorded')");
    }
    try (SqliteStore store = SqliteStore.open(dir.resolve(FILE))) {
      assertThat(store.runs()).extracting(r -> r.runId() + " " + r.state() + " '" + r.name() + "' " + r.counters().ended())
          .containsExactly("1 FINISHED '' 1", "2 RUNNING '' 0");
      assertThat(store.attempts(1, "x").orElseThrow()).extracting(dev.tally.core.store.AttemptView::ending).containsExactly("recorded");
      assertThat(store.apply(lease(T0, "w1", 5)).leases().get(0)).extracting(dev.tally.core.Assignment::caseId)
          .containsExactly("y", "z");
      assertThat(store.cancelRun(2, T0 + 1).status()).isEqualTo(dev.tally.core.store.CancelResult.Status.CANCELLED);
      assertThat(store.claimKey("anonymous", "k", null, T0, T0 + 1)).isInstanceOf(dev.tally.core.store.KeyClaim.Claimed.class);
    }
  }

  @Test
  void aStoreMadeBeforeVersion17GainsAnEmptyResponseJournalAndItsLeasedJobsCanJournal() throws Exception {
    String url = "jdbc:sqlite:" + dir.resolve(FILE).toAbsolutePath();
    org.flywaydb.core.Flyway.configure().dataSource(url, null, null).locations("classpath:db/migration/sqlite")
        .target("16").load().migrate();
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      s.execute("INSERT INTO runs (id, dataset, evaluator_kind, case_timeout_millis, max_attempts, created_at_millis,"
          + " state, total) VALUES (1, 'a.jsonl', 'exec', 60000, 3, 5, 'running', 1)");
      s.execute("INSERT INTO jobs (id, run_id, position, case_id, case_json, state, token, attempts)"
          + " VALUES (1, 1, 0, 'a', '{\"id\":\"a\"}', 'pending', 0, 0)");
    }
    try (SqliteStore store = SqliteStore.open(dir.resolve(FILE))) {
      assertThat(store.journalledResponses(1, "a")).isEmpty();
      dev.tally.core.Assignment a = store.apply(lease(T0, "w1", 1)).leases().get(0).get(0);
      assertThat(a.journal()).isEmpty();
      assertThat(store.apply(journal(T0 + 1, entry(a, "ab", "{}"))).journalStatuses())
          .containsExactly(dev.tally.core.JournalEntry.Status.STORED);
      assertThat(store.journalledResponses(1, "a")).containsEntry("ab", "{}");
    }
  }

  @Test
  void aStoreMadeBeforeVersion15GetsEachRunsScoreMomentsFromItsRecordedJobs() throws Exception {
    String url = "jdbc:sqlite:" + dir.resolve(FILE).toAbsolutePath();
    org.flywaydb.core.Flyway.configure().dataSource(url, null, null).locations("classpath:db/migration/sqlite")
        .target("14").load().migrate();
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      s.execute("INSERT INTO runs (id, dataset, evaluator_kind, case_timeout_millis, max_attempts, created_at_millis,"
          + " finished_at_millis, state, total, passed, failed) VALUES (1, 'a.jsonl', 'exec', 60000, 3, 5, 9, 'finished', 4, 2, 1)");
      // Three done jobs, two with a score; a pending job's stale score column (none should exist) is not counted.
      s.execute("INSERT INTO jobs (id, run_id, position, case_id, case_json, state, token, attempts, verdict, score, worker)"
          + " VALUES (1, 1, 0, 'a', '{\"id\":\"a\"}', 'done', 1, 1, 'pass', 0.5, 'w1'),"
          + " (2, 1, 1, 'b', '{\"id\":\"b\"}', 'done', 1, 1, 'pass', 1.0, 'w1'),"
          + " (3, 1, 2, 'c', '{\"id\":\"c\"}', 'done', 1, 1, 'fail', NULL, 'w1'),"
          + " (4, 1, 3, 'd', '{\"id\":\"d\"}', 'pending', 0, 0, NULL, 7.0, NULL)");
    }
    try (SqliteStore store = SqliteStore.open(dir.resolve(FILE))) {
      dev.tally.core.store.RunCounters c = store.run(1).orElseThrow().counters();
      assertThat(c.scored()).isEqualTo(2);
      assertThat(c.scoreSum()).isEqualTo(1.5);
      assertThat(c.scoreSumOfSquares()).isEqualTo(1.25);
      assertThat(c.meanScore().orElseThrow().value()).isEqualTo(0.75);
      assertThat(c.accuracy().orElseThrow().value()).isEqualTo(2.0 / 3);
    }
  }

  @Test
  void aStoreFromANewerTallyIsRefusedByBothWaysOfOpening() throws Exception {
    Path db = dir.resolve("newer.db");
    SqliteStore.open(db).close();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement s = c.createStatement()) {
      s.execute("INSERT INTO flyway_schema_history (installed_rank, version, description, type, script, checksum,"
          + " installed_by, execution_time, success) VALUES (999, '999', 'from the future', 'SQL', 'V999__future.sql', 0, 'x', 0, 1)");
    }
    assertThatThrownBy(() -> SqliteStore.openExisting(db)).isInstanceOf(StoreException.class)
        .hasMessageContaining("has schema version 999, from a newer Tally");
    assertThatThrownBy(() -> SqliteStore.open(db)).isInstanceOf(StoreException.class)
        .hasMessageContaining("has schema version 999, from a newer Tally");
  }

  @Test
  void openExistingChangesNothingAndRefusesWrites() throws Exception {
    Path db = dir.resolve("with space").resolve("t.db");
    try (SqliteStore store = SqliteStore.open(db)) {
      store.createRun(spec(3), cases(2));
    }
    byte[] before = java.nio.file.Files.readAllBytes(db);
    try (SqliteStore reader = SqliteStore.openExisting(db)) {
      assertThat(reader.runs()).hasSize(1);
      assertThat(db.resolveSibling("t.db-wal")).as("no side file for a store nobody has open").doesNotExist();
      assertThat(db.resolveSibling("t.db-shm")).doesNotExist();
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> reader.createRun(spec(3), cases(1)))
          .isInstanceOf(StoreException.class).hasMessageContaining("opened for reading only");
    }
    assertThat(java.nio.file.Files.readAllBytes(db)).as("the file is byte for byte the same").isEqualTo(before);

    // Beside a writer that has it open (WAL mode), a reader sees what the writer committed.
    try (SqliteStore writer = SqliteStore.open(db)) {
      writer.createRun(spec(3), cases(3));
      try (SqliteStore reader = SqliteStore.openExisting(db)) {
        assertThat(reader.runs()).hasSize(2);
      }
      writer.createRun(spec(3), cases(1));
      assertThat(writer.runs()).as("the writer is undisturbed").hasSize(3);
    }
  }

  @Test
  void openExistingNeverCreatesOrMigratesAndSaysWhatIsMissing() throws Exception {
    Path missing = dir.resolve("missing.db");
    assertThatThrownBy(() -> SqliteStore.openExisting(missing))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("no store file at " + missing.toAbsolutePath());
    assertThat(missing).doesNotExist();

    Path empty = dir.resolve("empty.db");
    DriverManager.getConnection("jdbc:sqlite:" + empty).close(); // an SQLite file with no schema, as at creation
    assertThatThrownBy(() -> SqliteStore.openExisting(empty))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("the schema of " + empty.toAbsolutePath() + " is missing");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + empty);
        ResultSet tables = c.getMetaData().getTables(null, null, "%", null)) {
      java.util.List<String> names = new java.util.ArrayList<>();
      while (tables.next()) {
        if ("TABLE".equals(tables.getString("TABLE_TYPE"))) {
          names.add(tables.getString("TABLE_NAME"));
        }
      }
      assertThat(names).as("tables after openExisting").isEmpty();
    }

    Path made = dir.resolve("made.db");
    SqliteStore.open(made).close();
    try (SqliteStore store = SqliteStore.openExisting(made)) {
      assertThat(store.runs()).isEmpty();
    }
  }

  /** Every table, index and trigger of the file at {@code url}, with the SQL that made it. */
  private static java.util.List<String> schemaOf(String url) throws SQLException {
    return rows(url, "SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name");
  }

  /** What Flyway's validation compares of each applied migration, in the order applied. */
  private static java.util.List<String> historyOf(String url) throws SQLException {
    return rows(url, "SELECT version || ' ' || description || ' ' || type || ' ' || checksum || ' ' || success"
        + " FROM flyway_schema_history ORDER BY installed_rank");
  }

  private static java.util.List<String> rows(String url, String sql) throws SQLException {
    java.util.List<String> rows = new java.util.ArrayList<>();
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        rows.add(rs.getString(1));
      }
    }
    return rows;
  }

  @Test
  void aNewStoreIsFlywaysSchemaCopiedFromTheBuildWithAnIdentityOfItsOwn() throws Exception {
    Path byFlyway = dir.resolve("flyway.db");
    String flywayUrl = "jdbc:sqlite:" + byFlyway.toAbsolutePath();
    org.flywaydb.core.Flyway.configure().dataSource(flywayUrl, null, null).locations("classpath:db/migration/sqlite")
        .load().migrate();
    Path first = dir.resolve("first.db");
    Path second = dir.resolve("second.db");
    String firstId;
    String secondId;
    try (SqliteStore a = SqliteStore.open(first); SqliteStore b = SqliteStore.open(second)) {
      firstId = a.storeId();
      secondId = b.storeId();
      a.createRun(spec(3), cases(2)); // and it works as a store
      assertThat(a.runs()).hasSize(1);
    }
    String firstUrl = "jdbc:sqlite:" + first.toAbsolutePath();
    assertThat(schemaOf(firstUrl)).as("the schema Flyway makes from nothing").isEqualTo(schemaOf(flywayUrl)).isNotEmpty();
    assertThat(historyOf(firstUrl)).as("Flyway's history of it").isEqualTo(historyOf(flywayUrl)).hasSize(historyOf(flywayUrl).size());
    assertThat(firstId).matches("[0-9a-f]{32}").isNotEqualTo(secondId);
    assertThat(secondId).matches("[0-9a-f]{32}");
    assertThat(query(DriverManager.getConnection("jdbc:sqlite:" + byFlyway), "SELECT store_id FROM store_info"))
        .as("the identity V7 gives a store Flyway creates has the same shape").matches("[0-9a-f]{32}");
    assertThat(java.nio.file.Files.getPosixFilePermissions(first))
        .as("the permissions a store Flyway creates gets").isEqualTo(java.nio.file.Files.getPosixFilePermissions(byFlyway));
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir)) {
      assertThat(files.map(f -> f.getFileName().toString())).as("no copy left beside the stores").noneMatch(n -> n.startsWith(SqliteSchemaTemplate.COPY_PREFIX));
    }
    // The stores above came from the build's template, not from Flyway run here: it exists, and makes files.
    Path third = dir.resolve("third.db");
    assertThat(SqliteSchemaTemplate.create(third)).as("this build has a template").isTrue();
    assertThat(SqliteSchemaTemplate.create(third)).as("an existing file is left alone").isFalse();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + third)) {
      assertThat(SqliteSchemaTemplate.isCurrent(c)).isTrue();
    }
    try (Connection c = DriverManager.getConnection(flywayUrl)) {
      assertThat(SqliteSchemaTemplate.isCurrent(c)).as("nor would Flyway's own file be migrated again").isTrue();
    }
  }

  @Test
  void aStoreWhoseAppliedMigrationWasEditedIsStillValidatedByFlyway() throws Exception {
    Path db = dir.resolve("edited.db");
    SqliteStore.open(db).close();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE flyway_schema_history SET checksum = checksum + 1 WHERE version = '3'");
    }
    assertThatThrownBy(() -> SqliteStore.open(db)).isInstanceOf(StoreException.class)
        .hasMessageContaining("migrating the schema of").hasMessageContaining("checksum mismatch");
  }

  @Test
  void storesCreatedAtOnceUnderOneNameAreOneStore() throws Exception {
    Path db = dir.resolve("raced.db");
    int openers = 6;
    java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(openers);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(openers);
    try {
      java.util.List<java.util.concurrent.Future<String>> ids = new java.util.ArrayList<>();
      for (int i = 0; i < openers; i++) {
        ids.add(pool.submit(() -> {
          start.await();
          try (SqliteStore store = SqliteStore.open(db)) {
            return store.storeId();
          }
        }));
      }
      java.util.Set<String> distinct = new java.util.HashSet<>();
      for (java.util.concurrent.Future<String> id : ids) {
        distinct.add(id.get(60, java.util.concurrent.TimeUnit.SECONDS));
      }
      assertThat(distinct).as("one identity: every opener has the same file").hasSize(1);
    } finally {
      pool.shutdownNow();
    }
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir)) {
      assertThat(files.map(f -> f.getFileName().toString())).noneMatch(n -> n.startsWith(SqliteSchemaTemplate.COPY_PREFIX));
    }
  }

  @Test
  void theCopiesOfProcessesKilledWhileCreatingAStoreAreRemovedByTheNextCreation() throws Exception {
    long dead = Long.MAX_VALUE; // no process has it
    Path leftover = dir.resolve(SqliteSchemaTemplate.COPY_PREFIX + dead + "-1f2e");
    Path leftoverJournal = dir.resolve(SqliteSchemaTemplate.COPY_PREFIX + dead + "-1f2e-journal");
    Path living = dir.resolve(SqliteSchemaTemplate.COPY_PREFIX + ProcessHandle.current().pid() + "-3c4d");
    Path stranger = dir.resolve(SqliteSchemaTemplate.COPY_PREFIX + "notapid");
    for (Path p : java.util.List.of(leftover, leftoverJournal, living, stranger)) {
      java.nio.file.Files.writeString(p, "x");
    }
    SqliteStore.open(dir.resolve("next.db")).close();
    assertThat(leftover).as("its process is gone").doesNotExist();
    assertThat(leftoverJournal).doesNotExist();
    assertThat(living).as("this process's: it may be creating a store right now").exists();
    assertThat(stranger).as("not a name a copy has").exists();
  }

  @Test
  void aStoreNamedAsLongAsTheFileSystemAllowsIsCreatedFromTheTemplate() throws Exception {
    // 247 characters: with "-journal", 255, the longest name most Linux file systems take.
    Path db = dir.resolve("s".repeat(244) + ".db");
    try (SqliteStore store = SqliteStore.open(db)) {
      store.createRun(spec(3), cases(1));
      assertThat(store.storeId()).matches("[0-9a-f]{32}");
    }
    assertThat(historyOf("jdbc:sqlite:" + db.toAbsolutePath())).isNotEmpty();
  }

  @Test
  void aDirectoryThatCannotBeWrittenIsSaidInWords() {
    // AccessDeniedException's own message is only the path; a reader needs the reason.
    assertThat(SqliteSchemaTemplate.why(new java.nio.file.AccessDeniedException("/x/.tally-new-store-1-2")))
        .isEqualTo("permission denied");
    assertThat(SqliteSchemaTemplate.why(new java.nio.file.FileSystemException("/x/y", null, "No space left on device")))
        .isEqualTo("No space left on device");
    assertThat(SqliteSchemaTemplate.why(new java.io.IOException("broken pipe"))).isEqualTo("broken pipe");
  }

  @Test
  void createsTheFileAndItsDirectoriesInWalModeWithTheSchemaMigratedOnce() throws SQLException {
    Path nested = dir.resolve("a/b");
    try (Store store = newStore(nested)) {
      store.createRun(spec(3), cases(1));
    }
    try (Store store = newStore(nested)) {
      assertThat(store.runs()).hasSize(1);
    }
    try (Connection c = connect(nested)) {
      assertThat(query(c, "PRAGMA journal_mode")).isEqualTo("wal");
      assertThat(query(c, "SELECT count(*) FROM flyway_schema_history WHERE success = 1 AND version = '1'"))
          .isEqualTo("1");
    }
  }

  @Test
  void readsWhileAnotherProcessHoldsTheWriteLock() throws SQLException {
    try (Store store = newStore(dir)) {
      long runId = store.createRun(spec(3), cases(3));
      try (Connection other = connect(dir); Statement s = other.createStatement()) {
        s.execute("BEGIN IMMEDIATE");
        s.execute("UPDATE runs SET dataset = 'uncommitted' WHERE id = " + runId);
        // The store's busy timeout is 10 s; a read that waited for the lock would miss this deadline.
        assertTimeoutPreemptively(Duration.ofSeconds(3), () -> {
          assertThat(store.jobs(runId)).hasSize(3);
          assertThat(store.run(runId).orElseThrow().counters().total()).isEqualTo(3);
        });
        s.execute("ROLLBACK");
      }
    }
  }

  @Test
  void runsBothKindsOfConnectionWithTheDocumentedDurabilityAndLockingSettings() {
    try (SqliteStore store = SqliteStore.open(dir.resolve(FILE))) {
      assertThat(store.pragma(true, "synchronous")).as("FULL, unless asked otherwise").isEqualTo("2");
      assertThat(store.pragma(true, "foreign_keys")).isEqualTo("1");
      for (boolean writer : new boolean[] {true, false}) {
        assertThat(store.pragma(writer, "journal_mode")).isEqualTo("wal");
        assertThat(store.pragma(writer, "busy_timeout")).isEqualTo("10000");
      }
      // The read connections are opened read-only: SQLite itself refuses a write on them.
      assertThatThrownBy(() -> store.pragma(false, "user_version = 7")).isInstanceOf(StoreException.class)
          .hasStackTraceContaining("readonly");
    }
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(dev.tally.core.store.Durability.class)
  void theWriteConnectionSyncsAsTheDurabilityItWasOpenedWithPromises(dev.tally.core.store.Durability durability) {
    // PRAGMA synchronous reads back 2 for FULL (the WAL fsynced at every commit) and 1 for NORMAL (only at
    // checkpoints), in WAL mode.
    String expected = durability == dev.tally.core.store.Durability.FULL ? "2" : "1";
    try (SqliteStore store = SqliteStore.open(dir.resolve(FILE), java.time.Clock.systemUTC(), durability)) {
      assertThat(store.pragma(true, "journal_mode")).isEqualTo("wal");
      assertThat(store.pragma(true, "synchronous")).as(durability + " is synchronous=" + SqliteDialect.synchronous(durability))
          .isEqualTo(expected);
      store.createRun(spec(1), cases(1)); // a commit under that setting
      assertThat(store.commits()).isEqualTo(1);
    }
    try (SqliteStore again = SqliteStore.open(dir.resolve(FILE), java.time.Clock.systemUTC(), durability)) {
      assertThat(again.pragma(true, "synchronous")).as("set again by every open, not kept in the file").isEqualTo(expected);
    }
  }

  @Test
  void aCommitThatFailsForWantOfRoomLeavesTheStoreWritableOnceThereIsRoom() {
    try (SqliteStore store = SqliteStore.open(dir.resolve(FILE))) {
      long runId = store.createRun(spec(3), cases(2_000));
      java.util.List<dev.tally.core.Assignment> got = store.apply(lease(T0, "w1", 2_000)).leases().get(0);
      String pages = store.pragma(true, "page_count");
      store.pragma(true, "max_page_count = " + pages); // the disk is full: no page more
      StoreBatch big = record(T0 + 1, got.stream()
          .map(a -> new dev.tally.core.store.StoreBatch.RecordRequest(a.jobId(), a.token(), "w1",
              new dev.tally.core.Outcome(dev.tally.core.Verdict.PASS, 1.0, "x".repeat(4_000), 1)))
          .toArray(dev.tally.core.store.StoreBatch.RecordRequest[]::new));
      assertThatThrownBy(() -> store.apply(big)).isInstanceOf(StoreException.class)
          .hasStackTraceContaining("database or disk is full");
      assertThat(store.run(runId).orElseThrow().counters().recorded()).as("nothing of the batch").isZero();
      assertThatThrownBy(() -> store.apply(big)).as("still full").isInstanceOf(StoreException.class);

      store.pragma(true, "max_page_count = 1000000"); // room again
      assertThat(store.apply(big).recordStatuses()).hasSize(2_000).containsOnly(dev.tally.core.RecordStatus.RECORDED);
      assertThat(store.run(runId).orElseThrow().counters().recorded()).isEqualTo(2_000);
    }
  }
}

package dev.tally.store;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.RecordStatus;
import dev.tally.core.Verdict;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.FailureReasons;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatch.ExpiredLease;
import dev.tally.core.store.StoreBatch.ReleaseStatus;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationInfoService;
import org.flywaydb.core.api.MigrationState;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/**
 * The embedded {@link Store}: one SQLite file in WAL mode, written by one connection, read by another.
 *
 * <p><b>Durability.</b> The file runs with {@code journal_mode=WAL} and {@code synchronous=NORMAL}: a
 * commit is written to the WAL file (the operating system's page cache) before {@link #apply} returns, but
 * is not fsynced; fsync happens at checkpoints. So an acked result survives a {@code kill -9} of the
 * process (invariant I5), but the last commits before a power loss or kernel crash may be lost. That
 * trade buys the commit rate the group-commit writer needs. Surviving a power loss would take
 * {@code synchronous=FULL}, which Tally does not offer yet.
 *
 * <p><b>Writes</b> go through one connection under one lock, in {@code BEGIN IMMEDIATE} transactions, so
 * this process never meets {@code SQLITE_BUSY} from itself (SQLite admits one writer and does not queue
 * waiters fairly; see DESIGN.md section 5). {@code busy_timeout} covers other processes, such as
 * {@code tally status}, that open the file beside the coordinator. Prepared statements are made once per
 * connection and reused.
 *
 * <p><b>Reads</b> ({@link #run}, {@link #runs}, {@link #jobs}, {@link #attempts}) use a second,
 * query-only connection under its own lock. WAL gives that connection a consistent snapshot while the
 * writer commits, so a read never waits for a batch and a batch never waits for a read. Reads serialize
 * among themselves; they serve people ({@code tally status}, reports), not the hot path.
 *
 * <p><b>Fencing.</b> An outcome is {@link RecordStatus#RECORDED} only if its job is {@code leased} under
 * the very token the worker reports; it is {@link RecordStatus#DUPLICATE} if the job is {@code done}
 * under that token (a resend of the accepted result); anything else, including a job that does not
 * exist, is {@link RecordStatus#FENCED}. Tokens are a per-job counter in the jobs row, incremented in the
 * lease's own transaction, so every lease's token is greater than all before it, across restarts.
 *
 * <p><b>Time.</b> Batch times come from the caller ({@link StoreBatch#nowMillis()}); the only time this
 * class reads itself is a run's creation time, from the {@link Clock} given to {@link #open(Path, Clock)}.
 *
 * <p>Thread-safety: safe for use from many threads.
 */
public final class SqliteStore implements Store {

  /**
   * How long a statement waits for another process's lock before failing with {@code SQLITE_BUSY}. Long
   * enough to ride out a reader's checkpoint-blocking transaction or a status query; short enough that a
   * genuinely stuck file shows up as an error rather than a hang.
   */
  static final Duration BUSY_TIMEOUT = Duration.ofSeconds(10);

  /** Rows per JDBC batch when inserting a run's jobs: large enough to amortize calls, small enough to bound memory. */
  private static final int INSERT_CHUNK = 1_000;

  private static final String JOB_COLUMNS =
      "id, run_id, position, case_id, state, token, attempts, owner, worker, verdict, score, output_tail,"
          + " duration_millis, failure_reason";

  private static final String RUN_COLUMNS =
      "id, dataset, evaluator_kind, case_timeout_millis, max_attempts, created_at_millis, finished_at_millis,"
          + " state, total, passed, failed, errored, jobs_failed, duplicates_suppressed, stale_results_fenced,"
          + " redeliveries, dataset_digest";

  private final Path file;
  private final Clock clock;
  private final ReentrantLock writeLock = new ReentrantLock();
  private final ReentrantLock readLock = new ReentrantLock();
  private final AtomicLong commits = new AtomicLong();
  /** Run specs never change after creation, so the hot path (building assignments) reads them from here. */
  private final Map<Long, RunSpec> specs = new ConcurrentHashMap<>();

  private final Connection writer;
  private final Connection reader;
  private final WriteStatements w;
  private volatile boolean closed;

  /** Opened by {@link #openExisting}: every write is refused. */
  private final boolean readOnly;
  private final String storeId;

  private SqliteStore(Path file, Clock clock, Connection writer, Connection reader, boolean readOnly) throws SQLException {
    this.readOnly = readOnly;
    this.file = file;
    this.clock = clock;
    this.writer = writer;
    this.reader = reader;
    this.w = new WriteStatements(writer);
    try (Statement s = reader.createStatement(); ResultSet rs = s.executeQuery("SELECT store_id FROM store_info")) {
      if (!rs.next()) {
        throw new SQLException("the store has no identity (store_info is empty)");
      }
      this.storeId = rs.getString(1);
    }
  }

  /** {@inheritDoc} */
  @Override
  public String storeId() {
    return storeId;
  }

  /**
   * Opens (creating it if missing) the store file and brings its schema up to date, using the system
   * clock for run creation times.
   *
   * @param file the SQLite file; its parent directories are created if missing
   * @return an open store; close it when done
   * @throws StoreException if the file cannot be created or opened, or a migration fails
   */
  public static SqliteStore open(Path file) {
    return open(file, Clock.systemUTC());
  }

  /**
   * Opens (creating it if missing) the store file and brings its schema up to date with the Flyway
   * migrations in {@code db/migration/sqlite}.
   *
   * @param file the SQLite file; its parent directories are created if missing
   * @param clock the wall clock for run creation times
   * @return an open store; close it when done
   * @throws StoreException if the file cannot be created or opened, or a migration fails
   */
  public static SqliteStore open(Path file, Clock clock) {
    Path absolute = file.toAbsolutePath();
    String url = "jdbc:sqlite:" + absolute;
    try {
      Path parent = absolute.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
    } catch (IOException e) {
      throw new StoreException("open: cannot create the directory of " + absolute, e);
    }
    MigrationInfo current;
    try {
      Flyway flyway = flyway(url, false);
      flyway.migrate();
      current = flyway.info().current();
    } catch (RuntimeException e) {
      throw new StoreException("open: migrating the schema of " + absolute + " failed: " + rootMessage(e), e);
    }
    refuseNewerSchema(absolute, current);
    return connectBoth(absolute, url, clock);
  }

  /**
   * Opens a store file that already exists and whose schema is already up to date, for reading only:
   * for readers ({@code tally status}, a monitor, a test) that may look at the file while a coordinator
   * is creating, migrating or using it. Nothing is created, migrated or changed, not even the store's
   * side files: reading a store nobody has open needs no write access at all. Every write method of the
   * returned store throws {@link StoreException}.
   *
   * @param file the SQLite file of an existing store
   * @return an open, read-only store; close it when done
   * @throws StoreException if there is no such file; if its schema is missing or not at this version of
   *     Tally (being created right now, made by an older Tally and not yet migrated: {@link #open} migrates
   *     it, or made by a newer one); or if it cannot be opened
   */
  public static SqliteStore openExisting(Path file) {
    Path absolute = file.toAbsolutePath();
    if (!Files.isRegularFile(absolute)) {
      throw new StoreException("open: no store file at " + absolute);
    }
    // Read-only either way, so reading changes nothing: no checkpoint, no journal-mode switch. With no
    // -wal or -journal file beside it nobody has the store open, and it is read as immutable: no locks,
    // and no -wal or -shm is created (which would need a writable directory, and would belong to this
    // user, locking the store's owner out). Otherwise a coordinator has it open, is migrating it (Flyway
    // writes through a rollback journal), or was killed with it open: read it under SQLite's locks.
    String name = absolute.getFileName().toString();
    boolean inUse = Files.exists(absolute.resolveSibling(name + "-wal"))
        || Files.exists(absolute.resolveSibling(name + "-journal"));
    String url = "jdbc:sqlite:" + absolute.toUri() + (inUse ? "?mode=ro" : "?immutable=1");
    MigrationInfoService info;
    try {
      info = flyway(url, true).info();
    } catch (RuntimeException e) {
      throw new StoreException("open: cannot read the schema version of " + absolute + ": " + rootMessage(e), e);
    }
    MigrationInfo current = info.current();
    refuseNewerSchema(absolute, current);
    MigrationInfo[] pending = info.pending();
    if (current == null || pending.length > 0) {
      throw new StoreException("open: the schema of " + absolute + " is "
          + (current == null ? "missing" : "at version " + current.getVersion())
          + (pending.length > 0 ? ", this Tally expects version " + pending[pending.length - 1].getVersion() : "")
          + " (a coordinator may be creating it right now; tally run or tally resume migrates an older one)");
    }
    Connection first = null;
    Connection second = null;
    try {
      first = connectReadOnly(url);
      second = connectReadOnly(url);
      return new SqliteStore(absolute, Clock.systemUTC(), first, second, true);
    } catch (SQLException e) {
      closeQuietly(first);
      closeQuietly(second);
      throw new StoreException("open: cannot open " + absolute + " for reading: " + rootMessage(e), e);
    }
  }

  /**
   * A store whose schema has a migration this Tally does not know was made (or migrated) by a newer
   * Tally: its tables may mean things this version would get wrong, so it is refused, not guessed at.
   */
  private static void refuseNewerSchema(Path absolute, MigrationInfo current) {
    if (current != null && current.getState() == MigrationState.FUTURE_SUCCESS) {
      throw new StoreException("open: " + absolute + " has schema version " + current.getVersion()
          + ", from a newer Tally than this one; use that version");
    }
  }

  /** The innermost cause's message: what SQLite or the file system said. */
  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
  }

  private static Connection connectReadOnly(String url) throws SQLException {
    return config(true).createConnection(url); // SQLITE_OPEN_READONLY: SQLite itself refuses every write
  }

  /** Connection settings for Flyway and the readers: the busy timeout, and read-only or not. */
  private static SQLiteConfig config(boolean readOnly) {
    SQLiteConfig config = new SQLiteConfig();
    config.setReadOnly(readOnly);
    config.setBusyTimeout((int) BUSY_TIMEOUT.toMillis());
    return config;
  }

  /**
   * Flyway over this file's migrations. Its connections wait out another process's lock (busy timeout)
   * instead of failing at once, e.g. while a reader's snapshot is being set up.
   */
  private static Flyway flyway(String url, boolean readOnly) {
    SQLiteDataSource dataSource = new SQLiteDataSource(config(readOnly));
    dataSource.setUrl(url);
    return Flyway.configure()
        .dataSource(dataSource)
        .locations("classpath:db/migration/sqlite")
        .load();
  }

  private static SqliteStore connectBoth(Path absolute, String url, Clock clock) {
    Connection writer = null;
    Connection reader = null;
    try {
      writer = connect(url, false);
      reader = connect(url, true);
      return new SqliteStore(absolute, clock, writer, reader, false);
    } catch (SQLException e) {
      closeQuietly(writer);
      closeQuietly(reader);
      throw new StoreException("open: cannot open " + absolute + ": " + rootMessage(e), e);
    }
  }

  private static Connection connect(String url, boolean queryOnly) throws SQLException {
    // The connection stays in JDBC auto-commit mode and transactions are begun explicitly: the driver's
    // own non-auto-commit mode opens the next transaction right after each commit, which would hold
    // SQLite's write lock between batches and lock every other process out of writing.
    Connection c = DriverManager.getConnection(url);
    try (Statement s = c.createStatement()) {
      s.execute("PRAGMA busy_timeout = " + BUSY_TIMEOUT.toMillis());
      s.execute("PRAGMA journal_mode = WAL");
      s.execute("PRAGMA synchronous = NORMAL");
      s.execute("PRAGMA foreign_keys = ON");
      if (queryOnly) {
        s.execute("PRAGMA query_only = ON");
      }
    } catch (SQLException e) {
      closeQuietly(c);
      throw e;
    }
    return c;
  }

  // ---------------------------------------------------------------------------------------------
  // createRun

  /**
   * {@inheritDoc}
   *
   * <p>Also refuses two cases with one position ({@link IllegalArgumentException}, nothing written).
   * Inserts are batched in one transaction (a 200,000-case run took 1.4 s on a 2-core machine). A run with
   * no cases is finished at creation. The case timeout is stored in whole milliseconds.
   */
  @Override
  public long createRun(RunSpec spec, List<CaseRecord> cases) {
    Set<String> ids = new HashSet<>(cases.size() * 2);
    Set<Integer> positions = new HashSet<>(cases.size() * 2);
    for (CaseRecord c : cases) {
      if (!ids.add(c.caseId())) {
        throw new IllegalArgumentException("cases must have unique ids, but id '" + c.caseId() + "' appears twice");
      }
      if (!positions.add(c.position())) {
        throw new IllegalArgumentException(
            "cases must have unique positions, but position " + c.position() + " appears twice");
      }
    }
    writeLock.lock();
    try {
      ensureWritable("createRun");
      long now = clock.millis();
      try {
        begin();
        long runId;
        PreparedStatement ins = w.insertRun;
        ins.setString(1, spec.dataset());
        ins.setString(2, spec.evaluator().kind());
        ins.setLong(3, spec.evaluator().caseTimeout().toMillis());
        ins.setInt(4, spec.maxAttempts());
        ins.setLong(5, now);
        ins.setLong(6, cases.isEmpty() ? now : 0L);
        ins.setString(7, cases.isEmpty() ? "finished" : "active");
        ins.setLong(8, cases.size());
        ins.setString(9, spec.datasetDigest());
        try (ResultSet rs = ins.executeQuery()) {
          rs.next();
          runId = rs.getLong(1);
        }
        for (Map.Entry<String, String> o : spec.evaluator().options().entrySet()) {
          w.insertOption.setLong(1, runId);
          w.insertOption.setString(2, o.getKey());
          w.insertOption.setString(3, o.getValue());
          w.insertOption.addBatch();
        }
        w.insertOption.executeBatch();
        int pending = 0;
        for (CaseRecord c : cases) {
          w.insertJob.setLong(1, runId);
          w.insertJob.setInt(2, c.position());
          w.insertJob.setString(3, c.caseId());
          w.insertJob.setString(4, c.caseJson());
          w.insertJob.addBatch();
          if (++pending == INSERT_CHUNK) {
            w.insertJob.executeBatch();
            pending = 0;
          }
        }
        if (pending > 0) {
          w.insertJob.executeBatch();
        }
        w.commit.execute();
        commits.incrementAndGet();
        // The spec is not cached from here: the first lease loads it as stored (timeout in whole
        // milliseconds), so every reader sees the same spec whether or not this process created the run.
        return runId;
      } catch (SQLException | RuntimeException | Error e) {
        throw abort(e, "createRun: creating a run of " + cases.size() + " cases from '" + spec.dataset() + "' in " + file
                  + " failed; nothing was written");
      }
    } finally {
      writeLock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // apply

  /**
   * {@inheritDoc}
   *
   * <p>Order inside the transaction: records, then releases, then leases. Two requests for one job in one
   * batch behave as if applied one after the other. A record for a job id that does not exist is
   * {@link RecordStatus#FENCED} and counts against no run; a release of one is
   * {@link ReleaseStatus#STALE}. A release is applied as asked: the store does not turn a non-terminal
   * release into a terminal one when the job has used its run's attempts (the scheduler decides that).
   */
  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    writeLock.lock();
    try {
      ensureWritable("apply");
      try {
        begin();
        StoreBatchResult result = applyInTransaction(batch);
        w.commit.execute();
        if (!batch.isEmpty()) {
          commits.incrementAndGet();
        }
        return result;
      } catch (SQLException | RuntimeException | Error e) {
        throw abort(e, "apply: a batch of " + batch.records().size() + " records, " + batch.releases().size()
                  + " releases and " + batch.leases().size() + " lease requests failed in " + file
                  + "; none of it was applied");
      }
    } finally {
      writeLock.unlock();
    }
  }

  /** Counter changes for one run, summed over a batch so each touched run is written once. */
  private static final class RunDelta {
    long passed;
    long failed;
    long errored;
    long jobsFailed;
    long duplicates;
    long fenced;
    long redeliveries;

    boolean isZero() {
      return (passed | failed | errored | jobsFailed | duplicates | fenced | redeliveries) == 0;
    }
  }

  private StoreBatchResult applyInTransaction(StoreBatch batch) throws SQLException {
    long now = batch.nowMillis();
    Map<Long, RunDelta> touched = new LinkedHashMap<>();

    List<RecordStatus> recordStatuses = new ArrayList<>(batch.records().size());
    for (RecordRequest r : batch.records()) {
      recordStatuses.add(record(r, now, touched));
    }

    List<ReleaseStatus> releaseStatuses = new ArrayList<>(batch.releases().size());
    for (ReleaseRequest r : batch.releases()) {
      releaseStatuses.add(release(r, now, touched));
    }
    w.insertAttempt.executeBatch();

    List<List<Assignment>> leases = new ArrayList<>(batch.leases().size());
    boolean exhausted = false;
    for (LeaseRequest l : batch.leases()) {
      // Eligibility depends only on now, so once one request comes up short the rest would find nothing.
      List<Assignment> got = exhausted ? List.of() : lease(l, batch.runIds(), now, touched);
      exhausted |= got.size() < l.maxJobs();
      leases.add(got);
    }

    List<RenewResult> renewals = new ArrayList<>(batch.renewals().size());
    for (RenewRequest r : batch.renewals()) {
      renewals.add(renew(r));
    }

    List<ExpiredLease> expired = batch.sweepExpiredLeases() ? sweepExpired(batch.runIds(), now, touched) : List.of();

    Map<Long, RunCounters> counters = new HashMap<>();
    for (Map.Entry<Long, RunDelta> e : touched.entrySet()) {
      counters.put(e.getKey(), writeCounters(e.getKey(), e.getValue(), now));
    }

    long nextNotBefore = Long.MAX_VALUE;
    boolean pendingLeft = false;
    PreparedStatement q = w.pendingSummary;
    for (long runId : batch.runIds()) {
      q.setLong(1, runId);
      q.setLong(2, now);
      q.setLong(3, runId);
      q.setLong(4, now);
      try (ResultSet rs = q.executeQuery()) {
        rs.next();
        long min = rs.getLong(1);
        if (!rs.wasNull()) {
          nextNotBefore = Math.min(nextNotBefore, min);
        }
        pendingLeft |= rs.getBoolean(2);
      }
    }
    return new StoreBatchResult(
        recordStatuses, releaseStatuses, leases, counters, nextNotBefore, pendingLeft, renewals, expired);
  }

  private RecordStatus record(RecordRequest r, long now, Map<Long, RunDelta> touched) throws SQLException {
    Outcome o = r.outcome();
    PreparedStatement s = w.recordOutcome;
    s.setString(1, o.verdict().wireName());
    if (o.score() == null) {
      s.setNull(2, Types.REAL);
    } else {
      s.setDouble(2, o.score());
    }
    s.setString(3, o.outputTail());
    s.setLong(4, o.durationMillis());
    s.setString(5, r.worker());
    s.setLong(6, r.jobId());
    s.setLong(7, r.token());
    try (ResultSet rs = s.executeQuery()) {
      if (rs.next()) {
        long runId = rs.getLong(1);
        long startedAt = rs.getLong(2);
        RunDelta d = touched.computeIfAbsent(runId, k -> new RunDelta());
        switch (o.verdict()) {
          case PASS -> d.passed++;
          case FAIL -> d.failed++;
          case ERROR -> d.errored++;
        }
        addAttempt(r.jobId(), r.token(), r.worker(), startedAt, now, "recorded", "");
        return RecordStatus.RECORDED;
      }
    }
    // Not accepted: find out whether this is the accepted holder's resend or a stale writer.
    PreparedStatement j = w.selectJobForCheck;
    j.setLong(1, r.jobId());
    try (ResultSet rs = j.executeQuery()) {
      if (!rs.next()) {
        return RecordStatus.FENCED;
      }
      long runId = rs.getLong(1);
      String state = rs.getString(2);
      long token = rs.getLong(3);
      RunDelta d = touched.computeIfAbsent(runId, k -> new RunDelta());
      if ("done".equals(state) && token == r.token()) {
        d.duplicates++;
        return RecordStatus.DUPLICATE;
      }
      d.fenced++;
      return RecordStatus.FENCED;
    }
  }

  private ReleaseStatus release(ReleaseRequest r, long now, Map<Long, RunDelta> touched) throws SQLException {
    long runId;
    String owner;
    long startedAt;
    int attempts;
    int lostStreak;
    boolean poison;
    PreparedStatement j = w.selectJobForCheck;
    j.setLong(1, r.jobId());
    try (ResultSet rs = j.executeQuery()) {
      if (!rs.next()) {
        return ReleaseStatus.STALE;
      }
      runId = rs.getLong(1);
      RunDelta d = touched.computeIfAbsent(runId, k -> new RunDelta());
      if (!"leased".equals(rs.getString(2)) || rs.getLong(3) != r.token()) {
        return ReleaseStatus.STALE;
      }
      owner = rs.getString(4);
      startedAt = rs.getLong(5);
      attempts = rs.getInt(6);
      lostStreak = rs.getInt(7);
      if (r.diedRunning()) {
        lostStreak++;
      } else if (r.failure().kind() != InfraFailure.Kind.WORKER_LOST) {
        lostStreak = 0;
      }
      poison = r.poisonLimit() > 0 && lostStreak >= r.poisonLimit();
      if (r.terminal() || poison) {
        d.jobsFailed++;
      } else {
        d.redeliveries++;
      }
    }
    InfraFailure f = r.failure();
    String ending = FailureReasons.ending(f.kind());
    if (r.terminal() || poison) {
      PreparedStatement s = w.failJob;
      s.setString(1, poison
          ? FailureReasons.poison(lostStreak, f.detail())
          : FailureReasons.outOfAttempts(attempts, ending, f.detail()));
      s.setInt(2, lostStreak);
      s.setLong(3, r.jobId());
      s.executeUpdate();
    } else {
      PreparedStatement s = w.requeueJob;
      s.setLong(1, r.notBeforeMillis());
      s.setInt(2, lostStreak);
      s.setLong(3, r.jobId());
      s.executeUpdate();
    }
    addAttempt(r.jobId(), r.token(), owner, startedAt, now, ending, f.detail());
    return r.terminal() || poison ? ReleaseStatus.FAILED : ReleaseStatus.RELEASED;
  }

  private void addAttempt(long jobId, long token, String worker, long startedAt, long endedAt, String ending,
      String detail) throws SQLException {
    PreparedStatement s = w.insertAttempt;
    s.setLong(1, jobId);
    s.setLong(2, token);
    s.setString(3, worker);
    s.setLong(4, startedAt);
    s.setLong(5, endedAt);
    s.setString(6, ending);
    s.setString(7, detail);
    s.addBatch();
  }

  private record Leased(long jobId, long runId, int position, long token, int attempt, String caseId,
      String caseJson) {}

  private static final Comparator<Leased> DATASET_ORDER =
      Comparator.comparingLong(Leased::runId).thenComparingInt(Leased::position);

  private List<Assignment> lease(LeaseRequest l, List<Long> runIds, long now, Map<Long, RunDelta> touched)
      throws SQLException {
    PreparedStatement s = w.leaseJobs;
    List<Leased> rows = new ArrayList<>(Math.min(l.maxJobs(), 1024));
    for (long runId : runIds) {
      int wanted = l.maxJobs() - rows.size();
      if (wanted <= 0) {
        break;
      }
      int before = rows.size();
      s.setString(1, l.worker());
      s.setLong(2, now);
      s.setLong(3, l.leaseExpiryMillis());
      s.setLong(4, runId);
      s.setLong(5, now);
      s.setInt(6, wanted);
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          rows.add(new Leased(rs.getLong(1), rs.getLong(2), rs.getInt(3), rs.getLong(4), rs.getInt(5),
              rs.getString(6), rs.getString(7)));
        }
      }
      // SQLite does not promise RETURNING rows in any order; callers get run, then dataset order.
      rows.subList(before, rows.size()).sort(DATASET_ORDER);
    }
    List<Assignment> out = new ArrayList<>(rows.size());
    for (Leased r : rows) {
      touched.computeIfAbsent(r.runId(), k -> new RunDelta());
      RunSpec spec = spec(r.runId(), writer);
      out.add(new Assignment(r.jobId(), r.runId(), r.token(), r.attempt(), r.caseId(), r.caseJson(),
          spec.evaluator()));
    }
    return out;
  }

  private RenewResult renew(RenewRequest r) throws SQLException {
    PreparedStatement s = w.renewLease;
    s.setLong(1, r.leaseExpiryMillis());
    s.setLong(2, r.jobId());
    s.setLong(3, r.token());
    try (ResultSet rs = s.executeQuery()) {
      if (rs.next()) {
        return new RenewResult(true, rs.getLong(1), rs.getInt(2));
      }
    }
    return new RenewResult(false, 0, 0);
  }

  /** Ends every expired lease of the given runs, through the same path as a release. */
  private List<ExpiredLease> sweepExpired(List<Long> runIds, long now, Map<Long, RunDelta> touched) throws SQLException {
    List<ExpiredLease> expired = new ArrayList<>();
    for (long runId : runIds) {
      List<long[]> found = new ArrayList<>();
      PreparedStatement q = w.selectExpiredLeases;
      q.setLong(1, runId);
      q.setLong(2, now);
      try (ResultSet rs = q.executeQuery()) {
        while (rs.next()) {
          found.add(new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)});
        }
      }
      if (found.isEmpty()) {
        continue; // nothing to end: and a run id that does not exist has no spec to read
      }
      int maxAttempts = spec(runId, writer).maxAttempts();
      for (long[] f : found) {
        boolean terminal = f[2] >= maxAttempts;
        InfraFailure why = new InfraFailure(InfraFailure.Kind.LEASE_EXPIRED,
            "lease expired " + (now - f[3]) + " ms ago without being renewed");
        ReleaseStatus status = release(new ReleaseRequest(f[0], f[1], why, now, terminal), now, touched);
        if (status != ReleaseStatus.STALE) {
          expired.add(new ExpiredLease(f[0], f[1], runId, status == ReleaseStatus.FAILED));
        }
      }
    }
    w.insertAttempt.executeBatch();
    return expired;
  }

  private RunCounters writeCounters(long runId, RunDelta d, long now) throws SQLException {
    PreparedStatement s;
    if (d.isZero()) {
      s = w.selectCounters;
      s.setLong(1, runId);
    } else {
      long ended = d.passed + d.failed + d.errored + d.jobsFailed;
      s = w.addCounters;
      s.setLong(1, d.passed);
      s.setLong(2, d.failed);
      s.setLong(3, d.errored);
      s.setLong(4, d.jobsFailed);
      s.setLong(5, d.duplicates);
      s.setLong(6, d.fenced);
      s.setLong(7, d.redeliveries);
      s.setLong(8, ended);
      s.setLong(9, ended);
      s.setLong(10, now);
      s.setLong(11, runId);
    }
    try (ResultSet rs = s.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException("run " + runId + " vanished while its jobs were being changed");
      }
      return counters(rs, 1);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // releaseLeases

  /** {@inheritDoc} */
  @Override
  public int releaseLeases(long runId, long nowMillis) {
    writeLock.lock();
    try {
      ensureWritable("releaseLeases");
      try (Statement s = writer.createStatement()) {
        begin();
        String detail = "the coordinator restarted while the attempt was leased";
        int released;
        try (PreparedStatement p = writer.prepareStatement(
            "INSERT INTO attempts (job_id, token, worker, started_at_millis, ended_at_millis, ending, detail)"
                + " SELECT id, token, owner, leased_at_millis, ?, 'coordinator_restarted', ? FROM jobs"
                + " WHERE run_id = ? AND state = 'leased'")) {
          p.setLong(1, nowMillis);
          p.setString(2, detail);
          p.setLong(3, runId);
          released = p.executeUpdate();
        }
        if (released > 0) {
          // Counters first, while the jobs still say which were leased.
          try (PreparedStatement p = writer.prepareStatement(
              "UPDATE runs SET"
                  + " redeliveries = redeliveries + (SELECT count(*) FROM jobs j WHERE j.run_id = runs.id"
                  + "   AND j.state = 'leased' AND j.attempts < runs.max_attempts),"
                  + " jobs_failed = jobs_failed + (SELECT count(*) FROM jobs j WHERE j.run_id = runs.id"
                  + "   AND j.state = 'leased' AND j.attempts >= runs.max_attempts)"
                  + " WHERE id = ?")) {
            p.setLong(1, runId);
            p.executeUpdate();
          }
          try (PreparedStatement p = writer.prepareStatement(
              "UPDATE jobs SET state = 'failed', owner = NULL, lease_expiry_millis = NULL,"
                  + " failure_reason = 'ended failed after ' || attempts || ' attempts; the last ended with"
                  + " coordinator_restarted: ' || ?"
                  + " WHERE run_id = ? AND state = 'leased'"
                  + " AND attempts >= (SELECT max_attempts FROM runs WHERE runs.id = jobs.run_id)")) {
            p.setString(1, detail);
            p.setLong(2, runId);
            p.executeUpdate();
          }
          try (PreparedStatement p = writer.prepareStatement(
              "UPDATE jobs SET state = 'pending', owner = NULL, lease_expiry_millis = NULL, not_before_millis = ?"
                  + " WHERE run_id = ? AND state = 'leased'")) {
            p.setLong(1, nowMillis);
            p.setLong(2, runId);
            p.executeUpdate();
          }
          try (PreparedStatement p = writer.prepareStatement(
              "UPDATE runs SET state = 'finished', finished_at_millis = ?"
                  + " WHERE id = ? AND state = 'active' AND passed + failed + errored + jobs_failed >= total")) {
            p.setLong(1, nowMillis);
            p.setLong(2, runId);
            p.executeUpdate();
          }
        }
        w.commit.execute();
        commits.incrementAndGet();
        return released;
      } catch (SQLException | RuntimeException | Error e) {
        throw abort(e, "releaseLeases: releasing the leases of run " + runId + " in " + file + " failed; nothing changed");
      }
    } finally {
      writeLock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public void saveWorkerStatuses(List<WorkerStatus> statuses) {
    if (statuses.isEmpty()) {
      return;
    }
    writeLock.lock();
    try {
      ensureWritable("saveWorkerStatuses");
      try {
        begin();
        try (PreparedStatement p = writer.prepareStatement(
            "INSERT OR REPLACE INTO workers (worker_id, name, suspicion, accepting_work, ejected_until_millis,"
                + " ejection_reason, times_ejected, in_flight, reported_at_millis, left_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
          for (WorkerStatus w : statuses) {
            p.setString(1, w.workerId());
            p.setString(2, w.name());
            p.setString(3, w.suspicion());
            p.setInt(4, w.acceptingWork() ? 1 : 0);
            p.setLong(5, w.ejectedUntilMillis());
            p.setString(6, w.ejectionReason());
            p.setInt(7, w.timesEjected());
            p.setInt(8, w.inFlight());
            p.setLong(9, w.reportedAtMillis());
            p.setString(10, w.leftReason());
            p.addBatch();
          }
          p.executeBatch();
        }
        w.commit.execute();
        commits.incrementAndGet();
      } catch (SQLException | RuntimeException | Error e) {
        throw abort(e, "saveWorkerStatuses: saving " + statuses.size() + " worker reports in " + file + " failed");
      }
    } finally {
      writeLock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public List<WorkerStatus> workerStatuses() {
    return read("workerStatuses", () -> {
      List<WorkerStatus> out = new ArrayList<>();
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT worker_id, name, suspicion, accepting_work, ejected_until_millis, ejection_reason, times_ejected,"
              + " in_flight, reported_at_millis, left_reason FROM workers ORDER BY name, worker_id");
          ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          out.add(new WorkerStatus(rs.getString(1), rs.getString(2), rs.getString(3), rs.getInt(4) != 0, rs.getLong(5),
              rs.getString(6), rs.getInt(7), rs.getInt(8), rs.getLong(9), rs.getString(10)));
        }
      }
      return out;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // reads

  /** {@inheritDoc} */
  @Override
  public Optional<RunView> run(long runId) {
    return read("run", () -> {
      try (PreparedStatement s = reader.prepareStatement("SELECT " + RUN_COLUMNS + " FROM runs WHERE id = ?")) {
        s.setLong(1, runId);
        try (ResultSet rs = s.executeQuery()) {
          return rs.next() ? Optional.of(runView(rs)) : Optional.<RunView>empty();
        }
      }
    });
  }

  /** {@inheritDoc} */
  @Override
  public List<RunView> runs() {
    return read("runs", () -> {
      List<RunView> out = new ArrayList<>();
      try (PreparedStatement s = reader.prepareStatement("SELECT " + RUN_COLUMNS + " FROM runs ORDER BY id");
          ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          out.add(runView(rs));
        }
      }
      return out;
    });
  }

  /** {@inheritDoc} */
  @Override
  public List<JobView> jobs(long runId) {
    return read("jobs", () -> {
      List<JobView> out = new ArrayList<>();
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT " + JOB_COLUMNS + " FROM jobs WHERE run_id = ? ORDER BY position")) {
        s.setLong(1, runId);
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            out.add(jobView(rs));
          }
        }
      }
      return out;
    });
  }

  /** {@inheritDoc} */
  @Override
  public List<AttemptView> attempts(long runId) {
    return read("attempts", () -> {
      List<AttemptView> out = new ArrayList<>();
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT a.job_id, a.token, a.worker, a.started_at_millis, a.ended_at_millis, a.ending, a.detail"
              + " FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.run_id = ? ORDER BY a.job_id, a.token")) {
        s.setLong(1, runId);
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            out.add(new AttemptView(rs.getLong(1), rs.getLong(2), rs.getString(3), rs.getLong(4), rs.getLong(5),
                rs.getString(6), rs.getString(7)));
          }
        }
      }
      return out;
    });
  }

  /** {@inheritDoc} Reads that only look (an empty batch) are not counted. */
  @Override
  public long commits() {
    return commits.get();
  }

  /**
   * Closes both connections. Idempotent; waits for a write or read in progress to finish. Every call after
   * this one fails with {@link StoreException}.
   *
   * @throws StoreException if a connection fails to close
   */
  @Override
  public void close() {
    writeLock.lock();
    readLock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      SQLException first = null;
      for (Connection c : new Connection[] {writer, reader}) {
        try {
          c.close();
        } catch (SQLException e) {
          if (first == null) {
            first = e;
          }
        }
      }
      if (first != null) {
        throw new StoreException("close: closing " + file + " failed", first);
      }
    } finally {
      readLock.unlock();
      writeLock.unlock();
    }
  }

  /** The store file, absolute. */
  public Path file() {
    return file;
  }

  /** Reads a PRAGMA of the write or the read connection, for tests of the connection settings. */
  String pragma(boolean writeConnection, String name) {
    ReentrantLock lock = writeConnection ? writeLock : readLock;
    lock.lock();
    try (Statement s = (writeConnection ? writer : reader).createStatement();
        ResultSet rs = s.executeQuery("PRAGMA " + name)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (SQLException e) {
      throw new StoreException("pragma: reading " + name + " failed", e);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public String toString() {
    return "SqliteStore[" + file + "]";
  }

  // ---------------------------------------------------------------------------------------------
  // helpers

  @FunctionalInterface
  private interface SqlWork<T> {
    T run() throws SQLException;
  }

  private <T> T read(String operation, SqlWork<T> work) {
    readLock.lock();
    try {
      ensureOpen(operation);
      try (Statement s = reader.createStatement()) {
        // One snapshot for the whole read, ended at once so an idle reader never holds back checkpoints.
        s.execute("BEGIN");
        try {
          return work.run();
        } finally {
          s.execute("COMMIT");
        }
      } catch (SQLException e) {
        throw new StoreException(operation + ": reading " + file + " failed", e);
      }
    } finally {
      readLock.unlock();
    }
  }

  private void ensureOpen(String operation) {
    if (closed) {
      throw new StoreException(operation + ": the store " + file + " is closed");
    }
  }

  private void ensureWritable(String operation) {
    ensureOpen(operation);
    if (readOnly) {
      throw new StoreException(operation + ": the store " + file + " was opened for reading only (openExisting)");
    }
  }

  /**
   * Begins a write transaction. IMMEDIATE takes the write lock at once: a deferred transaction that read
   * first could fail with {@code SQLITE_BUSY_SNAPSHOT} at its first write without calling the busy handler.
   */
  private void begin() throws SQLException {
    w.begin.execute();
  }

  /**
   * Rolls the write transaction back after {@code e} and returns what to throw: a {@link StoreException}
   * with {@code message} for a database error, {@code e} itself for anything unchecked.
   */
  private RuntimeException abort(Throwable e, String message) {
    clearBatches();
    rollback(e);
    if (e instanceof RuntimeException unchecked) {
      return unchecked;
    }
    if (e instanceof Error error) {
      throw error;
    }
    return new StoreException(message, e);
  }

  private void rollback(Throwable cause) {
    try {
      if (!writer.isClosed()) {
        w.rollback.execute();
      }
    } catch (SQLException e) {
      // SQLite has already rolled back after some errors (I/O, full disk) and then refuses ROLLBACK.
      cause.addSuppressed(e);
    }
  }

  private void clearBatches() {
    for (PreparedStatement s : new PreparedStatement[] {w.insertAttempt, w.insertJob, w.insertOption}) {
      try {
        s.clearBatch();
      } catch (SQLException ignored) {
        // Only pending parameters are lost, which is the point.
      }
    }
  }

  private RunView runView(ResultSet rs) throws SQLException {
    long runId = rs.getLong(1);
    RunSpec spec = specs.get(runId);
    if (spec == null) {
      spec = new RunSpec(rs.getString(2),
          new EvaluatorSpec(rs.getString(3), options(runId, reader), Duration.ofMillis(rs.getLong(4))),
          rs.getInt(5), rs.getString(17));
      specs.putIfAbsent(runId, spec);
    }
    return new RunView(runId, spec, "finished".equals(rs.getString(8)), rs.getLong(6), rs.getLong(7),
        counters(rs, 9));
  }

  private static RunCounters counters(ResultSet rs, int from) throws SQLException {
    return new RunCounters(rs.getLong(from), rs.getLong(from + 1), rs.getLong(from + 2), rs.getLong(from + 3),
        rs.getLong(from + 4), rs.getLong(from + 5), rs.getLong(from + 6), rs.getLong(from + 7));
  }

  private static JobView jobView(ResultSet rs) throws SQLException {
    JobState state = JobState.valueOf(rs.getString(5).toUpperCase(Locale.ROOT));
    Outcome outcome = null;
    if (state == JobState.DONE) {
      double score = rs.getDouble(11);
      Double boxed = rs.wasNull() ? null : score;
      outcome = new Outcome(Verdict.parse(rs.getString(10)), boxed, rs.getString(12), rs.getLong(13));
    }
    String worker = switch (state) {
      case LEASED -> rs.getString(8);
      case DONE -> rs.getString(9);
      default -> null;
    };
    return new JobView(rs.getLong(1), rs.getLong(2), rs.getInt(3), rs.getString(4), state, rs.getLong(6),
        rs.getInt(7), worker, outcome, state == JobState.FAILED ? rs.getString(14) : null);
  }

  /** The run's spec, from the cache or (once per run per process) from the given connection. */
  private RunSpec spec(long runId, Connection c) throws SQLException {
    RunSpec cached = specs.get(runId);
    if (cached != null) {
      return cached;
    }
    try (PreparedStatement s = c.prepareStatement(
        "SELECT dataset, evaluator_kind, case_timeout_millis, max_attempts, dataset_digest FROM runs WHERE id = ?")) {
      s.setLong(1, runId);
      try (ResultSet rs = s.executeQuery()) {
        if (!rs.next()) {
          throw new SQLException("run " + runId + " has jobs but no row in runs");
        }
        RunSpec spec = new RunSpec(rs.getString(1),
            new EvaluatorSpec(rs.getString(2), options(runId, c), Duration.ofMillis(rs.getLong(3))), rs.getInt(4),
            rs.getString(5));
        specs.putIfAbsent(runId, spec);
        return spec;
      }
    }
  }

  private static Map<String, String> options(long runId, Connection c) throws SQLException {
    Map<String, String> out = new HashMap<>();
    try (PreparedStatement s = c.prepareStatement("SELECT key, value FROM run_options WHERE run_id = ?")) {
      s.setLong(1, runId);
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getString(1), rs.getString(2));
        }
      }
    }
    return out;
  }

  private static void closeQuietly(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (SQLException ignored) {
        // Already failing; the first error is the one worth reporting.
      }
    }
  }

  /** The write connection's statements, prepared once: the hot path never parses SQL. */
  private static final class WriteStatements {
    final PreparedStatement insertRun;
    final PreparedStatement insertOption;
    final PreparedStatement insertJob;
    final PreparedStatement recordOutcome;
    final PreparedStatement selectJobForCheck;
    final PreparedStatement failJob;
    final PreparedStatement requeueJob;
    final PreparedStatement insertAttempt;
    final PreparedStatement leaseJobs;
    final PreparedStatement addCounters;
    final PreparedStatement selectCounters;
    final PreparedStatement pendingSummary;
    final PreparedStatement renewLease;
    final PreparedStatement selectExpiredLeases;
    final PreparedStatement begin;
    final PreparedStatement commit;
    final PreparedStatement rollback;

    WriteStatements(Connection c) throws SQLException {
      begin = c.prepareStatement("BEGIN IMMEDIATE");
      commit = c.prepareStatement("COMMIT");
      rollback = c.prepareStatement("ROLLBACK");
      insertRun = c.prepareStatement(
          "INSERT INTO runs (dataset, evaluator_kind, case_timeout_millis, max_attempts, created_at_millis,"
              + " finished_at_millis, state, total, dataset_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
      insertOption = c.prepareStatement("INSERT INTO run_options (run_id, key, value) VALUES (?, ?, ?)");
      insertJob = c.prepareStatement(
          "INSERT INTO jobs (run_id, position, case_id, case_json) VALUES (?, ?, ?, ?)");
      // The fencing check and the write are one statement: accepted only under the current lease.
      recordOutcome = c.prepareStatement(
          "UPDATE jobs SET state = 'done', verdict = ?, score = ?, output_tail = ?, duration_millis = ?,"
              + " worker = ?, owner = NULL, lease_expiry_millis = NULL"
              + " WHERE id = ? AND state = 'leased' AND token = ?"
              + " RETURNING run_id, leased_at_millis");
      selectJobForCheck = c.prepareStatement(
          "SELECT run_id, state, token, owner, leased_at_millis, attempts, lost_streak FROM jobs WHERE id = ?");
      failJob = c.prepareStatement(
          "UPDATE jobs SET state = 'failed', owner = NULL, lease_expiry_millis = NULL, failure_reason = ?,"
              + " lost_streak = ? WHERE id = ?");
      requeueJob = c.prepareStatement(
          "UPDATE jobs SET state = 'pending', owner = NULL, lease_expiry_millis = NULL, not_before_millis = ?,"
              + " lost_streak = ? WHERE id = ?");
      insertAttempt = c.prepareStatement(
          "INSERT INTO attempts (job_id, token, worker, started_at_millis, ended_at_millis, ending, detail)"
              + " VALUES (?, ?, ?, ?, ?, ?, ?)");
      // One run at a time, walking that run's part of the partial index in dataset order.
      leaseJobs = c.prepareStatement(
          "UPDATE jobs SET state = 'leased', token = token + 1, attempts = attempts + 1, owner = ?,"
              + " leased_at_millis = ?, lease_expiry_millis = ?"
              + " WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_pending_in_order"
              + "   WHERE run_id = ? AND state = 'pending' AND not_before_millis <= ? ORDER BY position LIMIT ?)"
              + " RETURNING id, run_id, position, token, attempts, case_id, case_json");
      addCounters = c.prepareStatement(
          "UPDATE runs SET passed = passed + ?, failed = failed + ?, errored = errored + ?,"
              + " jobs_failed = jobs_failed + ?, duplicates_suppressed = duplicates_suppressed + ?,"
              + " stale_results_fenced = stale_results_fenced + ?, redeliveries = redeliveries + ?,"
              // SET expressions see the old row: old ended + this batch's ended.
              + " state = CASE WHEN state = 'active' AND passed + failed + errored + jobs_failed + ? >= total"
              + "   THEN 'finished' ELSE state END,"
              + " finished_at_millis = CASE WHEN state = 'active'"
              + "   AND passed + failed + errored + jobs_failed + ? >= total THEN ? ELSE finished_at_millis END"
              + " WHERE id = ?"
              + " RETURNING total, passed, failed, errored, jobs_failed, duplicates_suppressed,"
              + " stale_results_fenced, redeliveries");
      selectCounters = c.prepareStatement(
          "SELECT total, passed, failed, errored, jobs_failed, duplicates_suppressed, stale_results_fenced,"
              + " redeliveries FROM runs WHERE id = ?");
      renewLease = c.prepareStatement(
          "UPDATE jobs SET lease_expiry_millis = ? WHERE id = ? AND token = ? AND state = 'leased'"
              + " RETURNING run_id, attempts");
      selectExpiredLeases = c.prepareStatement(
          "SELECT id, token, attempts, lease_expiry_millis FROM jobs INDEXED BY jobs_leased_by_run_expiry"
              + " WHERE run_id = ? AND state = 'leased' AND lease_expiry_millis < ?");
      // Two seeks on one run's part of the not-before index: the next backoff to end, and whether anything
      // is leasable now.
      pendingSummary = c.prepareStatement(
          "SELECT (SELECT min(not_before_millis) FROM jobs INDEXED BY jobs_pending_by_run_not_before"
              + "   WHERE run_id = ? AND state = 'pending' AND not_before_millis > ?),"
              + " EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_pending_by_run_not_before"
              + "   WHERE run_id = ? AND state = 'pending' AND not_before_millis <= ?)");
    }
  }
}

package dev.tally.store;

import dev.failsafe.Failsafe;
import dev.failsafe.FailsafeException;
import dev.failsafe.RetryPolicy;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.Outcome;
import dev.tally.core.RecordStatus;
import dev.tally.core.Verdict;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.CaseQuery;
import dev.tally.core.store.CaseView;
import dev.tally.core.store.CreatedRun;
import dev.tally.core.store.IdempotencyRules;
import dev.tally.core.store.KeyClaim;
import dev.tally.core.store.KeyCompletion;
import dev.tally.core.store.KeyReservationLostException;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunCreation;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.RunState;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.BatchRules;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.flywaydb.core.api.MigrationInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.flywaydb.core.api.MigrationInfoService;
import org.flywaydb.core.api.MigrationState;

/**
 * A {@link Store} over JDBC, shared by every database Tally runs on: the write path (one write connection,
 * each scheduler step one transaction through {@link BatchRules}: Tally's group commit), the reads over a
 * pool of read connections ({@link ReadPool}), the cache of run specs, and closing. The SQL is written once
 * ({@link StoreSql}, and beside each read here); what differs between databases is the {@link Dialect}'s.
 * A subclass opens the database, migrates its schema and hands its connections over:
 * {@link SqliteStore}, {@link PostgresStore}.
 *
 * <p><b>Writes</b> go through one connection under one lock, so this process never contends with
 * itself for the database's write lock. Each write is one transaction begun with the dialect's
 * {@link Dialect#begin() begin} statement and ended by {@code COMMIT}; on any failure it is rolled back
 * whole. Prepared statements are made once per connection and reused.
 *
 * <p><b>Reads</b> ({@link #run}, {@link #runs}, {@link #jobs}, {@link #cases}, {@link #attempts}) each run
 * in one transaction (one snapshot) on a connection of the read pool, so a read never waits for a batch,
 * a batch never waits for a read, and readers (the HTTP API's pages, reports, {@code tally status}) do
 * not wait for each other.
 *
 * <p><b>Creating a run</b> inserts its cases as the source yields them, one statement each, in the one
 * write transaction that also completes its idempotency key ({@link RunCreation}): a repeated id is the
 * unique constraint's to find, and a bad case, a repeated id or a lost key reservation roll everything
 * back.
 *
 * <p><b>Fencing.</b> An outcome is {@link RecordStatus#RECORDED} only if its job is {@code leased} under
 * the very token the worker reports; it is {@link RecordStatus#DUPLICATE} if the job is {@code done}
 * under that token (a resend of the accepted result); anything else, including a job that does not
 * exist, is {@link RecordStatus#FENCED}. Tokens are a per-job counter in the jobs row, incremented in the
 * lease's own transaction, so every lease's token is greater than all before it, across restarts.
 *
 * <p><b>Time.</b> Batch times come from the caller ({@link StoreBatch#nowMillis()}); the only time this
 * class reads itself is a run's creation time, from the {@link Clock} its subclass was opened with.
 *
 * <p>Thread-safety: safe for use from many threads.
 */
public abstract class JdbcStore implements Store {

  private static final Logger log = LoggerFactory.getLogger(JdbcStore.class);

  /**
   * How long a write waits for a lost connection to come back before it fails: a database's restart or a
   * managed server's failover takes seconds to tens of seconds; longer is an outage, which the caller (the
   * scheduler, which retries a failed batch a few times before it gives up) should hear of. A leader waits
   * as long for its store before it gives its lead up ({@code CoordinatorBuilder.DEFAULT_LEADER_PATIENCE}).
   */
  public static final Duration RECONNECT_PATIENCE = Duration.ofSeconds(30);

  /** The first wait before reconnecting: a restart is not over sooner, and a cut link may be back already. */
  static final Duration FIRST_RECONNECT_DELAY = Duration.ofMillis(100);

  /** The longest wait between reconnection attempts: the database is back within this of being ready. */
  static final Duration MAX_RECONNECT_DELAY = Duration.ofSeconds(2);

  private static final String JOB_COLUMNS = StoreSql.JOB_COLUMNS;
  private static final int JOB_COLUMN_COUNT = StoreSql.JOB_COLUMN_COUNT;
  private static final String RUN_COLUMNS = StoreSql.RUN_COLUMNS;

  private final Dialect dialect;
  private final StoreSql sql;
  /** Where the store is (a file, a server and database), for messages; never a password. */
  private final String where;
  private final Clock clock;
  private final ReentrantLock writeLock = new ReentrantLock();
  private final AtomicLong commits = new AtomicLong();
  /**
   * Run specs, so the hot path (building assignments) reads them from here. A spec changes only by a
   * rescore (its scorers), which forgets the run's entry after its commit ({@link #forgetSpec}).
   */
  private final Map<Long, RunSpec> specs = new ConcurrentHashMap<>();
  /**
   * Counts the specs forgotten. A reader notes it before it reads a spec's options and caches what it read
   * only if it has not moved since: a reader whose read began before a rescore's commit cannot put the old
   * spec back after the rescore forgot it (the rescore commits, then counts, then forgets).
   */
  private final AtomicLong specGeneration = new AtomicLong();

  /** The write connection; replaced after it was lost (guarded by the write lock). */
  private Connection writer;
  /** The write connection was lost and closed: the next try opens another (guarded by the write lock). */
  private boolean writerLost;
  /** How a write whose connection was lost is tried again ({@link #reconnectionPolicy}). */
  private final RetryPolicy<Object> reconnection;
  private final ReadPool readers;
  /** The write connection's prepared statements; renewed after a failed write (guarded by the write lock). */
  private JdbcTransaction.Statements w;
  private volatile boolean closed;

  /** Opened for reading only: every write is refused. */
  private final boolean readOnly;
  private final String storeId;

  /**
   * Takes over an open database whose schema is up to date.
   *
   * @param dialect the database's differences
   * @param where where the store is, for messages (no password)
   * @param clock the wall clock for run creation times
   * @param writer the write connection, in auto-commit mode, its session already configured
   * @param readers the read connections
   * @param readOnly whether every write is refused
   * @throws SQLException if the statements cannot be prepared or the store's identity cannot be read
   */
  JdbcStore(Dialect dialect, String where, Clock clock, Connection writer, ReadPool readers, boolean readOnly)
      throws SQLException {
    this.dialect = dialect;
    this.sql = new StoreSql(dialect);
    this.reconnection = reconnectionPolicy();
    this.readOnly = readOnly;
    this.where = where;
    this.clock = clock;
    this.writer = writer;
    this.readers = readers;
    this.w = new JdbcTransaction.Statements(writer, sql);
    try (Connection reader = readers.borrow(); Statement s = reader.createStatement();
        ResultSet rs = s.executeQuery("SELECT store_id FROM store_info")) {
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
   * A store whose schema has a migration this Tally does not know was made (or migrated) by a newer
   * Tally: its tables may mean things this version would get wrong, so it is refused, not guessed at.
   *
   * @throws StoreException if {@code current} is a migration from the future
   */
  static void refuseNewerSchema(String where, MigrationInfo current) {
    if (current != null && current.getState() == MigrationState.FUTURE_SUCCESS) {
      throw new StoreException("open: " + where + " has schema version " + current.getVersion()
          + ", from a newer Tally than this one; use that version");
    }
  }

  /**
   * Refuses a schema that is not exactly this Tally's: missing, older (pending migrations), or newer.
   *
   * @throws StoreException naming the schema's version and the one expected
   */
  static void requireCurrentSchema(String where, MigrationInfoService info) {
    MigrationInfo current = info.current();
    refuseNewerSchema(where, current);
    MigrationInfo[] pending = info.pending();
    if (current == null || pending.length > 0) {
      throw new StoreException("open: the schema of " + where + " is "
          + (current == null ? "missing" : "at version " + current.getVersion())
          + (pending.length > 0 ? ", this Tally expects version " + pending[pending.length - 1].getVersion() : "")
          + " (a coordinator may be creating it right now; tally run or tally resume migrates an older one)");
    }
  }

  /** The innermost cause's message: what the database or the file system said. */
  static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
  }

  // ---------------------------------------------------------------------------------------------
  // createRun

  /**
   * {@inheritDoc}
   *
   * <p>The run's creation time is this store's clock's; the case timeout is stored in whole milliseconds.
   */
  @Override
  public CreatedRun createRun(NewRun run, CaseSource cases, KeyCompletion completion)
      throws CaseSourceException, KeyReservationLostException {
    writeLock.lock();
    try {
      ensureWritable("createRun");
      long now = clock.millis();
      try {
        begin();
        JdbcTransaction tx = new JdbcTransaction(w, runId -> spec(runId, writer));
        CreatedRun created = RunCreation.create(tx, run, cases, completion, now);
        tx.flush();
        w.commit.execute();
        commits.incrementAndGet();
        // The spec is not cached from here: the first lease loads it as stored, so every reader sees the
        // same spec whether or not this process created the run.
        return created;
      } catch (CaseSourceException | KeyReservationLostException e) {
        abort(e, "createRun"); // rolls back (what it returns only wraps e)
        throw e;
      } catch (SQLException | RuntimeException | Error e) {
        throw abort(e instanceof JdbcTransaction.SqlFailure f ? f.sqlCause() : e,
            "createRun: creating a run from '" + run.spec().dataset() + "' in " + where + " failed; nothing was written");
      }
    } finally {
      writeLock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public CancelResult cancelRun(long runId, long nowMillis) {
    return write("cancelRun: cancelling run " + runId + " in " + where + " failed; nothing changed",
        tx -> BatchRules.cancelRun(runId, nowMillis, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public boolean unpause(long runId) {
    return write("unpause: resuming run " + runId + " in " + where + " failed; nothing changed",
        tx -> BatchRules.unpause(runId, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public boolean putRunOptions(long runId, java.util.Map<String, String> options) {
    writeLock.lock(); // held until the spec is forgotten, as for a rescore
    try {
      return write("putRunOptions: setting run " + runId + "'s options in " + where + " failed; nothing changed",
          tx -> BatchRules.putRunOptions(runId, options, tx), true);
    } finally {
      forgetSpec(runId);
      writeLock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public dev.tally.core.store.RetryResult retryErrors(long runId, long nowMillis) {
    return write("retryErrors: retrying run " + runId + "'s errors in " + where + " failed; nothing changed",
        tx -> BatchRules.retryErrors(runId, nowMillis, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public dev.tally.core.store.RescorePage rescore(long runId, dev.tally.core.score.Judge judge, int afterPosition,
      long nowMillis) {
    writeLock.lock(); // held until the spec is forgotten, so no write in between reads the old one from the cache
    try {
      return write("rescore: rescoring run " + runId + " in " + where + " failed; nothing of the page changed",
          tx -> BatchRules.rescore(runId, judge, afterPosition, BatchRules.RESCORE_PAGE_CASES, nowMillis, tx), true);
    } finally {
      forgetSpec(runId); // committed or rolled back: what the writer cached inside the transaction may be either
      writeLock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // idempotency keys

  /** {@inheritDoc} */
  @Override
  public KeyClaim claimKey(String scope, String key, String fingerprint, long nowMillis, long holdUntilMillis) {
    return write("claimKey: claiming an idempotency key in " + where + " failed",
        tx -> IdempotencyRules.claim(tx, scope, key, fingerprint, nowMillis, holdUntilMillis), true);
  }

  /** {@inheritDoc} */
  @Override
  public boolean renewKey(String scope, String key, String reservationToken, long holdUntilMillis) {
    return write("renewKey: renewing an idempotency key's hold in " + where + " failed",
        tx -> IdempotencyRules.renew(tx, scope, key, reservationToken, holdUntilMillis), true);
  }

  /** {@inheritDoc} */
  @Override
  public void releaseKey(String scope, String key, String reservationToken) {
    write("releaseKey: releasing an idempotency key in " + where + " failed",
        tx -> IdempotencyRules.release(tx, scope, key, reservationToken), true);
  }

  /** {@inheritDoc} A purge that finds nothing is not counted as a commit. */
  @Override
  public int purgeKeys(long nowMillis) {
    int purged = write("purgeKeys: purging idempotency keys in " + where + " failed",
        tx -> IdempotencyRules.purge(tx, nowMillis), false);
    if (purged > 0) {
      commits.incrementAndGet();
    }
    return purged;
  }

  /** {@inheritDoc} */
  @Override
  public int releaseHeldKeys() {
    return write("releaseHeldKeys: releasing held idempotency keys in " + where + " failed",
        JdbcTransaction::deleteHeldKeys, true);
  }

  // ---------------------------------------------------------------------------------------------
  // apply

  /**
   * {@inheritDoc}
   *
   * <p>The rules are {@link BatchRules}'s; this store supplies the primitives ({@link JdbcTransaction}),
   * all inside one {@code BEGIN IMMEDIATE} transaction.
   */
  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    return write("apply: a batch of " + batch.records().size() + " records, " + batch.releases().size()
        + " releases and " + batch.leases().size() + " lease requests failed in " + where + "; none of it was applied",
        tx -> BatchRules.apply(batch, tx), !batch.isEmpty());
  }

  /** {@inheritDoc} */
  @Override
  public int releaseLeases(long runId, long nowMillis, RedeliveryPolicy redelivery) {
    return write("releaseLeases: releasing the leases of run " + runId + " in " + where + " failed; nothing changed",
        tx -> BatchRules.releaseAllLeases(runId, nowMillis, redelivery, tx), true);
  }

  /**
   * Runs {@code work} in one write transaction over the primitives; rolls back whole on any failure. If the
   * connection was lost (the database restarting, a network cut: {@link Dialect.Failure#CONNECTION_LOST}),
   * the same work is run again, whole, on a new connection, as {@link #reconnection} says (backing off from
   * {@link #FIRST_RECONNECT_DELAY} to {@link #MAX_RECONNECT_DELAY}, for up to {@link #RECONNECT_PATIENCE});
   * meanwhile the caller waits (the scheduler's results stay unacknowledged in the workers' outboxes). A
   * commit cut off midway may have landed: running the batch again then finds its records already done
   * under their tokens (duplicates, never recorded twice) and its leases' jobs already leased (they expire
   * and are redelivered).
   */
  private <T> T write(String failure, java.util.function.Function<JdbcTransaction, T> work, boolean counts) {
    writeLock.lock();
    try {
      String operation = failure.substring(0, failure.indexOf(':'));
      ensureWritable(operation);
      try {
        return Failsafe.with(reconnection).get(() -> writeOnce(operation, failure, work, counts));
      } catch (FailsafeException e) {
        // Only a lost connection escapes writeOnce checked, and only once the patience is spent.
        if (e.getCause() instanceof InterruptedException) {
          Thread.currentThread().interrupt();
          throw new StoreException(operation + ": reconnecting to " + where + " was interrupted", e.getCause());
        }
        throw new StoreException(operation + ": the connection to " + where + " was lost and could not be opened"
            + " again within " + RECONNECT_PATIENCE.toSeconds() + " s: " + rootMessage(e.getCause()), e.getCause());
      }
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * One try of {@link #write}: opens a new write connection first if the last was lost, then runs the
   * transaction. Called under the write lock.
   *
   * @throws SQLException only when the connection is lost (the connection is closed and marked for
   *     replacement), which {@link #reconnection} retries
   * @throws RuntimeException any other failure, after the transaction was rolled back ({@link #abort})
   */
  private <T> T writeOnce(String operation, String failure, java.util.function.Function<JdbcTransaction, T> work,
      boolean counts) throws SQLException {
    if (writerLost) {
      replaceWriter();
    }
    try {
      begin();
      JdbcTransaction tx = new JdbcTransaction(w, runId -> spec(runId, writer));
      T result = work.apply(tx);
      tx.flush();
      w.commit.execute();
      if (counts) {
        commits.incrementAndGet();
      }
      return result;
    } catch (SQLException | RuntimeException | Error e) {
      Throwable cause = e instanceof JdbcTransaction.SqlFailure f ? f.sqlCause() : e;
      if (lostWriter(cause)) {
        log.warn("{}: lost the connection to {} ({}); trying the same transaction again on a new connection",
            operation, where, cause.getMessage());
        throw (SQLException) cause;
      }
      throw abort(cause, failure);
    }
  }

  /**
   * Whether {@code cause} says the write connection was lost ({@link Dialect.Failure#CONNECTION_LOST}); if
   * so, that connection is closed and marked, and the next write ({@link #writeOnce}, {@link #swapLeader})
   * opens a new one first. Called under the write lock.
   */
  private boolean lostWriter(Throwable cause) {
    if (cause instanceof SQLException sql && dialect.classify(sql) == Dialect.Failure.CONNECTION_LOST) {
      clearBatches();
      closeQuietly(writer);
      writerLost = true;
      return true;
    }
    return false;
  }

  /**
   * Retries a write whose connection was lost: exponential backoff from {@link #FIRST_RECONNECT_DELAY},
   * doubling to {@link #MAX_RECONNECT_DELAY}, until {@link #RECONNECT_PATIENCE} has passed since the first
   * try. Anything else is not retried.
   */
  private RetryPolicy<Object> reconnectionPolicy() {
    return reconnecting(e -> e instanceof SQLException sql && dialect.classify(sql) == Dialect.Failure.CONNECTION_LOST).build();
  }

  /**
   * The one backoff for a database out of reach, a running store's lost connection ({@link #write}) and a
   * starting coordinator's ({@link Stores#whileUnreachable}) alike: from {@link #FIRST_RECONNECT_DELAY},
   * doubling to {@link #MAX_RECONNECT_DELAY}, until {@link #RECONNECT_PATIENCE} has passed since the first
   * try; only failures {@code lost} accepts are tried again.
   *
   * @param lost whether a failure is the connection's
   * @param <T> what the retried work returns
   * @return the policy, to be finished ({@code build()}) by the caller
   */
  static <T> dev.failsafe.RetryPolicyBuilder<T> reconnecting(dev.failsafe.function.CheckedPredicate<? extends Throwable> lost) {
    return RetryPolicy.<T>builder()
        .handleIf(lost)
        .withBackoff(FIRST_RECONNECT_DELAY, MAX_RECONNECT_DELAY)
        .withMaxRetries(-1)
        .withMaxDuration(RECONNECT_PATIENCE);
  }

  // ---------------------------------------------------------------------------------------------
  // the leader row

  /** The epoch this instance's writes carry ({@link #writeAs}); checked by {@link #begin}. */
  private volatile long writeEpoch = UNFENCED;

  /** {@inheritDoc} The store's clock is the dialect's ({@link Dialect#nowMillis}). */
  @Override
  public dev.tally.core.lead.LeaderRead leader() {
    return read("leader", reader -> new dev.tally.core.lead.LeaderRead(LeaderSql.read(reader), dialect.nowMillis(reader, clock)));
  }

  /**
   * Every epoch that ever led this store, oldest first, with the write transactions each committed ({@code
   * leader_epochs}), read in one snapshot: the last is the leader row's epoch, and every earlier one's count
   * is final (a deposed epoch's writes are refused). For tools that audit a takeover ({@code tally chaos}).
   *
   * @return the epochs; empty if no coordinator has led the store
   * @throws StoreException if the store cannot be read
   */
  public java.util.List<dev.tally.core.lead.LeaderEpoch> leaderEpochs() {
    return read("leaderEpochs", LeaderSql::readEpochs);
  }

  /**
   * {@inheritDoc} Not counted in {@link #commits()}: a renewal a second is the lease's bookkeeping, not the
   * scheduler's work. Never waits out a reconnection (a renewal must not outlast its lease; the caller tries
   * again at its own pace): a write connection lost before (the database restarted) is replaced first; one
   * found dead now, if it was opened before this call, is replaced and the swap tried once more at once (a
   * standby's connection idles between its swaps and learns of a restart only by using it; that cost a
   * takeover half a second); one that dies on its first use is marked for the next call to replace. Without
   * that a standby whose connection died with a restart could never take the lead: it only swaps, and its
   * swaps failed for ever on the dead connection.
   */
  @Override
  public boolean swapLeader(dev.tally.core.lead.LeaderRow expected, dev.tally.core.lead.LeaderRow next) {
    dev.tally.core.lead.LeaderRow.checkSwap(expected, next);
    writeLock.lock();
    try {
      ensureWritable("swapLeader");
      for (int tryNumber = 1; ; tryNumber++) {
        boolean opened = writerLost;
        try {
          if (opened) {
            replaceWriter();
          }
          w.begin.execute(); // not fenced: this is how an epoch is won
          boolean swapped = LeaderSql.swap(writer, expected, next, dialect.nowMillis(writer, clock));
          w.commit.execute();
          return swapped;
        } catch (SQLException | RuntimeException | Error e) {
          if (lostWriter(e)) {
            if (!opened && tryNumber == 1) {
              continue; // an old connection, dead since its last use: once more on a new one
            }
            throw new StoreException("swapLeader: the connection to " + where + " is lost (" + e.getMessage()
                + "); the leader row is unchanged, and the next try opens a new connection", e);
          }
          throw abort(e, "swapLeader: swapping the leader row of " + where + " failed; it is unchanged");
        }
      }
    } finally {
      writeLock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public void writeAs(long epoch) {
    writeEpoch = Store.checkWriteEpoch(epoch);
  }

  /** {@inheritDoc} */
  @Override
  public long writeEpoch() {
    return writeEpoch;
  }

  /**
   * Replaces the lost write connection with a new one. Called under the write lock, by {@link #writeOnce}.
   *
   * @throws SQLException if the database does not take a connection yet (retried while the patience lasts)
   * @throws StoreException if this store cannot open a new connection at all (a file's is never lost)
   */
  private void replaceWriter() throws SQLException {
    Connection fresh;
    try {
      fresh = openWriter();
    } catch (SQLException e) {
      log.debug("{} is not taking connections yet: {}", where, e.getMessage());
      throw e;
    }
    if (fresh == null) {
      throw new StoreException("the connection to " + where + " was lost, and this store cannot open another");
    }
    JdbcTransaction.Statements renewed;
    try {
      renewed = new JdbcTransaction.Statements(fresh, sql);
    } catch (SQLException e) {
      closeQuietly(fresh);
      throw e;
    }
    w.closeQuietly();
    w = renewed;
    writer = fresh;
    writerLost = false;
    log.info("connected to {} again", where);
  }

  /**
   * Opens a new write connection, its session configured as the dialect's {@link Dialect#configureWriter},
   * to replace one that was lost; {@code null} if this store cannot (a file's connection is never lost).
   *
   * @throws SQLException if the database does not take the connection
   */
  Connection openWriter() throws SQLException {
    return null;
  }

  /** {@inheritDoc} */
  @Override
  public void saveWorkerStatuses(List<WorkerStatus> statuses) {
    if (statuses.isEmpty()) {
      return;
    }
    write("saveWorkerStatuses: saving " + statuses.size() + " worker reports in " + where + " failed", tx -> {
      tx.saveWorkers(statuses);
      return null;
    }, true);
  }

  /** {@inheritDoc} */
  @Override
  public List<WorkerStatus> workerStatuses() {
    return read("workerStatuses", reader -> {
      List<WorkerStatus> out = new ArrayList<>();
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT " + StoreSql.WORKER_COLUMNS + " FROM workers ORDER BY name, worker_id");
          ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          out.add(new WorkerStatus(rs.getString(1), rs.getString(2), rs.getString(3), rs.getInt(4) != 0, rs.getLong(5),
              rs.getString(6), rs.getInt(7), rs.getInt(8), rs.getLong(9), rs.getString(10), level(rs, 11), rs.getInt(12)));
        }
      }
      return out;
    });
  }

  /** A nullable REAL column as a double, NaN for NULL. */
  private static double level(ResultSet rs, int column) throws SQLException {
    double v = rs.getDouble(column);
    return rs.wasNull() ? Double.NaN : v;
  }

  // ---------------------------------------------------------------------------------------------
  // reads

  /** {@inheritDoc} */
  @Override
  public Optional<RunView> run(long runId) {
    return read("run", reader -> {
      try (PreparedStatement s = reader.prepareStatement("SELECT " + RUN_COLUMNS + " FROM runs WHERE id = ?")) {
        s.setLong(1, runId);
        try (ResultSet rs = s.executeQuery()) {
          return rs.next() ? Optional.of(runView(rs, reader)) : Optional.<RunView>empty();
        }
      }
    });
  }

  /** {@inheritDoc} */
  @Override
  public List<RunView> runs() {
    return read("runs", reader -> {
      List<RunView> out = new ArrayList<>();
      try (PreparedStatement s = reader.prepareStatement("SELECT " + RUN_COLUMNS + " FROM runs ORDER BY id");
          ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          out.add(runView(rs, reader));
        }
      }
      return out;
    });
  }

  /** {@inheritDoc} */
  @Override
  public List<RunView> runs(RunPage page) {
    return read("runs", reader -> {
      List<RunView> out = new ArrayList<>(Math.min(page.limit(), 64));
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT " + RUN_COLUMNS + " FROM runs WHERE id < ? ORDER BY id DESC LIMIT ?")) {
        s.setLong(1, page.beforeRunId());
        s.setInt(2, page.limit());
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            out.add(runView(rs, reader));
          }
        }
      }
      return out;
    });
  }

  /** {@inheritDoc} One index range of the run's jobs by position, with the recorded attempt's timing. */
  @Override
  public List<CaseView> cases(long runId, CaseQuery query) {
    return read("cases", reader -> {
      List<CaseView> out = new ArrayList<>(Math.min(query.limit(), 64));
      StringBuilder text = new StringBuilder("SELECT ").append(prefixed("j.", JOB_COLUMNS))
          .append(", a.elapsed_millis, a.queued_millis, a.run_millis FROM jobs j")
          .append(" LEFT JOIN attempts a ON j.state = 'done' AND a.job_id = j.id AND a.token = j.token")
          .append(" WHERE j.run_id = ? AND j.position > ?");
      if (query.state() != null) {
        text.append(" AND j.state = ?");
      }
      if (query.verdict() != null) {
        // JobView.reportedVerdict, in SQL: a case out of attempts (failed) is an error.
        text.append(query.verdict() == Verdict.ERROR ? " AND ((j.state = 'done' AND j.verdict = ?) OR j.state = 'failed')"
            : " AND j.state = 'done' AND j.verdict = ?");
      }
      if (query.idContains() != null) {
        // A literal search: no LIKE wildcards to escape.
        text.append(" AND ").append(dialect.containsLiteral("lower(j.case_id)", "?"));
      }
      if (query.minAttempts() > 1) {
        text.append(" AND j.attempts >= ?");
      }
      text.append(" ORDER BY j.position LIMIT ?");
      try (PreparedStatement s = reader.prepareStatement(text.toString())) {
        int i = 1;
        s.setLong(i++, runId);
        s.setInt(i++, query.afterPosition());
        if (query.state() != null) {
          s.setString(i++, query.state().name().toLowerCase(Locale.ROOT));
        }
        if (query.verdict() != null) {
          s.setString(i++, query.verdict().wireName());
        }
        if (query.idContains() != null) {
          s.setString(i++, CaseQuery.lowerAscii(query.idContains()));
        }
        if (query.minAttempts() > 1) {
          s.setInt(i++, query.minAttempts());
        }
        s.setInt(i, query.limit());
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            JobView job = jobView(rs);
            AttemptTiming timing = job.state() == JobState.DONE
                ? new AttemptTiming(duration(rs, JOB_COLUMN_COUNT + 1), duration(rs, JOB_COLUMN_COUNT + 2),
                    duration(rs, JOB_COLUMN_COUNT + 3)) : AttemptTiming.NONE;
            out.add(new CaseView(job, timing));
          }
        }
      }
      return out;
    });
  }

  /** {@inheritDoc} */
  @Override
  public List<dev.tally.core.store.ProgressBucket> progress(long runId, long spanMillis) {
    if (spanMillis < 1) {
      throw new IllegalArgumentException("a span is at least 1 ms, got " + spanMillis);
    }
    return read("progress", reader -> {
      List<dev.tally.core.store.ProgressBucket> out = new ArrayList<>();
      // The attempt whose token is the job's is the one that ended it (recorded, or the last of a failed job).
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT " + dialect.greatest("0", "a.ended_at_millis - r.created_at_millis") + " / ? AS span,"
              + " COUNT(*) FILTER (WHERE j.state = 'done' AND j.verdict = 'pass'),"
              + " COUNT(*) FILTER (WHERE j.state = 'done' AND j.verdict = 'fail'),"
              + " COUNT(*) FILTER (WHERE j.state = 'failed' OR (j.state = 'done' AND j.verdict = 'error'))"
              + " FROM jobs j JOIN runs r ON r.id = j.run_id JOIN attempts a ON a.job_id = j.id AND a.token = j.token"
              + " WHERE j.run_id = ? AND j.state IN ('done', 'failed') GROUP BY span ORDER BY span")) {
        s.setLong(1, spanMillis);
        s.setLong(2, runId);
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            out.add(new dev.tally.core.store.ProgressBucket(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)));
          }
        }
      }
      return out;
    });
  }

  /** {@inheritDoc} */
  @Override
  public java.util.Map<String, String> journalledResponses(long runId, String caseId) {
    return read("journalledResponses", reader -> {
      try (PreparedStatement s = reader.prepareStatement(sql.selectResponses)) {
        return responses(s, runId, caseId, Integer.MAX_VALUE);
      }
    });
  }

  /**
   * The journalled responses a prepared {@code SELECT request_digest, response ... WHERE run_id = ? AND
   * case_id = ?} finds, in its order, up to {@code maxBytes} of digests and responses (UTF-8): the first that
   * would pass it ends the list.
   */
  static java.util.Map<String, String> responses(PreparedStatement select, long runId, String caseId, int maxBytes)
      throws SQLException {
    select.setLong(1, runId);
    select.setString(2, caseId);
    java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
    long bytes = 0;
    try (ResultSet rs = select.executeQuery()) {
      while (rs.next()) {
        String digest = rs.getString(1);
        String response = rs.getString(2);
        bytes += digest.length() + dev.tally.core.JournalEntry.utf8Length(response);
        if (bytes > maxBytes) {
          break;
        }
        out.put(digest, response);
      }
    }
    return out.isEmpty() ? java.util.Map.of() : out;
  }

  /** {@inheritDoc} */
  @Override
  public Optional<List<AttemptView>> attempts(long runId, String caseId) {
    return read("attempts", reader -> {
      List<AttemptView> out = new ArrayList<>();
      boolean found = false;
      // A LEFT JOIN: a case with no attempt yet is one row of nulls, an unknown case no row at all.
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT " + StoreSql.ATTEMPT_COLUMNS + " FROM jobs j LEFT JOIN attempts a ON a.job_id = j.id WHERE j.run_id = ? AND j.case_id = ? ORDER BY a.token")) {
        s.setLong(1, runId);
        s.setString(2, caseId);
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            found = true;
            rs.getLong(1);
            if (!rs.wasNull()) {
              out.add(attemptView(rs));
            }
          }
        }
      }
      return found ? Optional.of(out) : Optional.<List<AttemptView>>empty();
    });
  }

  private static AttemptView attemptView(ResultSet rs) throws SQLException {
    AttemptTiming timing = new AttemptTiming(duration(rs, 8), duration(rs, 9), duration(rs, 10));
    return new AttemptView(rs.getLong(1), rs.getLong(2), rs.getString(3), rs.getLong(4), rs.getLong(5),
        rs.getString(6), rs.getString(7), timing, rs.getInt(11), rs.getInt(12));
  }

  /** The comma-separated columns, each with {@code prefix}. */
  private static String prefixed(String prefix, String columns) {
    StringBuilder b = new StringBuilder();
    for (String c : columns.split(",")) {
      if (b.length() > 0) {
        b.append(", ");
      }
      b.append(prefix).append(c.strip());
    }
    return b.toString();
  }

  /** {@inheritDoc} */
  @Override
  public List<JobView> jobs(long runId) {
    return read("jobs", reader -> {
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

  /**
   * How many cases {@link #forEachCase} reads per snapshot: a page of case JSON is at most a few megabytes,
   * and the writer's checkpoints are not held back for the whole walk.
   */
  static final int CASE_PAGE = 1_000;

  /** {@inheritDoc} */
  @Override
  public void forEachCase(long runId, java.util.function.BiPredicate<String, String> each) {
    int after = -1;
    while (true) {
      int from = after;
      List<String[]> page = read("forEachCase", reader -> {
        List<String[]> out = new ArrayList<>();
        try (PreparedStatement s = reader.prepareStatement("SELECT position, case_id, case_json FROM jobs"
            + " WHERE run_id = ? AND position > ? ORDER BY position LIMIT ?")) {
          s.setLong(1, runId);
          s.setInt(2, from);
          s.setInt(3, CASE_PAGE);
          try (ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
              out.add(new String[] {Integer.toString(rs.getInt(1)), rs.getString(2), rs.getString(3)});
            }
          }
        }
        return out;
      });
      for (String[] c : page) {
        if (!each.test(c[1], c[2])) {
          return;
        }
      }
      if (page.size() < CASE_PAGE) {
        return;
      }
      after = Integer.parseInt(page.get(page.size() - 1)[0]);
    }
  }

  /** {@inheritDoc} */
  @Override
  public List<AttemptView> attempts(long runId) {
    return read("attempts", reader -> {
      List<AttemptView> out = new ArrayList<>();
      try (PreparedStatement s = reader.prepareStatement(
          "SELECT " + StoreSql.ATTEMPT_COLUMNS + " FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.run_id = ? ORDER BY a.job_id, a.token")) {
        s.setLong(1, runId);
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            out.add(attemptView(rs));
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
    try {
      if (closed) {
        return;
      }
      closed = true;
      readers.close(); // waits for reads in progress to give their connections back
      try {
        writer.close();
      } catch (SQLException e) {
        throw new StoreException("close: closing " + where + " failed", e);
      }
    } finally {
      writeLock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // helpers

  /** Work on one connection. */
  @FunctionalInterface
  interface SqlWork<T> {
    T run(Connection connection) throws SQLException;
  }

  /**
   * Runs {@code work} on a read connection of the pool, in one snapshot. The snapshot is a JDBC
   * transaction, not a {@code BEGIN} of our own: a read that fails part way is rolled back here, and a
   * connection handed back still in a transaction is rolled back by the pool, so no pooled connection keeps
   * an old snapshot (Hikari gives a thread the connection it used last: one stuck in a transaction once made
   * every later read of the dashboard's fleet sampler fail or go stale).
   */
  final <T> T read(String operation, SqlWork<T> work) {
    ensureOpen(operation);
    try (Connection reader = readers.borrow()) {
      // One snapshot for the whole read, ended at once so an idle reader never holds back checkpoints.
      reader.setAutoCommit(false);
      T result;
      try {
        result = work.run(reader);
        reader.commit();
      } catch (SQLException | RuntimeException | Error e) {
        // The connection may be dead (the pool closes one it finds broken): what failed first is the failure,
        // not the pool's "connection is closed" from the clean-up, which would hide a lost connection.
        try {
          reader.rollback();
        } catch (SQLException rollback) {
          e.addSuppressed(rollback);
        }
        try {
          reader.setAutoCommit(true);
        } catch (SQLException restore) {
          e.addSuppressed(restore);
        }
        throw e;
      }
      reader.setAutoCommit(true);
      return result;
    } catch (SQLException e) {
      throw new StoreException(operation + ": reading " + where + " failed", e);
    }
  }

  /**
   * Runs {@code work} on the write connection, outside any transaction of the store's, under the write
   * lock: for a subclass's settings and its tests, never for the store's data.
   *
   * @throws StoreException if the store is closed or {@code work} fails
   */
  final <T> T onWriter(String operation, SqlWork<T> work) {
    writeLock.lock();
    try {
      ensureOpen(operation);
      return work.run(writer);
    } catch (SQLException e) {
      throw new StoreException(operation + ": on the write connection of " + where + " failed", e);
    } finally {
      writeLock.unlock();
    }
  }

  private void ensureOpen(String operation) {
    if (closed) {
      throw new StoreException(operation + ": the store " + where + " is closed");
    }
  }

  private void ensureWritable(String operation) {
    ensureOpen(operation);
    if (readOnly) {
      throw new StoreException(operation + ": the store " + where + " was opened for reading only");
    }
  }

  /** Begins a write transaction, as the dialect begins one. */
  private void begin() throws SQLException {
    w.begin.execute();
    LeaderSql.fence(w.fenceLeader, w.countEpochWrite, w.selectLeader, writeEpoch);
  }

  /**
   * Rolls the write transaction back after {@code e} and returns what to throw: a {@link StoreException}
   * with {@code message} for a database error, {@code e} itself for anything unchecked.
   */
  private RuntimeException abort(Throwable e, String message) {
    clearBatches();
    rollback(e);
    renewStatements(e);
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
        // A statement of its own: the prepared ones may have been closed by the failure.
        try (Statement s = writer.createStatement()) {
          s.execute("ROLLBACK");
        }
      }
    } catch (SQLException e) {
      // SQLite has already rolled back after some errors (I/O, full disk) and then refuses ROLLBACK.
      cause.addSuppressed(e);
    }
  }

  /**
   * Prepares the write statements anew after a failed write. sqlite-jdbc closes a prepared statement whose
   * execution failed (a full disk, an I/O error), so reusing it would fail every later write of this
   * process ("statement is not executing") even once the cause is gone; fresh statements make the store
   * writable again as soon as there is room.
   */
  private void renewStatements(Throwable cause) {
    JdbcTransaction.Statements old = w;
    try {
      if (!writer.isClosed()) {
        w = new JdbcTransaction.Statements(writer, sql);
        old.closeQuietly();
      }
    } catch (SQLException e) {
      cause.addSuppressed(e);
    }
  }

  private void clearBatches() {
    for (PreparedStatement s : new PreparedStatement[] {w.insertOption, w.upsertWorker}) {
      try {
        s.clearBatch();
      } catch (SQLException ignored) {
        // Only pending parameters are lost, which is the point.
      }
    }
  }

  private RunView runView(ResultSet rs, Connection reader) throws SQLException {
    long runId = rs.getLong(1);
    RunSpec spec = specs.get(runId);
    if (spec == null) {
      long generation = specGeneration.get();
      spec = new RunSpec(rs.getString(2),
          new EvaluatorSpec(rs.getString(3), options(runId, reader), Duration.ofMillis(rs.getLong(4))),
          new AttemptLimits(rs.getInt(5), rs.getInt(10)), rs.getString(9));
      cacheSpec(runId, spec, generation);
    }
    return new RunView(runId, rs.getString(11), spec, RunState.parse(rs.getString(8)), rs.getLong(6), rs.getLong(7),
        counters(rs, 13), rs.getString(12));
  }

  /** The counters in {@link #COUNTER_COLUMNS} from column {@code from} on. */
  static RunCounters counters(ResultSet rs, int from) throws SQLException {
    return new RunCounters(rs.getLong(from), rs.getLong(from + 1), rs.getLong(from + 2), rs.getLong(from + 3),
        rs.getLong(from + 4), rs.getLong(from + 5), rs.getLong(from + 6), rs.getLong(from + 7), rs.getLong(from + 8),
        rs.getLong(from + 9), rs.getDouble(from + 10), rs.getDouble(from + 11), rs.getLong(from + 12),
        rs.getLong(from + 13), rs.getLong(from + 14));
  }

  /** A nullable duration column: NULL (not measured, or an attempt from before V9) is {@link AttemptTiming#UNKNOWN}. */
  private static long duration(ResultSet rs, int column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? AttemptTiming.UNKNOWN : v;
  }

  private static JobView jobView(ResultSet rs) throws SQLException {
    JobState state = JobState.valueOf(rs.getString(5).toUpperCase(Locale.ROOT));
    Outcome outcome = null;
    if (state == JobState.DONE) {
      double score = rs.getDouble(11);
      Double boxed = rs.wasNull() ? null : score;
      int exit = rs.getInt(17);
      Integer exitCode = rs.wasNull() ? null : exit;
      outcome = new Outcome(Verdict.parse(rs.getString(10)), boxed, rs.getString(12), rs.getLong(13),
          rs.getString(15), rs.getString(16), exitCode, rs.getString(18));
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
    long generation = specGeneration.get();
    try (PreparedStatement s = c.prepareStatement(
        "SELECT dataset, evaluator_kind, case_timeout_millis, max_attempts, dataset_digest, timeout_retries"
            + " FROM runs WHERE id = ?")) {
      s.setLong(1, runId);
      try (ResultSet rs = s.executeQuery()) {
        if (!rs.next()) {
          throw new SQLException("run " + runId + " has jobs but no row in runs");
        }
        RunSpec spec = new RunSpec(rs.getString(1),
            new EvaluatorSpec(rs.getString(2), options(runId, c), Duration.ofMillis(rs.getLong(3))),
            new AttemptLimits(rs.getInt(4), rs.getInt(6)), rs.getString(5));
        cacheSpec(runId, spec, generation);
        return spec;
      }
    }
  }

  /** Caches a spec read after {@link #specGeneration} was {@code generation}, unless a spec was forgotten since. */
  private void cacheSpec(long runId, RunSpec spec, long generation) {
    if (specGeneration.get() == generation) {
      specs.putIfAbsent(runId, spec);
    }
  }

  /** Forgets a run's cached spec, after a commit that changed it. */
  private void forgetSpec(long runId) {
    specGeneration.incrementAndGet();
    specs.remove(runId);
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

  static void closeQuietly(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (SQLException ignored) {
        // Already failing; the first error is the one worth reporting.
      }
    }
  }
}

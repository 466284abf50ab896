package dev.tally.store;

import com.zaxxer.hikari.HikariConfig;
import dev.tally.core.store.Durability;
import dev.tally.core.store.StoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The {@link dev.tally.core.store.Store} on a PostgreSQL server: for coordinators that must not lose their
 * store with their machine, or that share one store. This class opens the database, migrates its schema
 * (Flyway, {@code db/migration/postgresql}) and its connections; the store's work is {@link JdbcStore}'s,
 * in the same SQL as on SQLite, and what PostgreSQL does its own way is {@link PostgresDialect}'s.
 *
 * <p><b>Durability.</b> {@link Durability#FULL} is {@code synchronous_commit=on}: a commit is on the
 * server's disk (its WAL flushed) before {@link #apply} returns, so an acked result survives the server's
 * crash too; {@link Durability#RELAXED} is {@code off}: the server flushes a moment later
 * ({@link PostgresDialect#configureWriter}).
 *
 * <p><b>Writes</b> go through one connection under one lock, one transaction per scheduler step (group
 * commit), as on SQLite. The fencing check is in the {@code UPDATE ... WHERE token = ?} that records: a
 * stale token updates no row. If the connection is lost (the server restarting, a failover, a network
 * cut), the transaction is run again whole on a new connection, with backoff ({@link JdbcStore}).
 *
 * <p><b>Reads</b> use a pool of read-only connections, each read one REPEATABLE READ transaction: one
 * consistent snapshot per read (a page of cases and its run's counters agree), and MVCC means a read
 * never waits for the writer, nor the writer for a read.
 *
 * <p>The password is passed to the driver and kept nowhere else; {@link #toString()} and every message
 * name the database by {@link StoreLocation#describe()}, which has none.
 *
 * <p>Thread-safety: safe for use from many threads.
 */
public final class PostgresStore extends JdbcStore {

  /**
   * How long opening a connection may take before it fails: a server on another continent answers well
   * within it; a host that drops packets is reported rather than waited on.
   */
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

  private final StoreLocation.Postgres location;
  private final PGSimpleDataSource source;
  private final Durability durability;

  private PostgresStore(StoreLocation.Postgres location, PGSimpleDataSource source, Durability durability, Clock clock,
      Connection writer, ReadPool readers, boolean readOnly) throws SQLException {
    super(PostgresDialect.INSTANCE, location.describe(), clock, writer, readers, readOnly);
    this.location = location;
    this.source = source;
    this.durability = durability;
  }

  /**
   * Opens the database and brings its schema up to date with the Flyway migrations in
   * {@code db/migration/postgresql} (on an empty database, the whole schema). The database itself must
   * exist ({@code createdb}); Tally creates its tables in it.
   *
   * @param location the database
   * @param password its password, or {@code null} (see {@link PostgresPassword})
   * @param clock the wall clock for run creation times
   * @param durability what an acknowledged result must survive ({@code synchronous_commit})
   * @return an open store; close it when done
   * @throws StoreException if the server cannot be reached or refuses the connection, a migration
   *     fails, or the schema is from a newer Tally
   */
  public static PostgresStore open(StoreLocation.Postgres location, String password, Clock clock, Durability durability) {
    PGSimpleDataSource source = dataSource(location, password);
    MigrationInfo current;
    try {
      // A schema change commits durably whatever the server's default: with synchronous_commit=off a crash
      // right after could lose a migration's history row but not its DDL, and the next open would run it again
      // and fail (an embedded PostgreSQL, off by default, did exactly that).
      Flyway flyway = Flyway.configure().dataSource(source).locations(PostgresDialect.INSTANCE.migrations())
          .initSql("SET synchronous_commit = on").load();
      flyway.migrate();
      current = flyway.info().current();
    } catch (RuntimeException e) {
      throw new StoreException("open: migrating the schema of " + location.describe() + " failed: " + rootMessage(e), e);
    }
    refuseNewerSchema(location.describe(), current);
    return connect(location, source, durability, clock, false);
  }

  /**
   * Opens a database whose schema is already up to date, for reading only ({@code tally status},
   * {@code tally compare}): nothing is created or migrated, and every write method of the returned store
   * throws {@link StoreException}.
   *
   * @param location the database
   * @param password its password, or {@code null}
   * @return an open, read-only store; close it when done
   * @throws StoreException if the server cannot be reached, or the schema is missing or not this Tally's
   */
  public static PostgresStore openExisting(StoreLocation.Postgres location, String password) {
    PGSimpleDataSource source = dataSource(location, password);
    try {
      requireCurrentSchema(location.describe(),
          Flyway.configure().dataSource(source).locations(PostgresDialect.INSTANCE.migrations()).load().info());
    } catch (StoreException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new StoreException("open: cannot read the schema version of " + location.describe() + ": " + rootMessage(e), e);
    }
    return connect(location, source, Durability.FULL, Clock.systemUTC(), true);
  }

  private static PostgresStore connect(StoreLocation.Postgres location, PGSimpleDataSource source, Durability durability,
      Clock clock, boolean readOnly) {
    Connection writer = null;
    ReadPool readers = null;
    try {
      writer = writerOf(source, durability);
      if (readOnly) {
        writer.setReadOnly(true);
      }
      HikariConfig h = new HikariConfig();
      h.setDataSource(source);
      h.setReadOnly(true);
      // One snapshot per read: the pages of the API and a report's counters agree with each other.
      h.setTransactionIsolation("TRANSACTION_REPEATABLE_READ");
      readers = ReadPool.open(h, readOnly ? ReadPool.SIZE_READ_ONLY : ReadPool.SIZE);
      return new PostgresStore(location, source, durability, clock, writer, readers, readOnly);
    } catch (SQLException e) {
      closeQuietly(writer);
      if (readers != null) {
        readers.close();
      }
      throw new StoreException("open: cannot open " + location.describe() + ": " + rootMessage(e), e);
    }
  }

  private static PGSimpleDataSource dataSource(StoreLocation.Postgres location, String password) {
    PGSimpleDataSource source = new PGSimpleDataSource();
    source.setServerNames(new String[] {location.host()});
    source.setPortNumbers(new int[] {location.port()});
    source.setDatabaseName(location.database());
    if (location.user() != null) {
      source.setUser(location.user());
    }
    if (password != null) {
      source.setPassword(password);
    }
    if (location.sslMode() != null) {
      source.setSslMode(location.sslMode());
    }
    source.setApplicationName("tally");
    source.setConnectTimeout((int) CONNECT_TIMEOUT.toSeconds());
    source.setTcpKeepAlive(true);
    // The attempts of a batch go as one multi-row INSERT instead of one statement each.
    source.setReWriteBatchedInserts(true);
    return source;
  }

  /** A new write connection: auto-commit (transactions are begun by the store), its session configured. */
  private static Connection writerOf(PGSimpleDataSource source, Durability durability) throws SQLException {
    Connection c = source.getConnection();
    try {
      c.setAutoCommit(true);
      PostgresDialect.INSTANCE.configureWriter(c, durability);
      return c;
    } catch (SQLException e) {
      closeQuietly(c);
      throw e;
    }
  }

  @Override
  Connection openWriter() throws SQLException {
    return writerOf(source, durability);
  }

  /** The database. */
  public StoreLocation.Postgres location() {
    return location;
  }

  @Override
  public String toString() {
    return "PostgresStore[" + location.describe() + "]";
  }
}

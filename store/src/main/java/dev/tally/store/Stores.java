package dev.tally.store;

import dev.tally.core.store.Durability;
import dev.tally.core.store.StoreException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;

/**
 * The one way to open a store from a {@link StoreLocation}: a SQLite file or a PostgreSQL database, for
 * writing (migrated to this Tally's schema) or for reading only (never migrated).
 *
 * <p>Thread-safety: stateless.
 */
public final class Stores {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Stores.class);

  private Stores() {}

  /**
   * How a store is opened, beyond where it is.
   *
   * @param clock the wall clock for run creation times
   * @param passwordFile a file whose first line is a PostgreSQL password ({@code --db-password-file}), or
   *     {@code null}
   * @param env the environment, for {@code PGPASSWORD} and {@code PGPASSFILE} ({@link PostgresPassword})
   * @param durability what an acknowledged result must survive (the dialect maps it to its settings)
   */
  public record Options(Clock clock, Path passwordFile, Map<String, String> env, Durability durability) {
    /** The system clock, no password file, this process's environment, {@link Durability#FULL}. */
    public static Options defaults() {
      return new Options(Clock.systemUTC(), null, System.getenv(), Durability.FULL);
    }

    /** These options with the password file {@code file} ({@code null}: none). */
    public Options withPasswordFile(Path file) {
      return new Options(clock, file, env, durability);
    }

    /** These options with the clock {@code clock}. */
    public Options withClock(Clock clock) {
      return new Options(clock, passwordFile, env, durability);
    }

    /** These options with the durability {@code durability}. */
    public Options withDurability(Durability durability) {
      return new Options(clock, passwordFile, env, durability);
    }

    /**
     * Checks that these options fit a store at {@code location}: a password file given for a SQLite file
     * is a mistake (a PostgreSQL {@code --db} that was meant, or a wrapper's leftover), said at once rather
     * than ignored. {@link #open} and {@link #openExisting} check it too; a command calls it before it
     * does anything else.
     *
     * @throws IllegalArgumentException if a password file is given for a SQLite file
     */
    public void requireFitFor(StoreLocation location) {
      if (passwordFile != null && location instanceof StoreLocation.SqliteFile f) {
        throw new IllegalArgumentException(PostgresPassword.FILE_OPTION + " is for a PostgreSQL --db; " + f.describe()
            + " is a SQLite file, which has no password");
      }
    }
  }

  /**
   * Opens the store at {@code location}, creating it if it is a missing SQLite file, and brings its
   * schema up to date.
   *
   * @return an open store; close it when done
   * @throws StoreException if it cannot be opened or migrated, or its password cannot be read (each
   *     message names the store, never a password), or a password file is given for a SQLite file
   */
  public static JdbcStore open(StoreLocation location, Options options) {
    if (location instanceof StoreLocation.SqliteFile f) {
      refusePasswordFile(f, options);
      return SqliteStore.open(f.file(), options.clock(), options.durability());
    }
    StoreLocation.Postgres pg = (StoreLocation.Postgres) location;
    return PostgresStore.open(pg, PostgresPassword.find(pg, options.passwordFile(), options.env()), options.clock(),
        options.durability());
  }

  /**
   * What the store at {@code location} does at {@code durability}, in words for a report: the setting,
   * and when the database forces its log to disk ({@link Dialect#describe}).
   */
  public static String describe(StoreLocation location, Durability durability) {
    return dialect(location).describe(durability);
  }

  /** When the store at {@code location} forces its log to disk at {@code durability}, in words ({@link Dialect#fsyncs}). */
  public static String fsyncs(StoreLocation location, Durability durability) {
    return dialect(location).fsyncs(durability);
  }

  /**
   * Whether {@code failure} says the database at {@code location} could not be reached: a connection
   * refused, cut or timed out, or the server shutting down ({@link Dialect#classify}'s {@code CONNECTION_LOST}
   * anywhere in its causes, or the socket's own exception). A SQLite file is never unreachable in this sense.
   *
   * @param location where the store is
   * @param failure what opening or using it threw
   */
  public static boolean unreachable(StoreLocation location, Throwable failure) {
    if (location instanceof StoreLocation.SqliteFile) {
      return false;
    }
    Dialect dialect = dialect(location);
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof java.sql.SQLException sql && dialect.classify(sql) == Dialect.Failure.CONNECTION_LOST) {
        return true;
      }
      if (t instanceof java.io.EOFException || t instanceof java.net.SocketException
          || t instanceof java.net.SocketTimeoutException) {
        return true;
      }
    }
    return false;
  }

  /**
   * Runs {@code what} (opening the store, a first look at it), and again while it fails because the database
   * cannot be reached ({@link #unreachable}): backing off as a running store does when its connection is lost
   * ({@link JdbcStore#RECONNECT_PATIENCE} in all), so that a coordinator started while its database restarts
   * waits for it instead of giving up at once. Each failed try is logged, naming the store and why.
   *
   * @param location where the store is
   * @param doing what is being done, for the log ({@code "opening"})
   * @param what the work
   * @param <T> what the work returns
   * @return its result
   * @throws StoreException what {@code what} threw last: at once for any other failure, or once the patience
   *     is spent (then with the patience in its message)
   */
  public static <T> T whileUnreachable(StoreLocation location, String doing, java.util.function.Supplier<T> what) {
    dev.failsafe.RetryPolicy<T> policy = JdbcStore.<T>reconnecting(e -> e instanceof StoreException && unreachable(location, e))
        .onRetryScheduled(e -> log.warn("{} {}: cannot reach the database ({}); trying again in {} ms, for up to {} s in all",
            doing, location.describe(), JdbcStore.rootMessage(e.getLastException()), e.getDelay().toMillis(),
            JdbcStore.RECONNECT_PATIENCE.toSeconds()))
        .build();
    try {
      return dev.failsafe.Failsafe.with(policy).get(what::get);
    } catch (StoreException e) {
      if (unreachable(location, e)) {
        throw new StoreException(location.describe() + " could not be reached within " + JdbcStore.RECONNECT_PATIENCE.toSeconds()
            + " s: " + e.getMessage(), e);
      }
      throw e;
    }
  }

  private static Dialect dialect(StoreLocation location) {
    return location instanceof StoreLocation.SqliteFile ? SqliteDialect.INSTANCE : PostgresDialect.INSTANCE;
  }

  /**
   * Opens an existing store whose schema is this Tally's, for reading only; nothing is created or
   * migrated (see {@link SqliteStore#openExisting} and {@link PostgresStore#openExisting}).
   *
   * @return an open, read-only store; close it when done
   * @throws StoreException if there is no such store, its schema is not this Tally's, or it cannot be opened,
   *     or a password file is given for a SQLite file
   */
  public static JdbcStore openExisting(StoreLocation location, Options options) {
    if (location instanceof StoreLocation.SqliteFile f) {
      refusePasswordFile(f, options);
      return SqliteStore.openExisting(f.file());
    }
    StoreLocation.Postgres pg = (StoreLocation.Postgres) location;
    return PostgresStore.openExisting(pg, PostgresPassword.find(pg, options.passwordFile(), options.env()));
  }

  /** {@link Options#requireFitFor}, said as a store's failure to open. */
  private static void refusePasswordFile(StoreLocation.SqliteFile f, Options options) {
    try {
      options.requireFitFor(f);
    } catch (IllegalArgumentException e) {
      throw new StoreException(e.getMessage());
    }
  }
}

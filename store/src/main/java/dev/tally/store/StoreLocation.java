package dev.tally.store;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Where a store is: the one owner of the {@code --db} grammar. A value is either
 *
 * <ul>
 *   <li>{@code postgresql://HOST[:PORT]/DATABASE[?user=USER][&sslmode=MODE]} (or {@code postgres://},
 *       or the user before the host: {@code postgresql://USER@HOST/DATABASE}): a PostgreSQL database,
 *       port 5432 unless given; or
 *   <li>anything else: the path of a SQLite file.
 * </ul>
 *
 * <p>A password is never part of a location: a URL with one ({@code USER:PASSWORD@HOST} or
 * {@code ?password=}) is refused, because a command line is visible to every user of the machine
 * ({@code ps}) and lands in shell histories and logs. It comes from {@code PGPASSWORD}, a file given
 * with {@code --db-password-file}, or {@code PGPASSFILE} ({@link PostgresPassword}).
 *
 * <p>Thread-safety: immutable values.
 */
public sealed interface StoreLocation permits StoreLocation.SqliteFile, StoreLocation.Postgres {

  /** The option every command takes a location with, named in errors. */
  String OPTION = "--db";

  /** PostgreSQL's port when a URL gives none. */
  int DEFAULT_POSTGRES_PORT = 5432;

  /** Where the store is, for messages and logs: the file, or the URL (it never holds a password). */
  String describe();

  /**
   * Parses a {@code --db} value.
   *
   * @param value what the user gave
   * @return the location
   * @throws IllegalArgumentException naming {@code --db} and what is wrong: an empty value, a URL of
   *     another database or a JDBC URL, a PostgreSQL URL without a host or database, with a password,
   *     with an unknown parameter or a bad port, or a path the file system cannot name
   */
  static StoreLocation parse(String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(OPTION + ": empty; give a SQLite file or postgresql://HOST:PORT/DATABASE?user=USER");
    }
    String lower = value.toLowerCase(Locale.ROOT);
    if (lower.startsWith("postgresql://") || lower.startsWith("postgres://")) {
      return Postgres.parseUrl(value);
    }
    if (lower.startsWith("jdbc:")) {
      throw new IllegalArgumentException(OPTION + " " + value + ": a JDBC URL is not accepted; give"
          + " postgresql://HOST:PORT/DATABASE?user=USER for PostgreSQL, or a file path for SQLite");
    }
    int scheme = value.indexOf("://");
    if (scheme > 0 && value.substring(0, scheme).matches("[A-Za-z][A-Za-z0-9+.-]*")) {
      throw new IllegalArgumentException(OPTION + " " + value + ": " + value.substring(0, scheme)
          + ":// is not a store Tally knows; give postgresql://HOST:PORT/DATABASE?user=USER or a SQLite file");
    }
    try {
      return new SqliteFile(Path.of(value));
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException(OPTION + " " + value + ": not a file path: " + e.getReason(), e);
    }
  }

  /**
   * A SQLite file.
   *
   * @param file the store file (it may not exist yet)
   */
  record SqliteFile(Path file) implements StoreLocation {
    @Override
    public String describe() {
      return file.toString();
    }
  }

  /**
   * A PostgreSQL database.
   *
   * @param host the server's host name or address
   * @param port its port
   * @param database the database's name
   * @param user the role to connect as, or {@code null} for the driver's default (the OS user's name)
   * @param sslMode the driver's {@code sslmode} ({@code disable}, {@code require}, {@code verify-full},
   *     ...), or {@code null} for the driver's default
   */
  record Postgres(String host, int port, String database, String user, String sslMode) implements StoreLocation {

    /** The JDBC URL of the database, without user or password (they are passed as properties). */
    public String jdbcUrl() {
      String h = host.contains(":") ? "[" + host + "]" : host; // an IPv6 literal
      return "jdbc:postgresql://" + h + ":" + port + "/" + database;
    }

    /** {@inheritDoc} The URL as the user would write it, without a password (there is none). */
    @Override
    public String describe() {
      String h = host.contains(":") ? "[" + host + "]" : host;
      StringBuilder b = new StringBuilder("postgresql://").append(h).append(':').append(port).append('/').append(database);
      char sep = '?';
      if (user != null) {
        b.append(sep).append("user=").append(user);
        sep = '&';
      }
      if (sslMode != null) {
        b.append(sep).append("sslmode=").append(sslMode);
      }
      return b.toString();
    }

    private static Postgres parseUrl(String value) {
      URI uri;
      try {
        uri = new URI(value);
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException(OPTION + ": not a URL: " + e.getMessage(), e);
      }
      String shown = uri.getScheme() + "://" + (uri.getHost() != null ? uri.getHost() : "") + "...";
      String userInfo = uri.getRawUserInfo();
      String user = null;
      if (userInfo != null) {
        if (userInfo.contains(":")) {
          throw passwordRefused(shown);
        }
        user = decode(userInfo);
      }
      String host = uri.getHost();
      if (host == null || host.isEmpty()) {
        throw new IllegalArgumentException(OPTION + " " + shown + ": no host; give postgresql://HOST:PORT/DATABASE?user=USER");
      }
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      int port = uri.getPort() < 0 ? DEFAULT_POSTGRES_PORT : uri.getPort();
      String path = uri.getRawPath() == null ? "" : uri.getRawPath();
      String database = decode(path.startsWith("/") ? path.substring(1) : path);
      if (database.isEmpty() || database.contains("/")) {
        throw new IllegalArgumentException(OPTION + " " + shown + ": give one database after the host:"
            + " postgresql://HOST:PORT/DATABASE?user=USER");
      }
      String sslMode = null;
      String query = uri.getRawQuery();
      if (query != null && !query.isEmpty()) {
        for (String pair : query.split("&")) {
          int eq = pair.indexOf('=');
          String key = decode(eq < 0 ? pair : pair.substring(0, eq)).toLowerCase(Locale.ROOT);
          String v = eq < 0 ? "" : decode(pair.substring(eq + 1));
          switch (key) {
            case "user" -> user = v;
            case "sslmode" -> sslMode = v;
            case "password" -> throw passwordRefused(shown);
            default -> throw new IllegalArgumentException(OPTION + " " + shown + ": unknown parameter '" + key
                + "'; a PostgreSQL location takes user and sslmode");
          }
        }
      }
      if (user != null && user.isEmpty()) {
        throw new IllegalArgumentException(OPTION + " " + shown + ": user is empty");
      }
      return new Postgres(host, port, database, user, sslMode);
    }

    /** Shows only the scheme and host: the rest of the value holds the password being refused. */
    private static IllegalArgumentException passwordRefused(String shown) {
      return new IllegalArgumentException(OPTION + " " + shown + ": a password in the URL is refused (a command"
          + " line is visible to every user in ps and is kept in shell histories); set PGPASSWORD, or give a file"
          + " holding it with --db-password-file FILE, or use PGPASSFILE");
    }

    private static String decode(String raw) {
      return URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
  }
}

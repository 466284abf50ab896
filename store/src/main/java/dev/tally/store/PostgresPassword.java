package dev.tally.store;

import dev.tally.core.store.StoreException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where the password of a PostgreSQL store comes from, first found wins: the file given with
 * {@code --db-password-file} (its first line), the environment variable {@code PGPASSWORD}, or the
 * password file {@code PGPASSFILE} names, in libpq's format
 * ({@code hostname:port:database:username:password}, {@code *} matching anything, {@code \:} and
 * {@code \\} escapes; the first matching line wins), as {@code psql} reads it. None of them: no password
 * (a server that trusts local connections, or a client certificate). Never from the URL
 * ({@link StoreLocation}).
 *
 * <p>The password is handed to the driver as a property and kept nowhere else: not in a message, a
 * log line, the store or {@link StoreLocation#describe()}.
 *
 * <p>Thread-safety: stateless.
 */
public final class PostgresPassword {

  /** The option that names a password file, in messages. */
  public static final String FILE_OPTION = "--db-password-file";

  private PostgresPassword() {}

  /**
   * The password for {@code location}.
   *
   * @param location the database
   * @param passwordFile the file {@code --db-password-file} gave, or {@code null}
   * @param env the environment ({@code PGPASSWORD}, {@code PGPASSFILE})
   * @return the password, or {@code null} if none is given
   * @throws StoreException if {@code passwordFile} or {@code PGPASSFILE} cannot be read, or the password
   *     file is empty
   */
  public static String find(StoreLocation.Postgres location, Path passwordFile, Map<String, String> env) {
    if (passwordFile != null) {
      List<String> lines = read(passwordFile, FILE_OPTION);
      if (lines.isEmpty() || lines.get(0).isEmpty()) {
        throw new StoreException(FILE_OPTION + " " + passwordFile + ": the file is empty; its first line is the password");
      }
      return lines.get(0);
    }
    String fromEnv = env.get("PGPASSWORD");
    if (fromEnv != null && !fromEnv.isEmpty()) {
      return fromEnv;
    }
    String passFile = env.get("PGPASSFILE");
    if (passFile != null && !passFile.isEmpty()) {
      return fromPassFile(read(Path.of(passFile), "PGPASSFILE"), location);
    }
    return null;
  }

  private static List<String> read(Path file, String source) {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new StoreException(source + " " + file + ": cannot read the password file: " + e.getMessage(), e);
    }
  }

  /** The password of the first line of a libpq password file that matches, or {@code null}. */
  static String fromPassFile(List<String> lines, StoreLocation.Postgres location) {
    String[] wanted = {location.host(), Integer.toString(location.port()), location.database(),
        location.user() != null ? location.user() : System.getProperty("user.name")};
    for (String line : lines) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      List<String> fields = split(line);
      if (fields.size() != 5) {
        continue; // libpq skips a line it cannot read, too
      }
      boolean matches = true;
      for (int i = 0; i < 4 && matches; i++) {
        matches = fields.get(i).equals("*") || fields.get(i).equals(wanted[i]);
      }
      if (matches) {
        return fields.get(4);
      }
    }
    return null;
  }

  /** A password file's line split at unescaped colons, the escapes undone. */
  private static List<String> split(String line) {
    List<String> out = new ArrayList<>(5);
    StringBuilder field = new StringBuilder();
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (c == '\\' && i + 1 < line.length()) {
        field.append(line.charAt(++i));
      } else if (c == ':' && out.size() < 4) {
        out.add(field.toString());
        field.setLength(0);
      } else {
        field.append(c);
      }
    }
    out.add(field.toString());
    return out;
  }
}

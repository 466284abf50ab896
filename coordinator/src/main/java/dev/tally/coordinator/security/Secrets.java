package dev.tally.coordinator.security;

import dev.tally.core.security.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where Tally's tokens come from: a file named by an option, else an environment variable, never an
 * option's value (which {@code ps} and {@code /proc/PID/cmdline} show to every user of the machine). The one
 * owner of how a token is read; {@link Secret} owns what a token may be.
 *
 * <p><b>The rules</b>, the same for every token:
 *
 * <ul>
 *   <li>A file, when one is given, wins; the environment variable is read only without one.
 *   <li>A file holds the token on its first and only line. Trailing line breaks ({@code \n}, {@code \r\n}:
 *       what {@code echo} and editors add) are dropped; nothing else is trimmed, so what remains must be a
 *       valid token ({@link Secret#problem}): a second line, a space, or an empty file is refused, naming
 *       the file and the position, never the content.
 *   <li>A file that does not exist, is a directory, cannot be read or is larger than a token can be is
 *       refused, naming it. A file that other users may read (group or others have read permission, on a
 *       file system with POSIX permissions) is accepted with a warning: the token is only as secret as the
 *       file ({@code chmod 600}).
 *   <li>A variable that is not set gives no token. A variable that is set but empty (after dropping
 *       trailing line breaks) is refused rather than taken as "no token": {@code
 *       TALLY_WORKER_TOKEN=$(cat missing-file)} must not quietly start an open port.
 * </ul>
 *
 * <p>Stateless and thread-safe. Loading does I/O (the file), so it belongs here and not in core.
 */
public final class Secrets {
  private static final Logger log = LoggerFactory.getLogger(Secrets.class);

  /**
   * The largest token file read, in bytes: one token of {@link Secret#MAX_CHARS} characters and a line
   * break. A larger file is not a token file (a key or a certificate named by mistake), and is not read.
   */
  static final int MAX_FILE_BYTES = Secret.MAX_CHARS + 2;

  /** What the worker token is called in messages. */
  public static final String WORKER_TOKEN = "worker token";

  /** What the HTTP API's bearer token is called in messages. */
  public static final String API_TOKEN = "API token";

  private Secrets() {}

  /**
   * The worker token: from {@code file} if given, else from {@link Secret#WORKER_TOKEN_VARIABLE} in {@code
   * environment}, else none.
   *
   * @param file the token file ({@code --worker-token-file}, {@code tally worker --token-file}), or null
   * @param environment the process's environment ({@link System#getenv()}; a map in tests)
   * @return the token, or empty if neither a file nor the variable gives one
   * @throws IllegalArgumentException if the file or the variable is refused (see the class comment); the
   *     message names the file or variable and never holds the token
   */
  public static Optional<Secret> workerToken(Path file, Map<String, String> environment) {
    return load(WORKER_TOKEN, file, Secret.WORKER_TOKEN_VARIABLE, environment);
  }

  /**
   * The HTTP API's bearer token: from {@code file} if given, else from {@link Secret#API_TOKEN_VARIABLE},
   * else none. Same rules and errors as {@link #workerToken}.
   *
   * @throws IllegalArgumentException as {@link #workerToken} does
   */
  public static Optional<Secret> apiToken(Path file, Map<String, String> environment) {
    return load(API_TOKEN, file, Secret.API_TOKEN_VARIABLE, environment);
  }

  /**
   * A token: from {@code file} if given, else from {@code variable} in {@code environment}, else none.
   *
   * @param what what the token is called in messages ("worker token")
   * @throws IllegalArgumentException if the file or the variable is refused (see the class comment)
   */
  public static Optional<Secret> load(String what, Path file, String variable, Map<String, String> environment) {
    Objects.requireNonNull(what, "what");
    Objects.requireNonNull(variable, "variable");
    Objects.requireNonNull(environment, "environment");
    if (file != null) {
      return Optional.of(fromFile(what, file));
    }
    String value = environment.get(variable);
    if (value == null) {
      return Optional.empty();
    }
    String token = withoutTrailingLineBreaks(value);
    if (token.isEmpty()) {
      throw new IllegalArgumentException("the environment variable " + variable + " is set but empty; unset it,"
          + " or set it to the " + what);
    }
    return Optional.of(Secret.of(token, what + " from $" + variable));
  }

  /**
   * A token from a file (see the class comment for the rules).
   *
   * @throws IllegalArgumentException if the file is missing, a directory, unreadable, too large, not UTF-8
   *     text, or does not hold exactly one valid token; the message names the file
   */
  public static Secret fromFile(String what, Path file) {
    Objects.requireNonNull(file, "file");
    String where = what + " file " + file;
    if (Files.isDirectory(file)) {
      throw new IllegalArgumentException(where + " is a directory");
    }
    byte[] bytes;
    try (InputStream in = Files.newInputStream(file)) {
      bytes = in.readNBytes(MAX_FILE_BYTES + 1);
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException(where + " does not exist");
    } catch (AccessDeniedException e) {
      throw new IllegalArgumentException("cannot read the " + where + ": permission denied");
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the " + where + ": " + e.getMessage());
    }
    if (bytes.length > MAX_FILE_BYTES) {
      throw new IllegalArgumentException(where + " is larger than a token can be (more than " + MAX_FILE_BYTES
          + " bytes): is it the right file?");
    }
    String text;
    try {
      text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException(where + " is not text: a token is one line of printable ASCII");
    }
    String token = withoutTrailingLineBreaks(text);
    if (token.isEmpty()) {
      throw new IllegalArgumentException(where + " is empty");
    }
    Secret secret = Secret.of(token, what + " from " + file);
    warnIfOthersCanRead(where, file);
    return secret;
  }

  /** Drops every trailing {@code \n} and {@code \r}; nothing else. */
  static String withoutTrailingLineBreaks(String s) {
    int end = s.length();
    while (end > 0 && (s.charAt(end - 1) == '\n' || s.charAt(end - 1) == '\r')) {
      end--;
    }
    return s.substring(0, end);
  }

  /**
   * Warns if group or others may read {@code file}: a token or a private key is only as secret as its
   * file. Silent where the file system has no POSIX permissions.
   *
   * @param where what the file is, with its name ("worker token file /etc/tally/worker.token")
   */
  static void warnIfOthersCanRead(String where, Path file) {
    Set<PosixFilePermission> permissions;
    try {
      permissions = Files.getPosixFilePermissions(file);
    } catch (UnsupportedOperationException | IOException e) {
      return; // no POSIX permissions here: nothing to judge
    }
    boolean group = permissions.contains(PosixFilePermission.GROUP_READ);
    boolean others = permissions.contains(PosixFilePermission.OTHERS_READ);
    if (group || others) {
      log.warn("the {} can be read by {}: it is only as secret as the file (chmod 600 {})", where,
          others ? "every user of this machine" : "its group", file);
    }
  }
}

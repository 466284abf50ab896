package dev.tally.core.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * A shared secret (the worker token, the API token) that cannot show up where a value is printed: {@link
 * #toString()} names only where it came from ({@code "worker token from /etc/tally/worker.token"}), so a
 * secret passed to a logger, put in an exception message, or printed with its holder's settings says
 * nothing of its value. The value leaves only through {@link #reveal()}, whose callers are the few places
 * that must send it (a Hello's credentials, a child process's environment): searching for that name finds
 * them all.
 *
 * <p><b>What a token may be</b>: 1 to {@value #MAX_CHARS} printable ASCII characters other than space
 * ({@code !} to {@code ~}), so that the same token works as a Hello's credentials, in an environment
 * variable and in an HTTP {@code Authorization: Bearer} header without any encoding. {@code openssl rand
 * -hex 32} makes a good one. Loading it from a file or the environment is {@code
 * dev.tally.coordinator.security.Secrets}'s; this class holds the value and the rules of its use.
 *
 * <p><b>Comparing</b> ({@link #matches}) takes the same time whatever the presented value is: both sides
 * are hashed with SHA-256 and the digests compared with {@link MessageDigest#isEqual} (constant time since
 * JDK 6u17), so neither the position of the first differing byte nor the token's length leaks through the
 * time a refusal takes. This is the one place Tally compares a secret.
 *
 * <p>Immutable and thread-safe. Two instances are never {@code equals} unless they are the same object:
 * equality of values would be a comparison that is not constant-time.
 */
public final class Secret {
  /**
   * The longest token accepted, in characters: far beyond any generated token (64 hex characters for 256
   * bits), short enough to sit in one HTTP header line and one small frame.
   */
  public static final int MAX_CHARS = 4096;

  /** The environment variable a worker token is read from when no file is given. */
  public static final String WORKER_TOKEN_VARIABLE = "TALLY_WORKER_TOKEN";

  /** The environment variable the HTTP API's bearer token is read from when no file is given. */
  public static final String API_TOKEN_VARIABLE = "TALLY_API_TOKEN";

  /**
   * The environment variables that carry Tally's secrets. A process Tally starts for someone else's code
   * (an exec case) gets none of them, whatever the worker's own environment holds.
   */
  public static final List<String> VARIABLES = List.of(WORKER_TOKEN_VARIABLE, API_TOKEN_VARIABLE);

  /** Domain separation for {@link #scopeDigest()}: the digest of a token for another purpose differs. */
  private static final byte[] SCOPE_PREFIX = "tally credential scope v1\0".getBytes(StandardCharsets.US_ASCII);

  private final String value;
  private final byte[] digest;
  private final String description;

  private Secret(String value, String description) {
    this.value = value;
    this.digest = sha256(value.getBytes(StandardCharsets.US_ASCII));
    this.description = description;
  }

  /**
   * A secret with the given value.
   *
   * @param value the token itself
   * @param description what it is and where it came from, for messages ({@code "worker token from
   *     $TALLY_WORKER_TOKEN"}); never the value
   * @throws IllegalArgumentException if {@code value} is empty, longer than {@value #MAX_CHARS} characters or
   *     holds a character outside {@code !} to {@code ~}; the message names the description and the
   *     offending character's position and code, never the value
   * @throws NullPointerException if an argument is null
   */
  public static Secret of(String value, String description) {
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(description, "description");
    String problem = problem(value);
    if (problem != null) {
      throw new IllegalArgumentException(description + " " + problem);
    }
    return new Secret(value, description);
  }

  /**
   * Why {@code value} cannot be a token, as the end of a sentence ("is empty", "has a space at position
   * 7 ..."), or null if it can. Never quotes the value.
   */
  public static String problem(String value) {
    if (value.isEmpty()) {
      return "is empty";
    }
    if (value.length() > MAX_CHARS) {
      return "is " + value.length() + " characters long; a token is at most " + MAX_CHARS;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < '!' || c > '~') {
        String what = c == ' ' ? "a space" : c == '\n' || c == '\r' ? "a line break"
            : c == '\t' ? "a tab" : "the character U+" + String.format("%04X", (int) c);
        return "has " + what + " at position " + (i + 1) + " of " + value.length()
            + "; a token is one line of printable ASCII without spaces (openssl rand -hex 32 makes one)";
      }
    }
    return null;
  }

  /**
   * Whether {@code presented} is this secret, in time that does not depend on where it differs or on its
   * length (see the class comment).
   *
   * @param presented what a peer sent; null or empty never matches
   */
  public boolean matches(String presented) {
    if (presented == null) {
      presented = "";
    }
    byte[] other = sha256(presented.getBytes(StandardCharsets.UTF_8));
    // Hashing first makes both sides 32 bytes: isEqual's time then depends on neither value.
    return MessageDigest.isEqual(digest, other);
  }

  /**
   * The value itself, for the few places that must send it: a Hello's credentials, the environment of a
   * worker process this process starts. Never log, print or store what this returns.
   */
  public String reveal() {
    return value;
  }

  /**
   * A digest that stands for this secret where its holder must be told apart but the secret must not be
   * kept (the HTTP API scopes idempotency keys by the credential that sent them): 64 lowercase hex
   * characters of SHA-256 over a fixed prefix and the value. The same value always gives the same digest;
   * with a high-entropy token it cannot be turned back into the value.
   */
  public String scopeDigest() {
    MessageDigest sha = sha256();
    sha.update(SCOPE_PREFIX);
    sha.update(value.getBytes(StandardCharsets.US_ASCII));
    return HexFormat.of().formatHex(sha.digest());
  }

  /** What this secret is and where it came from, as given when it was made; never its value. */
  public String description() {
    return description;
  }

  /** The description (see {@link #description()}); never the value. */
  @Override
  public String toString() {
    return description;
  }

  private static byte[] sha256(byte[] bytes) {
    return sha256().digest(bytes);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }
}

package dev.tally.http;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The API's credential check: {@code Authorization: Bearer TOKEN} (RFC 6750 section 2.1), compared with
 * the server's token in constant time. The server keeps only the token's SHA-256 digest; the digest
 * also names the idempotency scope of whoever holds the token ({@link #scope()}), so keys are scoped to
 * the credential without the credential being stored.
 *
 * <p>Thread-safety: immutable.
 */
final class BearerAuth {
  /** The idempotency scope of requests to a server without a token. */
  static final String ANONYMOUS = "anonymous";

  /** The {@code WWW-Authenticate} challenge for a request with no credentials (RFC 6750 section 3). */
  static final String CHALLENGE = "Bearer realm=\"tally\"";

  /** The challenge for a request whose token is wrong (RFC 6750 section 3.1, {@code invalid_token}). */
  static final String CHALLENGE_INVALID = "Bearer realm=\"tally\", error=\"invalid_token\"";

  private final byte[] tokenDigest;

  private BearerAuth(byte[] tokenDigest) {
    this.tokenDigest = tokenDigest;
  }

  /** A check for {@code token}, or none (every request admitted) if {@code token} is null. */
  static BearerAuth of(String token) {
    return new BearerAuth(token == null ? null : sha256(token));
  }

  /** Whether requests need a token. */
  boolean required() {
    return tokenDigest != null;
  }

  /**
   * Judges an {@code Authorization} header.
   *
   * @param authorization the header's value, or null if absent
   * @return null if admitted, else the {@code WWW-Authenticate} challenge to answer 401 with
   */
  String challenge(String authorization) {
    if (tokenDigest == null) {
      return null;
    }
    if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return CHALLENGE;
    }
    byte[] given = sha256(authorization.substring(7).strip());
    // Digests of equal length, compared without an early exit: the time taken says nothing of the token.
    return MessageDigest.isEqual(given, tokenDigest) ? null : CHALLENGE_INVALID;
  }

  /** The idempotency scope: a digest of the credential, or {@link #ANONYMOUS} without one. */
  String scope() {
    return tokenDigest == null ? ANONYMOUS : "sha256:" + HexFormat.of().formatHex(tokenDigest);
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  @Override
  public String toString() {
    return tokenDigest == null ? "no token" : "a bearer token"; // never the token, nor its digest
  }
}

package dev.tally.http;

import dev.tally.core.security.Secret;
import dev.tally.core.store.IdempotencyRules;


/**
 * The API's credential check: {@code Authorization: Bearer TOKEN} (RFC 6750 section 2.1), compared with
 * the server's token in constant time ({@link Secret#matches}). The token's scope digest names the
 * idempotency scope of whoever holds it ({@link #scope()}), so keys are scoped to the credential without
 * the credential being stored.
 *
 * <p>Thread-safety: immutable.
 */
final class BearerAuth {
  /** The challenge for a request with no credentials (RFC 6750 section 3). */
  static final String CHALLENGE = "Bearer realm=\"tally\"";

  /** The challenge for a request whose token is wrong (RFC 6750 section 3.1, {@code invalid_token}). */
  static final String CHALLENGE_INVALID = "Bearer realm=\"tally\", error=\"invalid_token\"";

  private final Secret token;

  private BearerAuth(Secret token) {
    this.token = token;
  }

  /** A check for {@code token}, or none (every request admitted) if {@code token} is null. */
  static BearerAuth of(Secret token) {
    return new BearerAuth(token);
  }

  /** Whether requests need a token. */
  boolean required() {
    return token != null;
  }

  /**
   * Judges an {@code Authorization} header.
   *
   * @param authorization the header's value, or null if absent
   * @return null if admitted, else the {@code WWW-Authenticate} challenge to answer 401 with
   */
  String challenge(String authorization) {
    if (token == null) {
      return null;
    }
    if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return CHALLENGE;
    }
    return token.matches(authorization.substring(7).strip()) ? null : CHALLENGE_INVALID; // constant time
  }

  /** The idempotency scope of whoever holds the credential ({@link IdempotencyRules#scopeOf}). */
  String scope() {
    return IdempotencyRules.scopeOf(token);
  }

  @Override
  public String toString() {
    return token == null ? "no token" : "a bearer token"; // never the token, nor its digest
  }
}

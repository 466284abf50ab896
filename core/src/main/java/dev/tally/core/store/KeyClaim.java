package dev.tally.core.store;

import java.util.Objects;

/**
 * What {@link Store#claimKey} found for an idempotency key: exactly one of three answers (the rule is
 * {@link IdempotencyRules#claim}).
 */
public sealed interface KeyClaim {

  /**
   * The key is this request's now: it had no row, its completed row had expired, or the request that held
   * it stopped renewing its hold (taken over). Complete it with the run ({@link KeyCompletion}) or release
   * it ({@link Store#releaseKey}).
   *
   * @param reservationToken names this request's hold; a takeover issues a new one, so an earlier holder's
   *     completion is refused
   */
  record Claimed(String reservationToken) implements KeyClaim {
    public Claimed {
      Objects.requireNonNull(reservationToken, "reservationToken");
    }
  }

  /**
   * Another request holds the key and is still being processed (answer 409 with {@code Retry-After}).
   *
   * @param holdUntilMillis when its hold ends unless renewed, epoch ms
   */
  record InProgress(long holdUntilMillis) implements KeyClaim {}

  /**
   * The key's request completed: replay its response if the fingerprints match, else refuse (422).
   *
   * @param fingerprint the completed request's fingerprint
   * @param runId the run it created
   * @param response its response, to replay byte for byte
   */
  record Completed(String fingerprint, long runId, StoredResponse response) implements KeyClaim {
    public Completed {
      Objects.requireNonNull(fingerprint, "fingerprint");
      Objects.requireNonNull(response, "response");
    }
  }
}

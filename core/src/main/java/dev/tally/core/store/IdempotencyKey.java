package dev.tally.core.store;

import java.util.Objects;

/**
 * One idempotency key's row, as the store keeps it and {@link IdempotencyRules} reads it: either held by a
 * request still being processed, or completed with the response to replay.
 *
 * @param scope the key's scope (a digest of the credential that sent it)
 * @param key the key as the client sent it
 * @param completed false while a request holds it, true once its run and response committed
 * @param reservationToken the holder's token while in progress; null once completed
 * @param holdUntilMillis while in progress, when the hold ends unless renewed, epoch ms; 0 once completed
 * @param fingerprint the request's fingerprint: once completed always, while in progress if the claim knew it
 *     (else null)
 * @param runId the run the completed request created; 0 while in progress
 * @param response the response to replay; null while in progress
 * @param createdAtMillis when the row was written (claimed, or taken over), epoch ms
 * @param expiresAtMillis once completed, when it stops being replayed, epoch ms; 0 while in progress
 */
public record IdempotencyKey(
    String scope, String key, boolean completed, String reservationToken, long holdUntilMillis, String fingerprint,
    long runId, StoredResponse response, long createdAtMillis, long expiresAtMillis) {
  public IdempotencyKey {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    if (completed) {
      Objects.requireNonNull(fingerprint, "fingerprint");
      Objects.requireNonNull(response, "response");
    } else {
      Objects.requireNonNull(reservationToken, "reservationToken");
    }
  }

  /** A row held by a request in progress. */
  public static IdempotencyKey held(String scope, String key, String reservationToken, long holdUntilMillis,
      String fingerprint, long nowMillis) {
    return new IdempotencyKey(scope, key, false, reservationToken, holdUntilMillis, fingerprint, 0, null, nowMillis, 0);
  }

  /** This row held until {@code holdUntilMillis} instead. */
  public IdempotencyKey heldUntil(long holdUntilMillis) {
    return new IdempotencyKey(scope, key, false, reservationToken, holdUntilMillis, fingerprint, 0, null, createdAtMillis, 0);
  }

  /** The completed row of this key. */
  public IdempotencyKey completedWith(String fingerprint, long runId, StoredResponse response, long expiresAtMillis) {
    return new IdempotencyKey(scope, key, true, null, 0, fingerprint, runId, response, createdAtMillis, expiresAtMillis);
  }
}

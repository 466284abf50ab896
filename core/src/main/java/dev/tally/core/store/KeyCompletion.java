package dev.tally.core.store;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The idempotency key a run's creation completes, in the creation's own transaction: the run, its jobs and
 * the key's completed row (fingerprint and response) commit together, or nothing does.
 *
 * @param scope the key's scope (a digest of the API credential: {@link IdempotencyRules#scopeOf})
 * @param key the key as the client sent it
 * @param reservationToken the hold {@link KeyClaim.Claimed} gave; if the key is no longer held under it
 *     (the hold passed and another request took the key over), nothing is written
 * @param fingerprint the request's fingerprint, asked for once every case was pulled (a streamed body's
 *     digest is complete only then)
 * @param ttl how long the completed key is kept (replayed) after completion
 * @param render the response to store, rendered inside the transaction from the run as it will commit
 */
public record KeyCompletion(
    String scope, String key, String reservationToken, Supplier<String> fingerprint, Duration ttl,
    Function<RunView, StoredResponse> render) {
  /**
   * @throws IllegalArgumentException if the time to keep the key is not positive
   */
  public KeyCompletion {
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(reservationToken, "reservationToken");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(ttl, "ttl");
    Objects.requireNonNull(render, "render");
    if (ttl.isZero() || ttl.isNegative()) {
      throw new IllegalArgumentException("a key's time to live must be positive, got " + ttl);
    }
  }
}

package dev.tally.core.store;

import dev.tally.core.security.Secret;
import java.time.Duration;
import java.util.Optional;

/**
 * What an idempotency key's row means, written once (as {@link BatchRules} is for batches): every store
 * claims, renews, releases, completes and purges keys through these rules, over the primitive reads and
 * writes of one transaction ({@link StoreTransaction}). After draft-ietf-httpapi-idempotency-key-header-07:
 * one key and one request make one run however often the request is sent.
 *
 * <h2>Rules</h2>
 *
 * <ul>
 *   <li><b>Scope.</b> Keys are per scope, a digest of the API credential that sent them ({@link #scopeOf});
 *       the credential itself is never stored. Two clients with different credentials cannot collide.
 *   <li><b>Claim</b> ({@link #claim}): no row, or a completed row past its expiry, or a row held by a request
 *       whose hold has passed (it died, or stopped renewing): the key is the claimant's, under a new
 *       reservation token. A completed row not yet expired: {@link KeyClaim.Completed}. A row held by a live
 *       request: {@link KeyClaim.InProgress}. A new row is inserted, never upserted, so the store's primary
 *       key is the backstop if two claims ever raced past the transaction.
 *   <li><b>Hold.</b> An in-progress row is held until a time the claimant gives; the claimant renews it
 *       while its request lives ({@link #renew}), so a request that died holds its key at most one hold.
 *       Only the holder's token renews, releases or completes.
 *   <li><b>Completion</b> ({@link #complete}) turns the holder's row into a completed one with the
 *       fingerprint, the run and the response, kept until {@code ttl} after completion; in the transaction
 *       that creates the run. A holder that lost its hold completes nothing ({@link
 *       KeyReservationLostException}), and its transaction writes nothing.
 *   <li><b>Purge</b> ({@link #purge}): completed rows past their expiry, and in-progress rows more than
 *       {@link #PURGE_GRACE} past their hold, are deleted. A purged key is a new key.
 * </ul>
 *
 * <p>Stateless; thread-safe.
 */
public final class IdempotencyRules {
  private IdempotencyRules() {}

  /** The longest key, as the draft's examples and common practice bound it (Stripe: 255). */
  public static final int MAX_KEY_CHARS = 255;

  /** The scope of keys sent without a credential. */
  public static final String ANONYMOUS_SCOPE = "anonymous";

  /**
   * How long past its hold an in-progress row is kept before it is purged: a row past its hold is taken over
   * by the next claim anyway, so this only bounds the table; an hour leaves a dead request's row readable
   * for a while to whoever investigates.
   */
  public static final Duration PURGE_GRACE = Duration.ofHours(1);

  /**
   * The scope of keys sent with {@code credential}: {@code sha256:} and its {@link Secret#scopeDigest()},
   * so the credential never reaches the store; {@link #ANONYMOUS_SCOPE} for none.
   *
   * @param credential the API credential the request came with (the bearer token), or null for none
   */
  public static String scopeOf(Secret credential) {
    return credential == null ? ANONYMOUS_SCOPE : "sha256:" + credential.scopeDigest();
  }

  /**
   * What is wrong with {@code key} as an idempotency key, or empty if it is one: 1 to {@link
   * #MAX_KEY_CHARS} printable ASCII characters (space to tilde).
   */
  public static Optional<String> keyProblem(String key) {
    if (key == null || key.isEmpty()) {
      return Optional.of("an idempotency key must not be empty");
    }
    if (key.length() > MAX_KEY_CHARS) {
      return Optional.of("an idempotency key is at most " + MAX_KEY_CHARS + " characters, got " + key.length());
    }
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c < 0x20 || c > 0x7E) {
        return Optional.of("an idempotency key is printable ASCII; character " + (i + 1) + " is not");
      }
    }
    return Optional.empty();
  }

  /**
   * Claims {@code key} for a request (see the class doc), inside the caller's open transaction.
   *
   * @param fingerprint the request's fingerprint if known now, else null (it is given at completion)
   * @param holdUntilMillis until when a new hold lasts unless renewed, epoch ms
   * @throws IllegalArgumentException if the key is not a valid key ({@link #keyProblem}) or the hold ends
   *     before now
   */
  public static KeyClaim claim(StoreTransaction tx, String scope, String key, String fingerprint, long nowMillis,
      long holdUntilMillis) {
    keyProblem(key).ifPresent(p -> {
      throw new IllegalArgumentException(p);
    });
    if (holdUntilMillis < nowMillis) {
      throw new IllegalArgumentException("a hold must end after now, got " + holdUntilMillis + " < " + nowMillis);
    }
    IdempotencyKey row = tx.key(scope, key);
    if (row != null && row.completed() && row.expiresAtMillis() > nowMillis) {
      return new KeyClaim.Completed(row.fingerprint(), row.runId(), row.response());
    }
    if (row != null && !row.completed() && row.holdUntilMillis() > nowMillis) {
      return new KeyClaim.InProgress(row.holdUntilMillis());
    }
    String token = tx.newReservationToken();
    IdempotencyKey held = IdempotencyKey.held(scope, key, token, holdUntilMillis, fingerprint, nowMillis);
    if (row == null) {
      tx.insertKey(held);
    } else {
      tx.updateKey(held); // an expired completion, or a hold that passed: taken over
    }
    return new KeyClaim.Claimed(token);
  }

  /** Whether {@code row} is held under {@code reservationToken}. */
  static boolean heldBy(IdempotencyKey row, String reservationToken) {
    return row != null && !row.completed() && row.reservationToken().equals(reservationToken);
  }

  /**
   * Extends the hold of a key the caller holds.
   *
   * @return whether the key was still held under the token (and so was renewed)
   */
  public static boolean renew(StoreTransaction tx, String scope, String key, String reservationToken,
      long holdUntilMillis) {
    IdempotencyKey row = tx.key(scope, key);
    if (!heldBy(row, reservationToken)) {
      return false;
    }
    tx.updateKey(row.heldUntil(holdUntilMillis));
    return true;
  }

  /**
   * Gives up a key the caller holds (its request ends with nothing worth replaying); a no-op if it is not
   * held under the token.
   *
   * @return whether the key was released
   */
  public static boolean release(StoreTransaction tx, String scope, String key, String reservationToken) {
    if (!heldBy(tx.key(scope, key), reservationToken)) {
      return false;
    }
    tx.deleteKey(scope, key);
    return true;
  }

  /**
   * Completes the key of {@code completion} with {@code run}, inside the transaction that creates the run.
   *
   * @return the stored response
   * @throws KeyReservationLostException if the key is no longer held under the completion's token; the
   *     caller must roll back
   * @throws IllegalStateException if the claim gave a fingerprint and the completion gives another
   */
  public static StoredResponse complete(StoreTransaction tx, KeyCompletion completion, RunView run, long nowMillis)
      throws KeyReservationLostException {
    IdempotencyKey row = tx.key(completion.scope(), completion.key());
    if (!heldBy(row, completion.reservationToken())) {
      throw new KeyReservationLostException(completion.scope(), completion.key());
    }
    String fingerprint = java.util.Objects.requireNonNull(completion.fingerprint().get(), "fingerprint");
    if (row.fingerprint() != null && !row.fingerprint().equals(fingerprint)) {
      throw new IllegalStateException("the key was claimed with fingerprint " + row.fingerprint()
          + " and is completed with " + fingerprint + ": one request, two fingerprints");
    }
    StoredResponse response = completion.render().apply(run);
    tx.updateKey(row.completedWith(fingerprint, run.runId(), response, nowMillis + completion.ttl().toMillis()));
    return response;
  }

  /**
   * Deletes the keys that are over: completed rows past their expiry, in-progress rows more than {@link
   * #PURGE_GRACE} past their hold.
   *
   * @return how many rows were deleted
   */
  public static int purge(StoreTransaction tx, long nowMillis) {
    return tx.deleteKeys(nowMillis, nowMillis - PURGE_GRACE.toMillis());
  }
}

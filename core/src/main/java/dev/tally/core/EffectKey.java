package dev.tally.core;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The idempotency key of one case of one run: what an evaluator hands to whatever it acts on outside Tally
 * (a database row, a paid API, a message) so that the receiver can make a repeated attempt harmless.
 *
 * <p><b>Why.</b> Tally records each case's outcome exactly once (fenced, idempotent recording), but it
 * delivers each case at least once: a worker killed after its case wrote somewhere else and before its
 * result reached the store runs the case again elsewhere. Exactly-once stops at the store. A receiver that
 * stores this key in the same transaction as the effect (an inbox table with the key as primary key) sees
 * the second attempt's key already there and does nothing: the effect happens once.
 *
 * <p><b>What it is.</b> {@code "tally-"} followed by 32 lowercase hex characters: the first 128 bits of
 * SHA-256 over a version tag and the length-prefixed parts (store id, run id, case id). So it is
 *
 * <ul>
 *   <li>the same for every attempt of one case of one run, on any worker, after any redelivery or
 *       coordinator restart: none of the parts changes;
 *   <li>different for every other case, every other run (a dataset run again is a new run: its effects are
 *       new too) and every other store (run ids restart at 1 in a new store);
 *   <li>unambiguous: each part is prefixed with its length, so ({@code "a:b"}, {@code "c"}) and ({@code
 *       "a"}, {@code "b:c"}) cannot give one key.
 * </ul>
 *
 * 128 bits make an accidental collision among even 10^12 keys a chance below 10^-14. The key is not a
 * secret and proves nothing: it names a case, it does not authorise anything.
 *
 * <p>The exec evaluator passes it as {@code TALLY_IDEMPOTENCY_KEY}; {@code examples/exactly-once-effect/}
 * shows a receiver. Byte layout hashed, for anyone who must compute it elsewhere: the ASCII bytes {@code
 * tally-effect-key-v1}, then for each of store id (UTF-8), run id (8 bytes, big-endian two's complement)
 * and case id (UTF-8): its length as 4 bytes big-endian, then its bytes.
 *
 * <p>Stateless and thread-safe.
 */
public final class EffectKey {
  /** What every key starts with, so that one is recognisable in a log or a receiver's table. */
  public static final String PREFIX = "tally-";

  /** Hex characters after the prefix: 128 bits of the digest. */
  public static final int HEX_CHARS = 32;

  private static final byte[] VERSION_TAG = "tally-effect-key-v1".getBytes(StandardCharsets.US_ASCII);

  private EffectKey() {}

  /**
   * The key of case {@code caseId} of run {@code runId} in the store {@code storeId}.
   *
   * @param storeId the store's identity ({@link dev.tally.core.store.Store#storeId()}; a worker has it from
   *     its Welcome); may be empty
   * @param runId the run's id in that store
   * @param caseId the case's {@code id} from the dataset
   * @return {@value #PREFIX} and {@value #HEX_CHARS} lowercase hex characters
   * @throws NullPointerException if {@code storeId} or {@code caseId} is null
   */
  public static String of(String storeId, long runId, String caseId) {
    Objects.requireNonNull(storeId, "storeId");
    Objects.requireNonNull(caseId, "caseId");
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
    sha.update(VERSION_TAG);
    part(sha, storeId.getBytes(StandardCharsets.UTF_8));
    part(sha, ByteBuffer.allocate(Long.BYTES).putLong(runId).array());
    part(sha, caseId.getBytes(StandardCharsets.UTF_8));
    return PREFIX + HexFormat.of().formatHex(sha.digest(), 0, HEX_CHARS / 2);
  }

  private static void part(MessageDigest sha, byte[] bytes) {
    sha.update(ByteBuffer.allocate(Integer.BYTES).putInt(bytes.length).array());
    sha.update(bytes);
  }
}

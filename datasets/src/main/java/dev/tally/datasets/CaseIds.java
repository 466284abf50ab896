package dev.tally.datasets;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Ids for cases that have none, made from their content, never their position: {@code c-} and the first
 * {@link #DIGEST_HEX_CHARS} hex digits of the SHA-256 of the case's canonical JSON (fields sorted by name at
 * every depth, no white space). A dataset that is re-ordered, trimmed or extended keeps every case's id, so a
 * resumed run still matches its stored outcomes. Cases with identical content get the same digest; the
 * second and later get {@code ~2}, {@code ~3}... in their order of appearance ({@link #next}).
 *
 * <p>Also the seeded hash by which {@code --sample} chooses cases ({@link #sampleRank}).
 *
 * <p>Thread-safety: an instance remembers the digests it gave, for one pass over one dataset; one thread.
 */
public final class CaseIds {
  /** The prefix of a made id: says at a glance that the file gave none. */
  public static final String PREFIX = "c-";

  /**
   * Hex digits of the digest kept: 48 bits, so that two different cases among a million share an id with a
   * chance of about 2e-3 (birthday bound, n^2 / 2^49); a clash is then refused as a repeated id, never merged.
   */
  public static final int DIGEST_HEX_CHARS = 12;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, Integer> seen = new HashMap<>();

  /**
   * The id of the next case without one, in dataset order: its digest id, with {@code ~N} if the same
   * content came {@code N - 1} times before in this pass.
   *
   * @param content the case without an {@code id} field
   */
  public String next(ObjectNode content) {
    String id = digestId(content);
    int n = seen.merge(id, 1, Integer::sum);
    return n == 1 ? id : id + "~" + n;
  }

  /** The digest id of a case's content, without the {@code ~N} of a repeat. */
  public static String digestId(ObjectNode content) {
    byte[] bytes = canonical(content).getBytes(StandardCharsets.UTF_8);
    return PREFIX + HexFormat.of().formatHex(sha256().digest(bytes)).substring(0, DIGEST_HEX_CHARS);
  }

  /** The canonical JSON text of a value: object fields sorted by name at every depth, no white space. */
  public static String canonical(JsonNode value) {
    try {
      return JSON.writeValueAsString(sorted(value));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of JSON nodes always writes", e);
    }
  }

  private static JsonNode sorted(JsonNode node) {
    if (node.isObject()) {
      List<String> names = new ArrayList<>();
      node.fieldNames().forEachRemaining(names::add);
      names.sort(null);
      ObjectNode copy = JsonNodeFactory.instance.objectNode();
      for (String name : names) {
        copy.set(name, sorted(node.get(name)));
      }
      return copy;
    }
    if (node.isArray()) {
      var copy = JsonNodeFactory.instance.arrayNode();
      for (Iterator<JsonNode> it = node.elements(); it.hasNext(); ) {
        copy.add(sorted(it.next()));
      }
      return copy;
    }
    return node;
  }

  /**
   * The rank of a case in a seeded sample: the first 8 bytes of SHA-256 over the seed and the id, as an
   * unsigned number; the sample is the cases of smallest rank. It depends only on (seed, id), so the sample
   * is the same whatever the file's order.
   */
  public static long sampleRank(long seed, String caseId) {
    MessageDigest sha = sha256();
    for (int i = 7; i >= 0; i--) {
      sha.update((byte) (seed >>> (8 * i)));
    }
    byte[] d = sha.digest(caseId.getBytes(StandardCharsets.UTF_8));
    long rank = 0;
    for (int i = 0; i < 8; i++) {
      rank = (rank << 8) | (d[i] & 0xFF);
    }
    return rank;
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }
}

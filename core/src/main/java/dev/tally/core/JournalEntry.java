package dev.tally.core;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A paid call's response as an attempt journals it: the coordinator keeps it in its store under the job's
 * run and case and the request's digest, once the attempt's lease is found current (a stale holder's entry
 * is refused, like its result), so that no later attempt of the case pays for that request again.
 *
 * <p>The limits below are the protocol's and the store's alike (one owner): an entry over them is refused
 * where it is made, so it never reaches a frame or a row.
 *
 * @param jobId the job of the attempt that paid
 * @param token the attempt's fencing token, as its Assign gave it
 * @param requestDigest the request's digest: 1 to {@value #MAX_DIGEST_CHARS} lower-case hex digits (an
 *     evaluator uses SHA-256's 64)
 * @param response the response as received, at most {@value #MAX_RESPONSE_BYTES} bytes in UTF-8
 * @param usage the tokens the response reports it used ({@link TokenUsage#NONE} if it reports none): the
 *     run's token counters move by it when the entry is stored, and only then (a refused entry was paid
 *     for by a stale holder whose response the run does not use, but a stored one is the run's spend)
 */
public record JournalEntry(long jobId, long token, String requestDigest, String response, TokenUsage usage) {

  /**
   * The largest response journalled, in UTF-8 bytes. A chat completion is a few KiB, a long one some tens;
   * 1 MiB leaves room for any answer a scorer reads while keeping one response well inside one frame
   * (the worker port's default frame limit is 4 MiB) together with its case.
   */
  public static final int MAX_RESPONSE_BYTES = 1 << 20;

  /** The longest request digest: a SHA-512 in hex; SHA-256's 64 is what evaluators use. */
  public static final int MAX_DIGEST_CHARS = 128;

  /**
   * The most journalled bytes (responses and digests, UTF-8) one Assign carries. Two full-size responses:
   * with a case of up to 1 MiB the Assign stays under the default 4 MiB frame limit. Responses past it are
   * left out of the Assign (oldest first are kept), and the attempt pays for those again: a case that makes
   * more than a few megabytes of calls is not what the journal is sized for.
   */
  public static final int MAX_ASSIGNMENT_JOURNAL_BYTES = 2 << 20;

  /**
   * @throws NullPointerException if the digest or the response is null
   * @throws IllegalArgumentException if either breaks its limit (see {@link #problem})
   */
  public JournalEntry {
    Objects.requireNonNull(usage, "usage");
    Objects.requireNonNull(requestDigest, "requestDigest");
    Objects.requireNonNull(response, "response");
    String problem = problem(requestDigest, response);
    if (problem != null) {
      throw new IllegalArgumentException("journal entry for job " + jobId + ": " + problem);
    }
  }

  /** An entry whose response reports no token usage. */
  public JournalEntry(long jobId, long token, String requestDigest, String response) {
    this(jobId, token, requestDigest, response, TokenUsage.NONE);
  }

  /**
   * Why a digest and a response cannot be journalled, or null if they can: the one check, for the
   * worker that makes an entry and the coordinator that reads one off the wire.
   */
  public static String problem(String requestDigest, String response) {
    if (requestDigest.isEmpty() || requestDigest.length() > MAX_DIGEST_CHARS) {
      return "request digest must be 1 to " + MAX_DIGEST_CHARS + " hex digits, got " + requestDigest.length()
          + " characters";
    }
    for (int i = 0; i < requestDigest.length(); i++) {
      char c = requestDigest.charAt(i);
      if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
        return "request digest must be lower-case hex, got '" + c + "' at index " + i;
      }
    }
    int bytes = utf8Length(response);
    if (bytes > MAX_RESPONSE_BYTES) {
      return "response is " + bytes + " bytes, above the journal's limit of " + MAX_RESPONSE_BYTES + " bytes";
    }
    return null;
  }

  /** The UTF-8 length of {@code s}, in bytes, without encoding it. */
  public static int utf8Length(String s) {
    if (s.length() > MAX_RESPONSE_BYTES) {
      return s.getBytes(StandardCharsets.UTF_8).length; // long anyway: no need to be clever
    }
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /** What became of a journal entry, after the store's commit. */
  public enum Status {
    /** The response is now in the store. */
    STORED,
    /** The store already had a response for this request of this case: the first one stays. */
    ALREADY_STORED,
    /** The token is not the job's current lease: nothing was stored, and the attempt must stop. */
    FENCED
  }
}

package dev.tally.http;

import dev.tally.core.store.IdempotencyRules;
import java.util.List;

/**
 * Reads the {@code Idempotency-Key} request header (draft-ietf-httpapi-idempotency-key-header-07, section
 * 2.1): an RFC 8941 Item whose value is an sf-string, e.g. {@code Idempotency-Key:
 * "8e03978e-40d5-43e8-bc93-6894a57f9324"}. Tally takes the key as the string's content, 1 to {@value
 * IdempotencyRules#MAX_KEY_CHARS} printable ASCII characters, and accepts it quoted (as the draft says) or bare (as many
 * clients send it: {@code Idempotency-Key: 8e03978e-...}); both name the same key. A field given twice is
 * refused: the draft forbids more than one.
 *
 * <p>Thread-safety: stateless.
 */
final class IdempotencyKeyHeader {
  /** The header's name. */
  static final String NAME = "Idempotency-Key";


  private IdempotencyKeyHeader() {}

  /**
   * The key of a request.
   *
   * @param values every value of the header in the request (empty if absent)
   * @param required whether the route requires a key
   * @return the key, or null if absent and not required
   * @throws ProblemException 400 naming the header: absent where required, given twice, not an sf-string
   *     or a bare key of 1 to {@value IdempotencyRules#MAX_KEY_CHARS} printable ASCII characters
   */
  static String parse(List<String> values, boolean required) {
    if (values == null || values.isEmpty()) {
      if (required) {
        throw ProblemException.header(ProblemType.MISSING_IDEMPOTENCY_KEY, NAME,
            "this request needs an Idempotency-Key header: a key the client makes once for this submission and sends"
                + " again with every retry of it, e.g. Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\"");
      }
      return null;
    }
    if (values.size() > 1) {
      throw invalid("the request has " + values.size() + " Idempotency-Key headers; send exactly one");
    }
    String raw = values.get(0).strip();
    String key = raw.startsWith("\"") ? unquote(raw) : raw;
    IdempotencyRules.keyProblem(key).ifPresent(problem -> {
      throw invalid(problem);
    });
    return key;
  }

  /** The content of an RFC 8941 sf-string (section 3.3.3): quotes around, {@code \"} and {@code \\} escaped. */
  private static String unquote(String s) {
    StringBuilder key = new StringBuilder(s.length());
    for (int i = 1; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\') {
        if (i + 1 >= s.length() || (s.charAt(i + 1) != '"' && s.charAt(i + 1) != '\\')) {
          throw invalid("in a quoted key, a backslash may only escape \" or \\ (RFC 8941 section 3.3.3)");
        }
        key.append(s.charAt(++i));
      } else if (c == '"') {
        if (i != s.length() - 1) {
          throw invalid("the quoted key ends before the end of the header; quote the whole key once");
        }
        return key.toString();
      } else {
        key.append(c);
      }
    }
    throw invalid("the quoted key has no closing quote");
  }

  private static ProblemException invalid(String detail) {
    return ProblemException.header(ProblemType.INVALID_IDEMPOTENCY_KEY, NAME, detail);
  }
}

package dev.tally.core.store;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;

/**
 * A response kept with an idempotency key, to be replayed byte for byte to a retry of the same request.
 *
 * @param status the HTTP status
 * @param contentType its content type
 * @param headers the headers to replay besides the content type (e.g. {@code Location}), in order
 * @param body the body's bytes (not copied: treat as read-only)
 */
public record StoredResponse(int status, String contentType, Map<String, String> headers, byte[] body) {
  /** The largest response body kept: a run object is a few KiB; a key must not become a blob store. */
  public static final int MAX_BODY_BYTES = 1 << 20;

  /**
   * @throws IllegalArgumentException if the status is not an HTTP status or the body is over {@link #MAX_BODY_BYTES}
   */
  public StoredResponse {
    Objects.requireNonNull(contentType, "contentType");
    headers = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(headers));
    Objects.requireNonNull(body, "body");
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("an HTTP status is 100..599, got " + status);
    }
    if (body.length > MAX_BODY_BYTES) {
      throw new IllegalArgumentException("a stored response body is at most " + MAX_BODY_BYTES + " bytes, got " + body.length);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StoredResponse r && r.status == status && r.contentType.equals(contentType)
        && r.headers.equals(headers) && Arrays.equals(r.body, body);
  }

  @Override
  public int hashCode() {
    return Objects.hash(status, contentType, headers, Arrays.hashCode(body));
  }

  @Override
  public String toString() {
    return "StoredResponse[" + status + " " + contentType + ", " + headers.keySet() + ", " + body.length + " bytes]";
  }
}

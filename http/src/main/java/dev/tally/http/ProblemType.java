package dev.tally.http;

/**
 * The kinds of problem the API answers with, each with its type URI, title and status (RFC 9457 section
 * 3.1). A plain HTTP error (an unknown route, a method a route does not take) has the type {@code
 * about:blank} and the status's own phrase as title, as the RFC asks; every other kind is named {@code
 * urn:tally:problem:NAME}, a URI that identifies the kind without pretending to be a page to fetch.
 */
public enum ProblemType {
  NOT_FOUND(null, "Not Found", 404),
  METHOD_NOT_ALLOWED(null, "Method Not Allowed", 405),
  UNAUTHORIZED(null, "Unauthorized", 401),
  NOT_ACCEPTABLE(null, "Not Acceptable", 406),
  /** A path or query parameter, or a body field, that is not what the API takes. */
  INVALID_REQUEST("invalid-request", "The request is not valid", 400),
  /** A body that is not JSON (or a line of an NDJSON body that is not). */
  MALFORMED_JSON("malformed-json", "The body is not valid JSON", 400),
  /** A case that the case grammar refuses (no id, a repeated id, a line too long, ...). */
  INVALID_CASE("invalid-case", "A case of the body is not valid", 400),
  BODY_TOO_LARGE("body-too-large", "The body is too large", 413),
  /** The body stopped arriving before its end, for longer than the server waits. */
  BODY_TIMEOUT("body-timeout", "The body stopped arriving", 408),
  /** The body ended before the end its request declared (its {@code Content-Length}, or its last chunk). */
  BODY_INCOMPLETE("body-incomplete", "The body ended before its end", 400),
  UNSUPPORTED_MEDIA_TYPE("unsupported-media-type", "The body's media type is not one this route takes", 415),
  /** {@code Idempotency-Key} absent where it is required. */
  MISSING_IDEMPOTENCY_KEY("missing-idempotency-key", "The Idempotency-Key header is required", 400),
  /** {@code Idempotency-Key} present but not 1 to 255 printable ASCII characters. */
  INVALID_IDEMPOTENCY_KEY("invalid-idempotency-key", "The Idempotency-Key header is not valid", 400),
  /** The key's first request is still being processed. */
  KEY_IN_USE("idempotency-key-in-use", "A request with this Idempotency-Key is still being processed", 409),
  /** The key was used before with another request (another body or path). */
  KEY_REUSED("idempotency-key-reused", "This Idempotency-Key was used for another request", 422),
  /** The run has not finished, and what was asked for exists only once it has. */
  RUN_NOT_FINISHED("run-not-finished", "The run has not finished", 409),
  /** The run has finished, and what was asked for changes only a running run. */
  RUN_FINISHED("run-finished", "The run has already finished", 409),
  /** Another rescore of the run began while this one ran; the later one's scorers are the run's. */
  RESCORE_SUPERSEDED("rescore-superseded", "Another rescore of the run began", 409),
  /** The server cannot serve this now (it is stopping, or at a limit of clients); retry later. */
  UNAVAILABLE("unavailable", "The service is unavailable for now", 503),
  /**
   * A write asked of a coordinator that does not lead the store (a standby, or a leader that was deposed):
   * the {@code leader} member names the leader's API; retry there.
   */
  NOT_LEADER("not-leader", "This coordinator does not lead the store", 503),
  INTERNAL("internal", "Internal error", 500);

  private final String name;
  private final String title;
  private final int status;

  ProblemType(String name, String title, int status) {
    this.name = name;
    this.title = title;
    this.status = status;
  }

  /** The type URI: {@code about:blank} for a plain HTTP status, else {@code urn:tally:problem:NAME}. */
  public String uri() {
    return name == null ? "about:blank" : "urn:tally:problem:" + name;
  }

  /** The short summary of this kind. */
  public String title() {
    return title;
  }

  /** The HTTP status it is answered with. */
  public int status() {
    return status;
  }

  /** The plain kind for an HTTP status Javalin or Jetty answered with on its own, or null. */
  static ProblemType forStatus(int status) {
    for (ProblemType t : values()) {
      if (t.status == status && t.name == null) {
        return t;
      }
    }
    return null;
  }
}

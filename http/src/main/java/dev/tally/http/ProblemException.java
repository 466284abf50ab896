package dev.tally.http;

import dev.tally.http.dto.Problem;
import java.util.Map;
import java.util.Objects;

/**
 * Thrown by a handler to answer with a problem (RFC 9457): its kind, the detail of this occurrence, and
 * the place at fault when there is one. {@link ApiServer} turns it into an {@code application/problem+json}
 * answer with the kind's status (and the headers given, e.g. {@code Retry-After}).
 *
 * <p>Thread-safety: immutable.
 */
public final class ProblemException extends RuntimeException {
  private final ProblemType type;
  private final String field;
  private final Long line;
  private final String header;
  private final String parameter;
  private final Map<String, String> headers;
  private final String leader;

  private ProblemException(ProblemType type, String detail, String field, Long line, String header, String parameter,
      Map<String, String> headers) {
    this(type, detail, field, line, header, parameter, headers, null);
  }

  private ProblemException(ProblemType type, String detail, String field, Long line, String header, String parameter,
      Map<String, String> headers, String leader) {
    super(detail, null, false, false); // an answer, not a failure: no stack trace
    this.type = Objects.requireNonNull(type, "type");
    this.field = field;
    this.line = line;
    this.header = header;
    this.parameter = parameter;
    this.headers = Map.copyOf(headers);
    this.leader = leader;
  }

  /** A problem with no place. */
  public static ProblemException of(ProblemType type, String detail) {
    return new ProblemException(type, detail, null, null, null, null, Map.of());
  }

  /** A problem with a body field ({@code /settings/maxAttempts}, a JSON pointer). */
  public static ProblemException field(ProblemType type, String field, String detail) {
    return new ProblemException(type, detail, field, null, null, null, Map.of());
  }

  /** A problem on a line of the body (1-based), with the field at fault if known (may be null). */
  public static ProblemException line(ProblemType type, long line, String field, String detail) {
    return new ProblemException(type, detail, field, line, null, null, Map.of());
  }

  /** A problem with a request header. */
  public static ProblemException header(ProblemType type, String header, String detail) {
    return new ProblemException(type, detail, null, null, header, null, Map.of());
  }

  /** A problem with a path or query parameter. */
  public static ProblemException parameter(ProblemType type, String parameter, String detail) {
    return new ProblemException(type, detail, null, null, null, parameter, Map.of());
  }

  /** This problem, answered with {@code headers} too (e.g. {@code Retry-After}). */
  public ProblemException withHeaders(Map<String, String> headers) {
    return new ProblemException(type, getMessage(), field, line, header, parameter, headers, leader);
  }

  /**
   * A write asked of a coordinator that does not lead the store ({@link ProblemType#NOT_LEADER}): 503, {@code
   * Retry-After: 1}, and the leader's API in the {@code leader} member when it is known.
   *
   * @param detail who leads, in words
   * @param leaderApi the leader's API base URL, or null if unknown
   */
  public static ProblemException notLeader(String detail, String leaderApi) {
    return new ProblemException(ProblemType.NOT_LEADER, detail, null, null, null, null, Map.of("Retry-After", "1"), leaderApi);
  }

  /** The kind. */
  public ProblemType type() {
    return type;
  }

  /** The headers to answer with besides the content type. */
  public Map<String, String> headers() {
    return headers;
  }

  /** The problem details for a request to {@code instance}. */
  public Problem toProblem(String instance) {
    return new Problem(type.uri(), type.title(), type.status(), getMessage(), instance, field, line, header, parameter, leader);
  }
}

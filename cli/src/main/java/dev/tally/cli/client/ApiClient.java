package dev.tally.cli.client;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.failsafe.Failsafe;
import dev.failsafe.FailsafeException;
import dev.failsafe.RetryPolicy;
import dev.tally.coordinator.security.TlsTrust;
import dev.tally.core.DurationText;
import dev.tally.core.security.Secret;
import dev.tally.http.ApiServer;
import dev.tally.http.ProblemType;
import dev.tally.http.dto.Problem;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;
import javax.net.ssl.SSLHandshakeException;

/**
 * A client of a Tally server's HTTP API ({@value ApiServer#BASE}), with the retry policy of every client
 * command. Requests go over HTTP/1.1 (the server speaks nothing else), with {@code Authorization: Bearer}
 * when a token is given, and over TLS trusting only {@code --tls-ca}'s authorities when the URL is {@code
 * https} and one is given (the JDK's own trust store otherwise).
 *
 * <h2>Retry policy</h2>
 *
 * <p>An attempt that ends in a way a later attempt may not is retried: the connection refused, reset or
 * closed before a whole answer came (a server restarting, a proxy that dropped the response), a connect or
 * request timeout, a {@code 5xx} answer, {@code 429}, and (for a request that asks for it: a submission
 * with its key) {@code 409} with the type {@code idempotency-key-in-use}, whose first request is still
 * being processed. Everything else is final: a {@code 2xx}, and every other {@code 4xx}, which the caller
 * reports from its problem body ({@link Refused}). A TLS handshake that fails on the certificate is final
 * too: waiting does not make a certificate trusted.
 *
 * <p>Retries wait with jittered exponential backoff (Failsafe's {@link RetryPolicy}): {@link
 * #FIRST_BACKOFF}, doubling up to {@link #MAX_BACKOFF}, each wait drawn within {@link #JITTER} of its value
 * so that clients cut off together do not come back together. A {@code Retry-After} header (seconds or an
 * HTTP date) is honoured as the shortest wait. At most {@code maxRetries} retries, and none begins after
 * {@code retryFor} since the first attempt; an attempt under way is not cut short by that bound (the
 * request timeout bounds it). Each retry is said on stderr, with why and when.
 *
 * <p>Thread-safety: safe for concurrent requests (the JDK's {@link HttpClient} is); the stderr writer is
 * shared, so lines of concurrent retries may interleave whole.
 */
public final class ApiClient {
  /** How long a connection may take to open: a live server on any network answers a SYN far sooner. */
  public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

  /**
   * Retries after the first attempt: with the backoff below they span about two minutes, which covers a
   * server restarting after a crash (its key holds are released at start) and the 30 s hold of a key whose
   * request died, with room to spare.
   */
  public static final int DEFAULT_MAX_RETRIES = 8;

  /** No retry begins later than this after the first attempt: a bound a CI job can plan with. */
  public static final Duration DEFAULT_RETRY_FOR = Duration.ofMinutes(5);

  /**
   * The longest one request may take, upload included, before it is given up and retried: generous for a
   * large dataset over a slow link (the server takes a million cases in well under a minute), short enough
   * that a server that hangs is noticed.
   */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofMinutes(5);

  /** The first wait before a retry, in milliseconds (a constant, for the options' help). */
  public static final long FIRST_BACKOFF_MILLIS = 500;

  /** The first wait before a retry. */
  public static final Duration FIRST_BACKOFF = Duration.ofMillis(FIRST_BACKOFF_MILLIS);

  /** The longest wait between retries: a restarting server is back within this, and a client should notice. */
  public static final Duration MAX_BACKOFF = Duration.ofSeconds(30);

  /** Each wait is drawn from [1 - JITTER, 1 + JITTER] times its backoff. */
  public static final double JITTER = 0.25;

  /** The server's default port ({@code tally server --http}): where {@code --server} points when not given. */
  public static final String DEFAULT_SERVER = "http://" + ApiServer.Settings.DEFAULT_HOST + ":" + ApiServer.Settings.DEFAULT_PORT;

  private static final ObjectMapper JSON = new ObjectMapper().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  private final Settings settings;
  private final HttpClient http;
  private final PrintWriter err;
  private final Clock clock;
  /** The server tried now, one of {@link Settings#servers}; moved by {@link #switchServer}. */
  private volatile URI current;

  /**
   * Where a client goes and how hard it tries.
   *
   * @param server the server's base URL, {@code http://HOST:PORT} or {@code https://...} (see {@link #serverUri})
   * @param token the API token to send as a bearer token, or null for none
   * @param trust the authorities an {@code https} server's certificate must lead to, or null for the JDK's
   * @param maxRetries retries after the first attempt, at least 0
   * @param retryFor no retry begins later than this after the first attempt; at most {@link #FIRST_BACKOFF}
   *     (0s, say), there is no retry
   * @param requestTimeout the longest one attempt may take
   */
  public record Settings(URI server, Secret token, TlsTrust trust, int maxRetries, Duration retryFor, Duration requestTimeout,
      List<URI> servers) {
    /** Settings for one server. */
    public Settings(URI server, Secret token, TlsTrust trust, int maxRetries, Duration retryFor, Duration requestTimeout) {
      this(server, token, trust, maxRetries, retryFor, requestTimeout, List.of(server));
    }

    /**
     * @param servers every server of the store, {@code server} first: the client finds the one that leads
     * @throws IllegalArgumentException if a bound is negative or zero where it must be positive, or {@code
     *     servers} does not start with {@code server}
     */
    public Settings {
      Objects.requireNonNull(server, "server");
      servers = servers == null || servers.isEmpty() ? List.of(server) : List.copyOf(servers);
      if (!servers.get(0).equals(server)) {
        throw new IllegalArgumentException("the servers must start with " + server + ", got " + servers);
      }
      Objects.requireNonNull(retryFor, "retryFor");
      Objects.requireNonNull(requestTimeout, "requestTimeout");
      if (maxRetries < 0) {
        throw new IllegalArgumentException("--retries must be >= 0, got " + maxRetries);
      }
      if (retryFor.isNegative()) {
        throw new IllegalArgumentException("--retry-for must not be negative, got " + DurationText.text(retryFor));
      }
      if (requestTimeout.isZero() || requestTimeout.isNegative()) {
        throw new IllegalArgumentException("--request-timeout must be positive, got " + DurationText.text(requestTimeout));
      }
    }
  }

  /**
   * A client.
   *
   * @param err where retries are said
   */
  public ApiClient(Settings settings, PrintWriter err) {
    this(settings, err, Clock.systemUTC());
  }

  /**
   * A client of the server this one uses now that tries once, within {@code timeout} (or this client's own
   * request timeout, if shorter): for what is worth a moment but not a wait, such as the extra lines after a
   * run's result. Same token and TLS trust; thread-safe as this one is.
   *
   * @param timeout the longest one request may take, positive
   * @throws IllegalArgumentException if {@code timeout} is zero or negative
   */
  public ApiClient once(Duration timeout) {
    Duration bound = timeout.compareTo(settings.requestTimeout()) < 0 ? timeout : settings.requestTimeout();
    return new ApiClient(new Settings(current, settings.token(), settings.trust(), 0, settings.retryFor(), bound), err, clock);
  }

  /** A client reading {@code Retry-After} dates against {@code clock}; for tests. */
  ApiClient(Settings settings, PrintWriter err, Clock clock) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.err = Objects.requireNonNull(err, "err");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.current = settings.server();
    HttpClient.Builder b = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CONNECT_TIMEOUT)
        .followRedirects(HttpClient.Redirect.NEVER);
    if (settings.trust() != null) {
      b.sslContext(settings.trust().sslContext());
    }
    this.http = b.build();
  }

  /**
   * The server's base URL from what a user typed: {@code http://HOST:PORT} or {@code https://HOST:PORT},
   * with or without a trailing {@code /} or {@value ApiServer#BASE} (what {@code tally server} prints).
   *
   * @throws IllegalArgumentException if it is not an http or https URL with a host, or has a query
   */
  public static URI serverUri(String text) {
    if (!text.strip().toLowerCase(Locale.ROOT).matches("https?://.*")) {
      throw new IllegalArgumentException("the server's URL must start with http:// or https://, e.g. " + DEFAULT_SERVER + ", got " + text);
    }
    URI uri;
    try {
      uri = new URI(text.strip());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalArgumentException("not a URL: " + e.getMessage());
    }
    String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
    if (uri.getHost() == null) {
      throw new IllegalArgumentException("the server's URL has no host: " + text);
    }
    if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
      throw new IllegalArgumentException("the server's URL takes no query or fragment: " + text);
    }
    String path = uri.getRawPath() == null ? "" : uri.getRawPath();
    while (path.endsWith("/")) {
      path = path.substring(0, path.length() - 1);
    }
    if (path.endsWith(ApiServer.BASE)) {
      path = path.substring(0, path.length() - ApiServer.BASE.length());
    }
    return URI.create(scheme + "://" + uri.getRawAuthority() + path);
  }

  /**
   * The server's base URL: of several ({@link Settings#servers}), the one this client last found leading, or
   * is trying now.
   */
  public URI server() {
    return current;
  }

  /** The URL of an API path ({@code /api/v1/runs/7}), on {@link #server()}. */
  public URI url(String path) {
    return URI.create(current + path);
  }

  /**
   * Goes on with another of the store's servers after {@code failed} could not serve a request: the leader
   * it named when it answered {@code not-leader} (if that is a URL this client may use), else the next of
   * {@link Settings#servers} in turn. One server: stays.
   *
   * @return a few words for the retry line, or empty
   */
  private String switchServer(URI failed, String leaderHint) {
    List<URI> servers = settings.servers();
    URI next = null;
    if (leaderHint != null) {
      try {
        URI hinted = serverUri(leaderHint);
        // Only a server the user named: a hint must not send the token somewhere the user did not choose.
        next = servers.contains(hinted) ? hinted : null;
      } catch (IllegalArgumentException ignored) {
        // not a URL: go round the list instead
      }
    }
    if (next == null && servers.size() > 1) {
      next = servers.get((servers.indexOf(failed) + 1) % servers.size());
    }
    if (next == null || next.equals(failed)) {
      return "";
    }
    current = next;
    return "; trying " + next;
  }

  /**
   * One request to send, perhaps more than once.
   *
   * @param method {@code GET} or {@code POST}
   * @param path the path under the server, {@value ApiServer#BASE} included
   * @param headers request headers besides auth and {@code Accept}
   * @param body a fresh body for each attempt, or null for none
   * @param retryKeyInUse whether a {@code 409} that says the idempotency key is in use is retried (a
   *     submission with its key); for other requests a {@code 409} is final
   * @param saveTo where a {@code 200} answer's body goes (a file), or null to keep it in memory
   */
  public record Request(String method, String path, Map<String, String> headers, Supplier<HttpRequest.BodyPublisher> body,
      boolean retryKeyInUse, Path saveTo) {
    public Request {
      Objects.requireNonNull(method, "method");
      Objects.requireNonNull(path, "path");
      headers = Map.copyOf(headers);
    }

    /** A {@code GET} of JSON. */
    public static Request get(String path) {
      return new Request("GET", path, Map.of(), null, false, null);
    }

    /** A {@code POST} without a body. */
    public static Request post(String path) {
      return new Request("POST", path, Map.of(), () -> HttpRequest.BodyPublishers.noBody(), false, null);
    }
  }

  /**
   * The server's final answer.
   *
   * @param status its HTTP status
   * @param headers its headers
   * @param body its body, or empty when it went to {@link Request#saveTo}
   * @param attempts how many attempts it took (1 without a retry)
   */
  public record Response(int status, HttpHeaders headers, byte[] body, int attempts) {
    /** Whether the status is 2xx. */
    public boolean ok() {
      return status >= 200 && status < 300;
    }

    /**
     * The body as {@code type}.
     *
     * @throws IOException if it is not JSON of that shape
     */
    public <T> T json(Class<T> type) throws IOException {
      try {
        return JSON.readValue(body, type);
      } catch (IOException e) {
        throw new IOException("the server's answer (" + status + ") is not the Tally API's " + type.getSimpleName()
            + ": is --server a Tally server? (" + e.getMessage().lines().findFirst().orElse("") + ")", e);
      }
    }

    /** Whether the server answered from a key's stored response ({@code Idempotent-Replayed: true}). */
    public boolean replayed() {
      return headers.firstValue("Idempotent-Replayed").map(v -> v.strip().equalsIgnoreCase("true")).orElse(false);
    }
  }

  /**
   * Sends a request, retrying as the class comment says.
   *
   * @param what what the request does, for the retry lines on stderr ("submitting run of cases.jsonl")
   * @param suffix said after each retry line, or empty ("with the same idempotency key")
   * @return the server's final answer: a 2xx, or a 4xx that is final (see {@link #requireOk})
   * @throws Unreachable if no attempt got a final answer within the retries, or TLS failed on the certificate
   * @throws InterruptedException if interrupted while waiting to retry
   */
  public Response send(Request request, String what, String suffix) throws Unreachable, InterruptedException {
    long startedNanos = System.nanoTime();
    // A bound no longer than the first wait leaves no time for a retry to begin: none is made (Failsafe refuses
    // a maximum duration that is not longer than its delay).
    boolean retrying = settings.retryFor().compareTo(FIRST_BACKOFF) > 0;
    dev.failsafe.RetryPolicyBuilder<Response> retries = RetryPolicy.<Response>builder()
        .handle(Retryable.class)
        .withBackoff(FIRST_BACKOFF, MAX_BACKOFF)
        .withJitter(JITTER)
        .withDelayFn(ctx -> ctx.getLastException() instanceof Retryable r && r.retryAfter != null
            ? shortestWaitFor(r.retryAfter) : Duration.ofMillis(-1))
        .withMaxRetries(retrying ? settings.maxRetries() : 0)
        // A server asking to wait past the retries' end is not waited for: it would end in giving up anyway.
        .abortOn(e -> e instanceof Retryable r && beyondRetries(r, startedNanos))
        .onRetryScheduled(e -> {
          Retryable r = (Retryable) e.getLastException();
          err.printf("tally: %s: %s; retry %d of %d in %s%s%n", what, r.getMessage(), e.getAttemptCount(),
              settings.maxRetries(), waitText(e.getDelay()), suffix.isEmpty() ? "" : " " + suffix);
          err.flush();
        });
    if (retrying) {
      retries.withMaxDuration(settings.retryFor());
    }
    RetryPolicy<Response> policy = retries.build();
    int[] attempts = {0};
    try {
      Response r = Failsafe.with(policy).get(() -> {
        attempts[0]++;
        return attempt(request, attempts[0]);
      });
      return r;
    } catch (Fatal fatal) {
      throw new Unreachable(what + ": " + fatal.getMessage(), 0);
    } catch (Retryable last) {
      // The last attempt's reason, not where a next one would have gone: there is none.
      throw new Unreachable(what + ": gave up after " + attempts[0] + (attempts[0] == 1 ? " attempt" : " attempts") + " in "
          + waitText(Duration.ofNanos(System.nanoTime() - startedNanos)) + "; the last: " + last.why
          + (beyondRetries(last, startedNanos) ? " (it asked to wait " + waitText(last.retryAfter) + ", past --retry-for "
              + DurationText.text(settings.retryFor()) + ")" : ""), last.status);
    } catch (FailsafeException e) {
      if (e.getCause() instanceof InterruptedException interrupted) {
        throw interrupted;
      }
      throw e;
    }
  }

  /**
   * The answer if it is a 2xx.
   *
   * @throws Refused with the problem the server answered otherwise
   */
  public static Response requireOk(Response r) throws Refused {
    if (!r.ok()) {
      throw Refused.of(r.status(), r.body());
    }
    return r;
  }

  /** One attempt: a final answer, or a {@link Retryable} saying why another may fare better. */
  private Response attempt(Request request, int attempt) throws InterruptedException {
    URI server = current;
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(server + request.path())).timeout(settings.requestTimeout())
        .header("Accept", "application/json, application/problem+json, application/x-ndjson")
        .header("User-Agent", "tally-client");
    if (settings.token() != null) {
      b.header("Authorization", "Bearer " + settings.token().reveal());
    }
    request.headers().forEach(b::header);
    b.method(request.method(), request.body() == null ? HttpRequest.BodyPublishers.noBody() : request.body().get());
    HttpResponse<Object> response;
    try {
      response = http.send(b.build(), info -> info.statusCode() == 200 && request.saveTo() != null
          ? HttpResponse.BodySubscribers.mapping(HttpResponse.BodySubscribers.ofFile(request.saveTo()), p -> (Object) new byte[0])
          : HttpResponse.BodySubscribers.mapping(HttpResponse.BodySubscribers.ofByteArray(), bytes -> (Object) bytes));
    } catch (IOException e) {
      RuntimeException judged = judge(e, settings.requestTimeout());
      if (judged instanceof Retryable r) {
        throw r.at(switchServer(server, null));
      }
      throw judged;
    }
    byte[] body = (byte[]) response.body();
    Optional<Retryable> retry = judge(response.statusCode(), response.headers(), body, request.retryKeyInUse());
    if (retry.isPresent()) {
      if (ProblemType.NOT_LEADER.uri().equals(problemType(body))) {
        throw retry.get().at(switchServer(server, leaderOf(body)));
      }
      throw retry.get();
    }
    return new Response(response.statusCode(), response.headers(), body, attempt);
  }

  /**
   * Whether an answer is worth another attempt, and why: {@code 5xx}, {@code 429}, and a {@code 409} whose
   * problem says the idempotency key is in use when {@code retryKeyInUse}.
   */
  Optional<Retryable> judge(int status, HttpHeaders headers, byte[] body, boolean retryKeyInUse) {
    Duration retryAfter = headers.firstValue("Retry-After").flatMap(v -> retryAfter(v, clock)).orElse(null);
    if (status >= 500) {
      return Optional.of(new Retryable("the server answered " + status + describe(body), retryAfter, status));
    }
    if (status == 429) {
      return Optional.of(new Retryable("the server answered 429 (too many requests)" + describe(body), retryAfter, status));
    }
    if (status == 409 && retryKeyInUse && ProblemType.KEY_IN_USE.uri().equals(problemType(body))) {
      return Optional.of(new Retryable("the server is still processing an earlier request with this idempotency key (409)",
          retryAfter, status));
    }
    return Optional.empty();
  }

  /**
   * Whether a failure to get an answer is worth another attempt: every I/O failure is (refused, reset,
   * closed, timed out), except a TLS handshake refused on the certificate and a body that refused to be sent
   * ({@link BodyFailure}), which are final. {@code requestTimeout} is the attempt's timeout, for the words.
   */
  static RuntimeException judge(IOException e, Duration requestTimeout) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof BodyFailure body) {
        return new Fatal(body.getMessage(), e);
      }
      if (t instanceof SSLHandshakeException handshake) {
        return new Fatal("the TLS handshake failed: " + handshake.getMessage()
            + " (with --tls-ca, the server's certificate must be signed by a CA in that file and name the host of --server)", e);
      }
    }
    String why;
    if (e instanceof HttpConnectTimeoutException) {
      // the request's own timeout counts the connection too: the shorter of the two ran out
      why = "no connection within " + DurationText.text(requestTimeout.compareTo(CONNECT_TIMEOUT) < 0 ? requestTimeout : CONNECT_TIMEOUT);
    } else if (e instanceof HttpTimeoutException) {
      why = "no answer within the request timeout";
    } else if (e instanceof ConnectException) {
      why = "connection refused (is the server running there?)";
    } else {
      why = "the connection failed before a whole answer came (" + e.getClass().getSimpleName()
          + (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")";
    }
    return new Retryable(why, null, 0);
  }

  /** Whether {@code r}'s Retry-After ends after the retries may begin ({@code retryFor} from {@code startedNanos}). */
  private boolean beyondRetries(Retryable r, long startedNanos) {
    return r.retryAfter != null
        && Duration.ofNanos(System.nanoTime() - startedNanos).plus(r.retryAfter).compareTo(settings.retryFor()) > 0;
  }

  /** The wait to ask Failsafe for so that, jittered, it is never shorter than {@code retryAfter}. */
  static Duration shortestWaitFor(Duration retryAfter) {
    return Duration.ofMillis((long) Math.ceil(retryAfter.toMillis() / (1 - JITTER)));
  }

  /** A {@code Retry-After} value as a wait from the clock's now ({@link dev.tally.core.RetryAfter}, the one reading). */
  static Optional<Duration> retryAfter(String value, Clock clock) {
    return dev.tally.core.RetryAfter.parse(value, clock.instant());
  }

  private static String waitText(Duration d) {
    return d.toMillis() < 10_000 ? String.format(Locale.ROOT, "%.1f s", d.toMillis() / 1000.0) : d.toSeconds() + " s";
  }

  /** ": detail" of a problem body, or nothing. */
  private static String describe(byte[] body) {
    Problem p = problem(body);
    return p == null || p.detail() == null ? "" : ": " + p.detail();
  }

  /** The {@code leader} member of a {@code not-leader} problem: the leading server's API, or null. */
  private static String leaderOf(byte[] body) {
    Problem p = problem(body);
    return p == null ? null : p.leader();
  }

  private static String problemType(byte[] body) {
    Problem p = problem(body);
    return p == null ? null : p.type();
  }

  /** The problem in a body, or null if it is not one. */
  static Problem problem(byte[] body) {
    if (body == null || body.length == 0) {
      return null;
    }
    try {
      Problem p = JSON.readValue(body, Problem.class);
      return p.status() == 0 && p.title() == null ? null : p;
    } catch (IOException e) {
      return null;
    }
  }

  /** An attempt that may succeed if made again; carries why and the server's {@code Retry-After}. */
  static final class Retryable extends RuntimeException {
    final Duration retryAfter;
    /** The HTTP status of the answer, or 0 if none came. */
    final int status;

    /** Why, without where the next attempt goes: what a final "gave up" says of the last attempt. */
    final String why;

    Retryable(String why, Duration retryAfter, int status) {
      this(why, why, retryAfter, status);
    }

    private Retryable(String why, String said, Duration retryAfter, int status) {
      super(said, null, false, false);
      this.why = why;
      this.retryAfter = retryAfter;
      this.status = status;
    }

    /** The same, with {@code more} said after its reason (which server is tried next), if any. */
    Retryable at(String more) {
      return more.isEmpty() ? this : new Retryable(why, getMessage() + more, retryAfter, status);
    }
  }

  /** A failure another attempt cannot mend (the certificate, the body); not retried. */
  static final class Fatal extends RuntimeException {
    Fatal(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * What a request body's source throws when it must not be sent (the dataset changed while it was sent): the
   * request is given up, not retried.
   */
  public static final class BodyFailure extends IOException {
    public BodyFailure(String message) {
      super(message);
    }
  }

  /**
   * The server could not be reached, or did not answer finally within the retries; or TLS refused its
   * certificate.
   */
  public static final class Unreachable extends Exception {
    private final int lastStatus;

    Unreachable(String message, int lastStatus) {
      super(message);
      this.lastStatus = lastStatus;
    }

    /** The last answer's HTTP status, or 0 if none came. */
    public int lastStatus() {
      return lastStatus;
    }
  }

  /**
   * The server's final refusal: a non-2xx answer that another attempt would not change. Its message is the
   * problem in words: title, detail, and the place at fault.
   */
  public static final class Refused extends Exception {
    private final int status;
    private final Problem problem;

    private Refused(int status, Problem problem, String message) {
      super(message);
      this.status = status;
      this.problem = problem;
    }

    /** A refusal from an answer's status and body (a problem if it is one). */
    public static Refused of(int status, byte[] body) {
      Problem p = ApiClient.problem(body);
      if (p == null) {
        String text = body == null ? "" : new String(body, StandardCharsets.UTF_8).strip();
        if (text.length() > 200) {
          text = text.substring(0, 200) + "...";
        }
        return new Refused(status, null, "the server answered " + status + (text.isEmpty() ? "" : ": " + text)
            + (status == 404 ? " (is --server the address of a Tally server?)" : ""));
      }
      List<String> places = new ArrayList<>();
      Map<String, Object> at = new LinkedHashMap<>();
      at.put("field", p.field());
      at.put("line", p.line());
      at.put("header", p.header());
      at.put("parameter", p.parameter());
      at.forEach((name, value) -> {
        if (value != null) {
          places.add(name + " " + value);
        }
      });
      String title = p.title() == null ? "HTTP " + status : p.title();
      String place = places.isEmpty() ? "" : " [" + String.join(", ", places) + "]";
      if (p.detail() != null && p.detail().toLowerCase(Locale.ROOT).startsWith(title.toLowerCase(Locale.ROOT))) {
        // The detail says the title again, and more: said once ("... (422): this ... (it created run 4)" was twice).
        return new Refused(status, p, p.detail() + " (" + status + ")" + place);
      }
      String detail = p.detail() == null || p.detail().isEmpty() ? "" : ": " + p.detail();
      return new Refused(status, p, title + " (" + status + ")" + detail + place);
    }

    /** The HTTP status. */
    public int status() {
      return status;
    }

    /** The problem body, or null if the answer had none. */
    public Problem problem() {
      return problem;
    }
  }
}

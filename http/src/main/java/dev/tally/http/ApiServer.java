package dev.tally.http;

import dev.tally.coordinator.security.ListenerSecurity;
import dev.tally.coordinator.security.TlsIdentity;
import dev.tally.core.security.Secret;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.tally.coordinator.Coordinator;
import dev.tally.http.dto.Problem;
import io.javalin.Javalin;
import io.javalin.community.ssl.SslPlugin;
import io.javalin.http.Context;
import io.javalin.http.HandlerType;
import io.javalin.http.HttpResponseException;
import io.javalin.json.JavalinJackson;
import io.javalin.openapi.HttpMethod;
import io.javalin.openapi.OpenApi;
import io.javalin.openapi.OpenApiContent;
import io.javalin.openapi.OpenApiResponse;
import io.javalin.openapi.plugin.OpenApiPlugin;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tally's HTTP API over a running {@link Coordinator}: a thin adapter over its store and scheduler, on
 * Javalin (Jetty). Routes live under {@value #BASE} (JSON, camelCase, times in ISO-8601 UTC), plus
 * {@code GET /metrics} (Prometheus text); every error, Javalin's own included (an unknown route, a method
 * a route does not take, a body too large), is an RFC 9457 problem ({@value #PROBLEM_JSON}) that names
 * the place at fault. The OpenAPI document, generated at compile time from the handlers' {@link OpenApi}
 * annotations, is served at {@value #OPENAPI_PATH}.
 *
 * <p><b>Dashboard.</b> The web dashboard's static files (HTML, CSS, ES modules from the jar's {@value
 * #DASHBOARD_RESOURCES}, and the chart library's WebJar under {@code /webjars/}) are served at {@value
 * #DASHBOARD_PATH} without the token: they hold no data. Every datum the page shows comes from the API,
 * which the page calls with the bearer token the user typed.
 *
 * <p><b>Auth.</b> With a token ({@link Settings.Builder#token}), every request needs {@code Authorization:
 * Bearer TOKEN} and gets 401 with {@code WWW-Authenticate: Bearer} without it; {@code GET /metrics} is
 * public only with {@link Settings.Builder#metricsPublic}. <b>TLS</b> from PEM files ({@link
 * Settings.Builder#tls}): the port then speaks only HTTPS.
 *
 * <p>Thread-safety: safe from any thread; handlers run concurrently on Jetty's threads.
 */
public final class ApiServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ApiServer.class);

  /** Where every API route lives: its version is in the path, so a v2 can be served beside it. */
  public static final String BASE = "/api/v1";
  /** The OpenAPI document. */
  public static final String OPENAPI_PATH = BASE + "/openapi.json";
  /** Prometheus' scrape target, outside {@link #BASE} where scrapers look for it. */
  public static final String METRICS_PATH = "/metrics";
  /** Where the web dashboard is served: one page whose routes are in the URL's fragment. */
  public static final String DASHBOARD_PATH = "/";
  /**
   * What problems call a request's body where a file's name would stand ({@code request body line 7: ...}):
   * its line 1 is the run's fields and its line {@code N + 1} a dataset's line {@code N}, which is how a
   * client that sent a file names the place in it.
   */
  public static final String REQUEST_BODY = "request body";
  /** Where the WebJars in the jar (the dashboard's chart library) are served. */
  public static final String WEBJARS_PATH = "/webjars";
  /** The classpath folder of the dashboard's static files. */
  static final String DASHBOARD_RESOURCES = "/dashboard";
  /** The media type of every error answer (RFC 9457 section 3). */
  public static final String PROBLEM_JSON = "application/problem+json";

  /**
   * The {@code Retry-After} of a 503 for a store that did not answer, in seconds: a database restart takes
   * seconds, and the store's own writes wait up to 30 s for it.
   */
  static final String STORE_RETRY_AFTER_SECONDS = "5";

  private final Javalin app;
  private final InetSocketAddress address;
  private final boolean tls;
  private final List<Route> routes;
  private final EventStream events;
  private final ApiMetrics metrics;
  private final SubmitRoutes writes;
  private final Path spoolDirectory;
  private final FleetHistory fleet;

  private ApiServer(Javalin app, InetSocketAddress address, boolean tls, List<Route> routes, EventStream events,
      ApiMetrics metrics, SubmitRoutes writes, Path spoolDirectory, FleetHistory fleet) {
    this.fleet = fleet;
    this.writes = writes;
    this.spoolDirectory = spoolDirectory;
    this.app = app;
    this.address = address;
    this.tls = tls;
    this.routes = routes;
    this.events = events;
    this.metrics = metrics;
  }

  /** A route the server answers: method and path, as Javalin registered it. */
  public record Route(String method, String path) {}

  /**
   * Starts serving the API of {@code coordinator}.
   *
   * @param settings where and how to serve
   * @param coordinator the running coordinator whose store and scheduler the API adapts
   * @param live the scheduler's meters, made by {@link SchedulerMetrics#observing} with the coordinator's
   *     builder before it started; served at {@value #METRICS_PATH} beside the store's figures. One API
   *     server per instance.
   * @return the running server; close it before the coordinator
   * @throws StartException if the address cannot be bound, or the TLS files cannot be read or used
   */
  public static ApiServer start(Settings settings, Coordinator coordinator, SchedulerMetrics live) throws StartException {
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(coordinator, "coordinator");
    Objects.requireNonNull(live, "live");
    // Once leading (at once for a server that leads from its start): the spool of a process killed
    // mid-upload, a leader's too, beside the standby that follows it. A standby uploads nothing to clean.
    coordinator.whenLeading(() -> Upload.deleteLeftovers(settings.spoolDirectory));
    try {
      ListenerSecurity.enforce(ListenerSecurity.Listener.HTTP_API, new InetSocketAddress(settings.host, settings.port),
          settings.token != null, settings.tls != null, settings.insecure);
    } catch (ListenerSecurity.InsecureListenerException e) {
      throw new StartException(e.getMessage(), e);
    }
    BearerAuth auth = BearerAuth.of(settings.token);
    java.time.Clock clock = java.time.Clock.systemUTC();
    ReadRoutes reads = new ReadRoutes(coordinator, clock);
    FleetHistory fleet = new FleetHistory(coordinator.store(), clock::millis);
    FleetRoutes fleetRoutes = new FleetRoutes(fleet, coordinator, clock);
    ApiMetrics metrics = new ApiMetrics(coordinator, live);
    EventStream events = new EventStream(coordinator.store(), fleet, settings.eventPeriodMillis, clock::millis);
    coordinator.onRunEnded(events::runEnded);
    List<Route> routes = Collections.synchronizedList(new ArrayList<>());
    ObjectMapper json = new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);
    Javalin app = Javalin.create(config -> {
      config.showJavalinBanner = false;
      config.jsonMapper(new JavalinJackson(json, false));
      config.http.prefer405over404 = true;
      config.http.defaultContentType = "application/json";
      config.http.maxRequestSize = settings.maxBodyBytes;
      config.events.handlerAdded(h -> routes.add(new Route(h.getHttpMethod().name(), h.getPath())));
      config.jetty.modifyServer(server -> server.setErrorHandler(new JettyProblems()));
      config.staticFiles.add(files -> {
        files.hostedPath = DASHBOARD_PATH;
        files.directory = DASHBOARD_RESOURCES;
        files.location = io.javalin.http.staticfiles.Location.CLASSPATH;
        utf8(files.mimeTypes);
        // A new jar's page must not be mixed with an old one's modules from the browser's cache.
        files.headers = Map.of("Cache-Control", "no-cache", "X-Content-Type-Options", "nosniff");
      });
      // The WebJars (what enableWebjars() serves), with the same types; their paths hold their version.
      config.staticFiles.add(files -> {
        files.hostedPath = WEBJARS_PATH;
        files.directory = "/META-INF/resources/webjars";
        files.location = io.javalin.http.staticfiles.Location.CLASSPATH;
        utf8(files.mimeTypes);
        files.headers = Map.of("Cache-Control", "max-age=31536000, immutable", "X-Content-Type-Options", "nosniff");
      });
      config.registerPlugin(new OpenApiPlugin(openapi -> openapi.withDocumentationPath(OPENAPI_PATH)
          .withDefinitionConfiguration((version, definition) -> definition
              .withInfo(info -> info.title("Tally API").version("1")
                  .description("Runs, cases, attempts, workers and events of a Tally coordinator. Errors are RFC 9457 problem details."))
              .withSecurity(security -> security.withBearerAuth()))));
      if (settings.tls != null) {
        // TlsIdentity has checked the files (PEM, the key the certificate's, in date): one owner of that rule.
        config.registerPlugin(new SslPlugin(ssl -> {
          ssl.pemFromPath(settings.tls.certFile().toString(), settings.tls.keyFile().toString());
          ssl.insecure = false;
          ssl.secure = true;
          ssl.host = settings.host;
          ssl.securePort = settings.port;
          ssl.http2 = false;
          // Clients check the certificate's names themselves; refusing an SNI that differs (a client that
          // dials 127.0.0.1 for a certificate of localhost) would only break loopback use.
          ssl.sniHostCheck = false;
        }));
      } else {
        config.jetty.defaultHost = settings.host;
        config.jetty.defaultPort = settings.port;
      }
    });

    app.before(ctx -> {
      if (ctx.method() == HandlerType.OPTIONS) {
        return;
      }
      if (settings.metricsPublic && routed(ctx.path()).equals(METRICS_PATH)) {
        return;
      }
      if (!needsToken(ctx.path())) {
        return; // the dashboard's static files: no data in them
      }
      String challenge = auth.challenge(ctx.header("Authorization"));
      if (challenge != null) {
        throw ProblemException.header(ProblemType.UNAUTHORIZED, "Authorization",
            challenge.equals(BearerAuth.CHALLENGE)
                ? "this server needs Authorization: Bearer TOKEN (the token of its --api-token-file or TALLY_API_TOKEN)"
                : "the bearer token is not this server's")
            .withHeaders(Map.of("WWW-Authenticate", challenge));
      }
    });
    app.before(EventStream.PATH, EventStream::requireEventStreamAccept);
    QueryParameters queryParameters = QueryParameters.of(ReadRoutes.class, FleetRoutes.class, SubmitRoutes.class, EventStream.class);
    app.beforeMatched(queryParameters::check);
    app.exception(ProblemException.class, (e, ctx) -> answer(ctx, e));
    // A write a standby (or a deposed leader) was asked for: the store or the coordinator refused it.
    app.exception(dev.tally.core.store.StaleEpochException.class, (e, ctx) -> answer(ctx, ProblemException.notLeader(
        "this coordinator does not lead the store; epoch " + e.storeEpoch() + " leads at "
            + dev.tally.core.lead.LeaderAddress.parse(e.leaderAddress()) + "; send writes there",
        dev.tally.core.lead.LeaderAddress.parse(e.leaderAddress()).api())));
    app.exception(HttpResponseException.class, (e, ctx) -> answer(ctx, fromJavalin(e, ctx)));
    // The store did not answer (a database restarting or cut off, a full disk): the service is down for now,
    // not broken, and a client tries again (writes carry an Idempotency-Key or are idempotent). The store's
    // words name its URL and user: they go to the log, by incident, not to the client. A 500 used to say so.
    app.exception(dev.tally.core.store.StoreException.class, (e, ctx) -> answer(ctx, ProblemException.of(ProblemType.UNAVAILABLE,
        "the store did not answer (the server's log names incident " + incident(ctx, e, false) + "); try again in a few seconds")
        .withHeaders(Map.of("Retry-After", STORE_RETRY_AFTER_SECONDS))));
    app.exception(Exception.class, (e, ctx) -> answer(ctx, ProblemException.of(ProblemType.INTERNAL,
        "the server failed to answer; its log names incident " + incident(ctx, e, true))));
    // Statuses Javalin or Jetty set without an exception (e.g. a 404 from a static-file miss) get a body too.
    for (int status : new int[] {404, 405}) {
      app.error(status, ctx -> {
        if (ctx.res().getContentType() == null || !ctx.res().getContentType().startsWith(PROBLEM_JSON)) {
          answer(ctx, fromStatus(ctx.statusCode(), ctx));
        }
      });
    }

    SubmitRoutes writes = new SubmitRoutes(coordinator, auth, settings, json, reads, clock);
    app.post(ReadRoutes.RUNS, writes::createRun);
    app.post(SubmitRoutes.CANCEL, writes::cancelRun);
    app.post(SubmitRoutes.RETRY_ERRORS, writes::retryErrors);
    app.post(SubmitRoutes.RESUME, writes::resume);
    app.post(SubmitRoutes.RESCORE, writes::rescore);
    app.get(ReadRoutes.RUNS, reads::listRuns);
    app.get(ReadRoutes.RUN, reads::getRun);
    app.get(ReadRoutes.CASES, reads::listCases);
    app.get(ReadRoutes.ATTEMPTS, reads::listAttempts);
    app.get(ReadRoutes.RESULTS, reads::getResults);
    app.get(ReadRoutes.SUMMARY, reads::getSummary);
    app.get(ReadRoutes.PROGRESS, reads::getProgress);
    app.get(ReadRoutes.WORKERS, reads::listWorkers);
    app.get(FleetRoutes.SUSPICION, fleetRoutes::getSuspicion);
    app.get(FleetRoutes.EVENTS, fleetRoutes::listEvents);
    app.sse(EventStream.PATH, events::accept);
    app.get(METRICS_PATH, metrics::scrape);

    try {
      app.start();
    } catch (RuntimeException e) {
      events.close();
      writes.close();
      fleet.close();
      try {
        app.stop();
      } catch (RuntimeException ignored) {
        // the start failed: nothing to stop cleanly
      }
      throw cannotServe(settings, e);
    }
    InetSocketAddress bound = new InetSocketAddress(settings.host, app.port());
    events.start();
    fleet.start();
    return new ApiServer(app, bound, settings.tls != null, List.copyOf(routes), events, metrics, writes, settings.spoolDirectory, fleet);
  }

  /**
   * Names UTF-8 in the types of the dashboard's text files: without a charset in the mapping, Jetty writes
   * {@code charset=null} into their Content-Type.
   */
  private static void utf8(io.javalin.http.staticfiles.MimeTypesConfig types) {
    types.add("text/html; charset=utf-8", "html");
    types.add("text/javascript; charset=utf-8", "js");
    types.add("text/css; charset=utf-8", "css");
  }

  /**
   * Whether a request to {@code path} needs the token: the API and the metrics do; the dashboard's static
   * files (everything else) do not, since every datum the page shows is fetched from the API.
   */
  static boolean needsToken(String path) {
    String routed = routed(path);
    return routed.equals(BASE) || routed.startsWith(BASE + "/") || routed.equals(METRICS_PATH);
  }

  /**
   * {@code path} as the router matches it: repeated slashes as one, and no trailing slash (Javalin ignores
   * it). The token check reads this form, since {@code /metrics/} is served by {@code /metrics}'s handler:
   * checked as written, it was served without the token.
   */
  static String routed(String path) {
    String one = path.replaceAll("/{2,}", "/");
    return one.length() > 1 && one.endsWith("/") ? one.substring(0, one.length() - 1) : one;
  }

  /** The web dashboard's address, {@code http://HOST:PORT/}, for people. */
  public String dashboardUrl() {
    return url() + DASHBOARD_PATH;
  }

  /** The address the API is served on (the port is the one picked when asked for port 0). */
  public InetSocketAddress address() {
    return address;
  }

  /** The port the API is served on. */
  public int port() {
    return address.getPort();
  }

  /** The API's base URL, {@code http://HOST:PORT} or {@code https://...}, for people and clients. */
  public String url() {
    return (tls ? "https://" : "http://") + hostPort(address.getHostString(), address.getPort());
  }

  /** Every route the server answers, as Javalin registered it (for the OpenAPI check). */
  public List<Route> routes() {
    return routes;
  }

  /** Where uploads are spooled while they stream. */
  public Path spoolDirectory() {
    return spoolDirectory;
  }

  /** The event stream's publisher looks once, now, on the caller's thread: for tests. */
  void publishEventsNow() {
    events.publishNow();
  }

  /** How many event-stream clients are connected now. */
  public int eventClients() {
    return events.clients();
  }

  /** The metrics served at {@value #METRICS_PATH}. */
  public ApiMetrics metrics() {
    return metrics;
  }

  /** Stops serving: open event streams are closed, then the port. Idempotent. */
  @Override
  public void close() {
    events.close();
    writes.close();
    fleet.close();
    app.stop();
  }

  @OpenApi(path = OPENAPI_PATH, methods = HttpMethod.GET, operationId = "getOpenApi", tags = "meta",
      summary = "This document",
      responses = @OpenApiResponse(status = "200", content = @OpenApiContent(type = "object", mimeType = "application/json")))
  private static void documentedOpenApi() {
    // Served by the OpenAPI plugin; declared here so that the document lists itself.
  }

  @OpenApi(path = METRICS_PATH, methods = HttpMethod.GET, operationId = "getMetrics", tags = "meta",
      summary = "Prometheus metrics (text format); public with --metrics-public",
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(type = "string", mimeType = "text/plain")),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = PROBLEM_JSON))})
  private static void documentedMetrics() {
    // Served by ApiMetrics#scrape.
  }


  /**
   * Logs a request's failure under a new incident id and returns the id, for a problem's detail that names it
   * without the failure's own words (a store's name its URL and user). {@code bug}: an error, with the trace;
   * else a warning in one line (a store that did not answer).
   */
  private static String incident(Context ctx, Exception e, boolean bug) {
    String incident = UUID.randomUUID().toString();
    if (bug) {
      log.error("API request {} {} failed (incident {})", ctx.method(), ctx.path(), incident, e);
    } else {
      log.warn("API request {} {}: the store failed (incident {}): {}", ctx.method(), ctx.path(), incident, e.getMessage());
    }
    return incident;
  }
  private static void answer(Context ctx, ProblemException e) {
    Problem problem = e.toProblem(ctx.path());
    e.headers().forEach(ctx::header);
    ctx.status(problem.status()).contentType(PROBLEM_JSON).json(problem);
    ctx.contentType(PROBLEM_JSON); // json() sets application/json
  }

  private static ProblemException fromJavalin(HttpResponseException e, Context ctx) {
    int status = e.getStatus();
    if (status == 413) {
      return ProblemException.of(ProblemType.BODY_TOO_LARGE, e.getMessage());
    }
    ProblemType plain = ProblemType.forStatus(status);
    if (plain == ProblemType.METHOD_NOT_ALLOWED) {
      return ProblemException.of(plain, ctx.method() + " is not a method of " + ctx.path());
    }
    if (plain == ProblemType.NOT_FOUND) {
      return ProblemException.of(plain, "no route " + ctx.method() + " " + ctx.path() + "; every route is listed in " + OPENAPI_PATH);
    }
    if (plain != null) {
      return ProblemException.of(plain, e.getMessage());
    }
    return status >= 500 ? ProblemException.of(ProblemType.INTERNAL, e.getMessage())
        : ProblemException.of(ProblemType.INVALID_REQUEST, e.getMessage());
  }

  private static ProblemException fromStatus(int status, Context ctx) {
    return fromJavalin(new HttpResponseException(status, "HTTP " + status), ctx);
  }


  static String hostPort(String host, int port) {
    return dev.tally.coordinator.net.PortCheck.text(host, port);
  }

  /**
   * Refuses {@code settings}' port if it is the coordinator's worker port too ({@code workerPort}), or if it
   * cannot be bound now ({@link dev.tally.coordinator.net.PortCheck}): for a command to call before it
   * creates or writes anything, so that a busy port leaves no store behind. Port 0 always passes.
   *
   * @param workerPort the coordinator's worker port, which must not be this port
   * @throws StartException if the port is the worker port or cannot be bound, saying so as {@link #start}
   *     does
   */
  public static void requireFreePort(Settings settings, InetSocketAddress workerPort) throws StartException {
    InetSocketAddress address = new InetSocketAddress(settings.host, settings.port);
    if (dev.tally.coordinator.net.PortCheck.clash(address, workerPort)) {
      throw cannotServe(settings, "the coordinator's worker port is there too (" + hostPort(workerPort.getHostString(),
          workerPort.getPort()) + "); give the API and the workers different ports", null);
    }
    try {
      dev.tally.coordinator.net.PortCheck.requireFree(address);
    } catch (java.io.IOException e) {
      throw cannotServe(settings, e);
    }
  }

  private static StartException cannotServe(Settings settings, Throwable e) {
    return cannotServe(settings, rootMessage(e), e);
  }

  private static StartException cannotServe(Settings settings, String why, Throwable cause) {
    return new StartException("cannot serve the HTTP API on " + hostPort(settings.host, settings.port) + ": " + why, cause);
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
  }

  /** Why the API could not start, naming the address or file. */
  public static final class StartException extends Exception {
    StartException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Where and how to serve the API. Built by {@link #builder()}; every default is a named constant.
   *
   * <p>Thread-safety: immutable.
   */
  public static final class Settings {
    /** The default host: loopback, so the API is not reachable from elsewhere unless asked. */
    public static final String DEFAULT_HOST = "127.0.0.1";
    /** The default port of {@code tally server --http}. */
    public static final int DEFAULT_PORT = 8080;
    /**
     * The largest JSON body read whole, in bytes: a run's JSON with its cases inline. Larger datasets go as
     * {@code application/x-ndjson}, which is read as a stream and limited per line instead.
     */
    public static final long DEFAULT_MAX_BODY_BYTES = 64L * 1024 * 1024;
    /**
     * How often the event stream looks for changes, ms: 250 ms makes at most 4 {@code run} events a second
     * per run, smooth enough for a progress bar and cheap enough for any number of runs.
     */
    public static final long DEFAULT_EVENT_PERIOD_MILLIS = 250;
    /**
     * The largest {@code application/x-ndjson} body, in bytes: a million cases of 4 KiB each. It is spooled
     * to disk, not memory, so the bound is there to keep one upload from filling the disk.
     */
    public static final long DEFAULT_MAX_STREAM_BYTES = 4L << 30;

    final String host;
    final int port;
    final Secret token;
    final boolean metricsPublic;
    final TlsIdentity tls;
    final boolean insecure;
    final long maxBodyBytes;
    final long maxStreamBytes;
    final long eventPeriodMillis;
    final Path spoolDirectory;

    private Settings(Builder b) {
      this.host = b.host;
      this.port = b.port;
      this.token = b.token;
      this.metricsPublic = b.metricsPublic;
      this.tls = b.tls;
      this.insecure = b.insecure;
      this.maxBodyBytes = b.maxBodyBytes;
      this.maxStreamBytes = b.maxStreamBytes;
      this.eventPeriodMillis = b.eventPeriodMillis;
      this.spoolDirectory = b.spoolDirectory;
    }

    /** A builder with the defaults. */
    public static Builder builder() {
      return new Builder();
    }

    /** Whether requests need a bearer token. */
    public boolean tokenRequired() {
      return token != null;
    }

    /** Whether the port speaks TLS. */
    public boolean tls() {
      return tls != null;
    }

    /** The host the API binds. */
    public String host() {
      return host;
    }

    @Override
    public String toString() {
      // Never the token.
      return hostPort(host, port) + (tls() ? " (TLS)" : "") + (token != null ? ", bearer token required" : ", no token")
          + (metricsPublic ? ", public metrics" : "");
    }

    /** Builds {@link Settings}; each setter checks its value. Not thread-safe. */
    public static final class Builder {
      private String host = DEFAULT_HOST;
      private int port = DEFAULT_PORT;
      private Secret token;
      private boolean metricsPublic;
      private TlsIdentity tls;
      private boolean insecure;
      private long maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
      private long maxStreamBytes = DEFAULT_MAX_STREAM_BYTES;
      private long eventPeriodMillis = DEFAULT_EVENT_PERIOD_MILLIS;
      private Path spoolDirectory = Path.of(System.getProperty("java.io.tmpdir"), "tally-uploads");

      private Builder() {}

      /**
       * Where to bind; port 0 picks a free one ({@link ApiServer#port()}).
       *
       * @throws IllegalArgumentException if the port is not from 0 to 65535
       */
      public Builder bind(String host, int port) {
        if (port < 0 || port > 65_535) {
          throw new IllegalArgumentException("the HTTP port must be from 0 to 65535, got " + port);
        }
        this.host = Objects.requireNonNull(host, "host");
        this.port = port;
        return this;
      }

      /**
       * The bearer token every request must carry, or null for none ({@link Secret} owns what a token may
       * be; {@code Secrets} where it comes from).
       */
      public Builder token(Secret token) {
        this.token = token;
        return this;
      }

      /**
       * Let the API listen on an address other than loopback without a token ({@code --insecure}; see
       * {@link ListenerSecurity}): a warning says what is exposed at start.
       */
      public Builder insecure(boolean insecure) {
        this.insecure = insecure;
        return this;
      }

      /** Whether {@code GET /metrics} answers without the token (default false). */
      public Builder metricsPublic(boolean metricsPublic) {
        this.metricsPublic = metricsPublic;
        return this;
      }

      /** Serve TLS with this identity (the worker port's: {@code --tls-cert}, {@code --tls-key}), or plaintext if null. */
      public Builder tls(TlsIdentity identity) {
        this.tls = identity;
        return this;
      }

      /**
       * The largest JSON body read whole (default {@link #DEFAULT_MAX_BODY_BYTES}).
       *
       * @throws IllegalArgumentException if below 1
       */
      public Builder maxBodyBytes(long maxBodyBytes) {
        if (maxBodyBytes < 1) {
          throw new IllegalArgumentException("the body limit must be positive, got " + maxBodyBytes);
        }
        this.maxBodyBytes = maxBodyBytes;
        return this;
      }

      /**
       * The largest {@code application/x-ndjson} body (default {@link #DEFAULT_MAX_STREAM_BYTES}).
       *
       * @throws IllegalArgumentException if below 1
       */
      public Builder maxStreamBytes(long maxStreamBytes) {
        if (maxStreamBytes < 1) {
          throw new IllegalArgumentException("the stream limit must be positive, got " + maxStreamBytes);
        }
        this.maxStreamBytes = maxStreamBytes;
        return this;
      }

      /**
       * Where uploads are spooled while they stream, before their run is written (default {@code
       * tally-uploads} in the system's temporary directory; {@code tally server} puts it beside its store,
       * since a temporary directory may be memory). Servers may share it (a standby beside its leader):
       * each spool file is named for the process writing it, and one is deleted at a server's start only
       * once its process is gone (killed mid-upload).
       */
      public Builder spoolDirectory(Path directory) {
        this.spoolDirectory = Objects.requireNonNull(directory, "directory");
        return this;
      }

      /**
       * How often the event stream looks for changes (default {@link #DEFAULT_EVENT_PERIOD_MILLIS}).
       *
       * @throws IllegalArgumentException if below 10 ms
       */
      public Builder eventPeriodMillis(long millis) {
        if (millis < 10) {
          throw new IllegalArgumentException("the event period must be at least 10 ms, got " + millis);
        }
        this.eventPeriodMillis = millis;
        return this;
      }

      public Settings build() {
        return new Settings(this);
      }
    }
  }
}

package dev.tally.cli.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.cli.client.ScriptedServer.Answer;
import dev.tally.http.ProblemType;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The client's retry policy against a scripted server: what is retried (5xx, 429, a key in use, a
 * connection refused) and what is final (other 4xx), that a retry sends the same key and body, that
 * {@code Retry-After} is honoured as the shortest wait, and that retries are bounded.
 */
class ApiClientTest {
  private final StringWriter said = new StringWriter();

  private ApiClient client(URI server, int retries) {
    return new ApiClient(new ApiClient.Settings(server, null, null, retries, Duration.ofMinutes(1), Duration.ofSeconds(20)),
        new PrintWriter(said, true));
  }

  private static ApiClient.Request keyedPost() {
    return new ApiClient.Request("POST", "/api/v1/runs", Map.of("Idempotency-Key", "\"k-1\""),
        () -> HttpRequest.BodyPublishers.ofString("{\"evaluator\":{\"kind\":\"noop\"}}\n{\"id\":\"a\"}\n"), true, null);
  }

  @Test
  void aServerErrorIsRetriedWithTheSameKeyAndBodyUntilTheServerAnswers() throws Exception {
    try (ScriptedServer server = new ScriptedServer(List.of(Answer.problem(503, "about:blank", "restarting", Map.of()),
        Answer.problem(500, "urn:tally:problem:internal", "incident 1", Map.of()), new Answer(201, Map.of(), "{\"id\":7}")))) {
      ApiClient.Response r = client(server.url(), 5).send(keyedPost(), "submitting", "with the same idempotency key");
      assertThat(r.status()).isEqualTo(201);
      assertThat(r.attempts()).isEqualTo(3);
      assertThat(server.received).hasSize(3);
      assertThat(server.received).extracting(q -> q.header("Idempotency-Key")).containsOnly("\"k-1\"");
      assertThat(server.received).extracting(q -> new String(q.body(), StandardCharsets.UTF_8)).containsOnly(
          "{\"evaluator\":{\"kind\":\"noop\"}}\n{\"id\":\"a\"}\n");
      assertThat(said.toString()).contains("submitting: the server answered 503: restarting; retry 1 of 5 in")
          .contains("with the same idempotency key").contains("retry 2 of 5");
    }
  }

  @Test
  void aClientThatTriesOnceDoesNotRetryAndWaitsNoLongerThanItsTimeout() throws Exception {
    try (ScriptedServer server = new ScriptedServer(List.of(Answer.problem(503, "about:blank", "restarting", Map.of()),
        new Answer(200, Map.of(), "{}")))) {
      ApiClient once = client(server.url(), 5).once(Duration.ofSeconds(2));
      assertThatThrownBy(() -> once.send(ApiClient.Request.get("/api/v1/runs"), "listing", "")).isInstanceOf(ApiClient.Unreachable.class);
      assertThat(server.received).as("no retry").hasSize(1);
    }
    // A server that accepts and never answers: given up after the short timeout, not the client's 20 s.
    try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 5, java.net.InetAddress.getLoopbackAddress())) {
      ApiClient once = client(URI.create("http://127.0.0.1:" + silent.getLocalPort()), 5).once(Duration.ofSeconds(2));
      long began = System.nanoTime();
      assertThatThrownBy(() -> once.send(ApiClient.Request.get("/api/v1/runs"), "listing", "")).isInstanceOf(ApiClient.Unreachable.class);
      assertThat(Duration.ofNanos(System.nanoTime() - began)).isLessThan(Duration.ofSeconds(10));
    }
  }

  @Test
  void aKeyInUseIsRetriedNoSoonerThanItsRetryAfter() throws Exception {
    try (ScriptedServer server = new ScriptedServer(List.of(
        Answer.problem(409, ProblemType.KEY_IN_USE.uri(), "still streaming", Map.of("Retry-After", "2")),
        new Answer(201, Map.of("Idempotent-Replayed", "true"), "{\"id\":7}")))) {
      ApiClient.Response r = client(server.url(), 3).send(keyedPost(), "submitting", "");
      assertThat(r.status()).isEqualTo(201);
      assertThat(r.replayed()).isTrue();
      long waitedNanos = server.received.get(1).atNanos() - server.received.get(0).atNanos();
      assertThat(Duration.ofNanos(waitedNanos)).isGreaterThanOrEqualTo(Duration.ofSeconds(2));
      assertThat(said.toString()).contains("still processing an earlier request with this idempotency key");
    }
  }

  /** Regression (breaker round 2): a Retry-After past --retry-for was slept out (minutes), then given up anyway. */
  @Test
  void aRetryAfterPastTheRetriesEndIsGivenUpAtOnceSayingSo() throws Exception {
    try (ScriptedServer server = new ScriptedServer(List.of(
        Answer.problem(503, ProblemType.UNAVAILABLE.uri(), "busy", Map.of("Retry-After", "999999")),
        new Answer(201, Map.of(), "{\"id\":7}")))) {
      long began = System.nanoTime();
      assertThatThrownBy(() -> client(server.url(), 3).send(keyedPost(), "submitting", ""))
          .isInstanceOf(ApiClient.Unreachable.class).hasMessageContaining("gave up after 1 attempt")
          .hasMessageContaining("past --retry-for 1m");
      assertThat(Duration.ofNanos(System.nanoTime() - began)).isLessThan(Duration.ofSeconds(10));
      assertThat(server.received).hasSize(1);
    }
  }

  /** The request's timeout counts the connection too: with --request-timeout 1ms it said "no connection within 10s". */
  @Test
  void aConnectionTimeoutNamesTheShorterOfTheTwoTimeouts() {
    var timedOut = new java.net.http.HttpConnectTimeoutException("HTTP connect timed out");
    assertThat(ApiClient.judge(timedOut, Duration.ofMillis(1))).hasMessage("no connection within 1ms");
    assertThat(ApiClient.judge(timedOut, Duration.ofMinutes(5))).hasMessage("no connection within "
        + dev.tally.core.DurationText.text(ApiClient.CONNECT_TIMEOUT));
  }

  /** Regression (the third breaker's round): a --retry-for no longer than the first wait threw Failsafe's error. */
  @Test
  void aRetryForNoLongerThanTheFirstWaitMakesNoRetry() throws Exception {
    for (Duration retryFor : List.of(Duration.ZERO, Duration.ofMillis(1), ApiClient.FIRST_BACKOFF)) {
      try (ScriptedServer server = new ScriptedServer(List.of(
          Answer.problem(503, ProblemType.UNAVAILABLE.uri(), "busy", Map.of()), new Answer(201, Map.of(), "{\"id\":7}")))) {
        ApiClient client = new ApiClient(new ApiClient.Settings(server.url(), null, null, 3, retryFor, Duration.ofSeconds(20)),
            new PrintWriter(said, true));
        assertThatThrownBy(() -> client.send(keyedPost(), "submitting", "")).as("--retry-for %s", retryFor)
            .isInstanceOf(ApiClient.Unreachable.class).hasMessageContaining("gave up after 1 attempt");
        assertThat(server.received).hasSize(1);
      }
    }
  }

  @Test
  void a409ThatIsNotAKeyInUseIsFinal() throws Exception {
    try (ScriptedServer server = new ScriptedServer(List.of(
        Answer.problem(409, ProblemType.RUN_FINISHED.uri(), "run 3 has already finished", Map.of())))) {
      ApiClient.Response r = client(server.url(), 3).send(ApiClient.Request.post("/api/v1/runs/3/cancel"), "cancelling", "");
      assertThat(r.status()).isEqualTo(409);
      assertThat(server.received).hasSize(1);
      assertThatThrownBy(() -> ApiClient.requireOk(r)).isInstanceOf(ApiClient.Refused.class)
          .hasMessage("t (409): run 3 has already finished");
    }
  }

  @Test
  void aClientErrorIsFinalAndSaidFromItsProblemWithThePlace() throws Exception {
    String problem = "{\"type\":\"urn:tally:problem:invalid-case\",\"title\":\"A case of the body is not valid\",\"status\":400,"
        + "\"detail\":\"request body line 3: case has no \\\"id\\\" field\",\"instance\":\"/api/v1/runs\",\"line\":3}";
    try (ScriptedServer server = new ScriptedServer(List.of(new Answer(400, Map.of(), problem)))) {
      ApiClient.Response r = client(server.url(), 3).send(keyedPost(), "submitting", "");
      assertThat(server.received).hasSize(1);
      ApiClient.Refused refused = ApiClient.Refused.of(r.status(), r.body());
      assertThat(refused.getMessage())
          .isEqualTo("A case of the body is not valid (400): request body line 3: case has no \"id\" field [line 3]");
      assertThat(refused.problem().line()).isEqualTo(3);
      assertThat(said.toString()).isEmpty();
    }
  }

  @Test
  void ofTwoServersThatAreNotThereTheRetriesGoRoundAndTheLastLineSaysNoMoreThanWhy() throws Exception {
    URI a = deadServer();
    URI b = deadServer();
    ApiClient twoServers = new ApiClient(new ApiClient.Settings(a, null, null, 1, Duration.ofMinutes(1), Duration.ofSeconds(20),
        java.util.List.of(a, b)), new java.io.PrintWriter(said, true));
    assertThatThrownBy(() -> twoServers.send(ApiClient.Request.get("/api/v1/runs"), "listing runs", ""))
        .isInstanceOf(ApiClient.Unreachable.class)
        // Not "...; trying http://..." at the end of giving up, and the time with its tenths (it said "in 1 s"
        // after a wait of 1.6 s).
        .hasMessageMatching("listing runs: gave up after 2 attempts in \\d+\\.\\d s; the last: .*connection refused[^;]*");
    assertThat(said.toString()).contains("retry 1 of 1 in").contains("; trying " + b);
  }

  @Test
  void aProblemWhoseDetailRepeatsItsTitleIsSaidOnce() {
    byte[] reused = ("{\"type\":\"urn:tally:problem:idempotency-key-reused\",\"title\":\"This Idempotency-Key was used for"
        + " another request\",\"status\":422,\"detail\":\"this Idempotency-Key was used for another request (it created"
        + " run 4)\",\"header\":\"Idempotency-Key\"}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(ApiClient.Refused.of(422, reused).getMessage())
        .isEqualTo("this Idempotency-Key was used for another request (it created run 4) (422) [header Idempotency-Key]");
    byte[] other = "{\"title\":\"Not found\",\"status\":404,\"detail\":\"there is no run 9\"}"
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(ApiClient.Refused.of(404, other).getMessage()).isEqualTo("Not found (404): there is no run 9");
  }

  private static URI deadServer() throws java.io.IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return URI.create("http://127.0.0.1:" + s.getLocalPort()); // closed again: nothing listens there now
    }
  }

  @Test
  void aServerThatIsNotThereIsRetriedABoundedNumberOfTimesThenGivenUp() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there now
    }
    assertThatThrownBy(() -> client(URI.create("http://127.0.0.1:" + port), 2).send(ApiClient.Request.get("/api/v1/runs"), "listing runs", ""))
        .isInstanceOf(ApiClient.Unreachable.class)
        .hasMessageContaining("listing runs: gave up after 3 attempts").hasMessageContaining("connection refused");
    assertThat(said.toString().lines()).hasSize(2).allMatch(l -> l.contains("connection refused"));
  }

  @Test
  void retryAfterIsReadAsSecondsOrAnHttpDate() {
    Clock clock = Clock.fixed(Instant.parse("2026-12-01T10:00:00Z"), ZoneOffset.UTC);
    assertThat(ApiClient.retryAfter("3", clock)).contains(Duration.ofSeconds(3));
    assertThat(ApiClient.retryAfter("Tue, 01 Dec 2026 10:00:05 GMT", clock)).contains(Duration.ofSeconds(5));
    assertThat(ApiClient.retryAfter("Tue, 01 Dec 2026 09:00:00 GMT", clock)).contains(Duration.ZERO);
    assertThat(ApiClient.retryAfter("soon", clock)).isEmpty();
  }

  @Test
  void theWaitAskedForARetryAfterIsNeverShortenedByTheJitter() {
    Duration asked = ApiClient.shortestWaitFor(Duration.ofSeconds(3));
    assertThat(asked.toMillis() * (1 - ApiClient.JITTER)).isGreaterThanOrEqualTo(3000);
  }

  @Test
  void theServersUrlIsTakenWithOrWithoutTheApiBase() {
    assertThat(ApiClient.serverUri("http://127.0.0.1:8080")).isEqualTo(URI.create("http://127.0.0.1:8080"));
    assertThat(ApiClient.serverUri("http://127.0.0.1:8080/api/v1/")).isEqualTo(URI.create("http://127.0.0.1:8080"));
    assertThat(ApiClient.serverUri("HTTPS://tally.example:443/")).isEqualTo(URI.create("https://tally.example:443"));
    assertThatThrownBy(() -> ApiClient.serverUri("127.0.0.1:8080")).hasMessageContaining("must start with http:// or https://");
    assertThatThrownBy(() -> ApiClient.serverUri("http://h:1/?x=1")).hasMessageContaining("no query");
  }
}

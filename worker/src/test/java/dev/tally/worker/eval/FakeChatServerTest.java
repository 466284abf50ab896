package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the fake endpoint counts, since the benchmark's figures and the kill tests' bounds rest on it: a
 * request is in flight from arrival until answered and billed only once its 2xx answer is sent; held answers
 * stay in flight; the counters route agrees with the methods; it listens on loopback only.
 */
class FakeChatServerTest {
  /** How long a test waits for the fake server's handlers to count the answers a client has read. */
  private static final Duration SETTLE = Duration.ofSeconds(10);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String QUESTION = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"What is 38 + 4?\"}]}";

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private FakeChatServer server;

  @BeforeEach
  void start() throws Exception {
    server = FakeChatServer.start(null);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private CompletableFuture<HttpResponse<String>> ask() {
    return http.sendAsync(HttpRequest.newBuilder(URI.create(server.baseUrl() + "/chat/completions"))
        .POST(HttpRequest.BodyPublishers.ofString(QUESTION)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode counters(String method) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(server.baseUrl().replace(FakeChatServer.BASE_PATH, "") + FakeChatServer.COUNTERS_PATH));
    HttpResponse<String> r = http.send(method.equals("POST") ? b.POST(HttpRequest.BodyPublishers.noBody()).build() : b.GET().build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  @Test
  void heldRequestsAreInFlightAndUnbilledUntilAnsweredThenBilledOnce() throws Exception {
    server.hold();
    List<CompletableFuture<HttpResponse<String>>> asked = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      asked.add(ask());
    }
    await("three requests held").atMost(Duration.ofSeconds(30)).until(() -> server.inFlight() == 3);
    assertThat(server.billed()).isZero();
    assertThat(server.requests()).isEqualTo(3);
    assertThat(asked).noneMatch(CompletableFuture::isDone);
    JsonNode c = counters("GET");
    assertThat(c.get("inFlight").asInt()).isEqualTo(3);
    assertThat(c.get("maxInFlight").asInt()).isEqualTo(3);
    assertThat(c.get("billed").asInt()).isZero();

    server.release();
    for (CompletableFuture<HttpResponse<String>> f : asked) {
      HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(JSON.readTree(r.body()).at("/choices/0/message/content").asText()).isEqualTo("42");
    }
    await("answers counted").atMost(Duration.ofSeconds(30)).until(() -> server.billed() == 3);
    assertThat(server.inFlight()).isZero();
    assertThat(server.maxInFlight()).isEqualTo(3);
    assertThat(counters("POST").get("maxInFlight").asInt()).as("a new peak starts at what is in flight now").isZero();
    assertThat(server.maxInFlight()).isZero();
  }

  @Test
  void injectedFailuresAreAnsweredWithRetryAfterAndNotBilled() throws Exception {
    server.failNext(2, 429, "3");
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> r = ask().get(30, TimeUnit.SECONDS);
      assertThat(r.statusCode()).isEqualTo(429);
      assertThat(r.headers().firstValue("Retry-After")).hasValue("3");
    }
    server.failNext(1, 500, null);
    assertThat(ask().get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(500);
    assertThat(ask().get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(server.requests()).isEqualTo(4);
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(1);
  }

  @Test
  void aLatencyKeepsTheRequestInFlightForAtLeastThatLong() throws Exception {
    server.delay(Duration.ofMillis(300));
    long t0 = System.nanoTime();
    assertThat(ask().get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(1);
  }

  @Test
  void itListensOnLoopbackOnly() throws Exception {
    assertThat(java.net.InetAddress.getByName(URI.create(server.baseUrl()).getHost()).isLoopbackAddress()).isTrue();
  }
}

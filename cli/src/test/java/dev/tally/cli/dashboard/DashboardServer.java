package dev.tally.cli.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.cli.TallyProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * A real {@code tally server} (its own worker processes, a short detection window) with an API token, and
 * the API calls the dashboard's browser tests make beside the page: the fixture the Chromium and the
 * Firefox tests share.
 *
 * <p>Thread-safety: one test thread.
 */
final class DashboardServer implements AutoCloseable {
  /** The bearer token of every dashboard test's server. */
  static final String TOKEN = "dashboard-test-token-5c1e";
  private static final ObjectMapper JSON = new ObjectMapper();
  /**
   * A JavaScript expression for the page: how many times it sent {@code POST /api/v1/runs} (the only
   * fetch of that path without a query), from its resource timings.
   */
  static final String SUBMISSIONS_SENT = "performance.getEntriesByType('resource')"
      + ".filter(e => e.initiatorType === 'fetch' && new URL(e.name).pathname === '/api/v1/runs' && new URL(e.name).search === '').length";

  final TallyProcess process;
  /** {@code http://127.0.0.1:PORT}, without a trailing slash. */
  final String url;
  final int port;
  private final Path dir;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();

  private DashboardServer(TallyProcess process, String url, Path dir) {
    this.process = process;
    this.url = url;
    this.port = URI.create(url).getPort();
    this.dir = dir;
  }

  /**
   * Starts {@code tally server} with its database, token file and log in {@code dir}, a 200 ms heartbeat
   * and a 4 s detection window (a killed worker's closed socket is seen at once; silence is judged only
   * after 4 s, so a live worker starved of CPU by the rest of the suite is not reaped), plus {@code more} arguments ({@code --workers=N}...), and waits for its
   * start line, which must name the dashboard.
   *
   * @throws AssertionError if the server exits first or its start line does not name the dashboard
   */
  static DashboardServer start(Path dir, String... more) throws Exception {
    Path token = Files.writeString(dir.resolve("api-token"), TOKEN + "\n");
    List<String> args = new ArrayList<>(List.of("server", "--db=" + dir.resolve("tally.db"), "--http=127.0.0.1:0",
        "--api-token-file=" + token, "--heartbeat-interval=200ms", "--detection-window=4s"));
    args.addAll(List.of(more));
    TallyProcess process = TallyProcess.start(dir, "server.log", args);
    try {
      String url = process.serverUrl();
      assertThat(process.output()).as("the start line names the dashboard").contains("; dashboard " + url + "/;");
      return new DashboardServer(process, url, dir);
    } catch (RuntimeException | Error e) {
      process.close();
      throw e;
    }
  }

  /** GET {@code path} ({@code /api/v1/...}) with the token; the answer must be 200. */
  JsonNode get(String path) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + path)).header("Authorization", "Bearer " + TOKEN)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as("GET %s: %s", path, r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  /** Submits a run over the API (not the page): its fields as NDJSON's first line, then the dataset. */
  JsonNode submit(String header, Path dataset) throws Exception {
    Path body = dir.resolve("body-" + UUID.randomUUID() + ".ndjson");
    Files.writeString(body, header + "\n");
    try (var out = Files.newOutputStream(body, StandardOpenOption.APPEND)) {
      Files.copy(dataset, out);
    }
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/runs"))
        .header("Authorization", "Bearer " + TOKEN).header("Idempotency-Key", UUID.randomUUID().toString())
        .header("Content-Type", "application/x-ndjson").timeout(Duration.ofSeconds(120))
        .POST(HttpRequest.BodyPublishers.ofFile(body)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    return JSON.readTree(r.body());
  }

  int runCount() throws Exception {
    return get("/api/v1/runs").get("runs").size();
  }

  /** The id of the live worker named {@code name} ({@code local-1}...). */
  String liveWorkerId(String name) throws Exception {
    for (JsonNode w : get("/api/v1/workers").get("workers")) {
      if (w.get("name").asText().equals(name) && w.get("state").asText().equals("live")) {
        return w.get("id").asText();
      }
    }
    throw new AssertionError("no live worker " + name + " in " + get("/api/v1/workers"));
  }

  /**
   * Writes ten cases for {@code exec cat}: each case's own line comes back as its verdict line, seven
   * passing, scores 0.1 to 1.0, so the run's accuracy is 70% and its mean score 0.55; answers A1..A10
   * and one other field, {@code why}.
   */
  static Path scoredDataset(Path file) throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 1; i <= 10; i++) {
      lines.add("{\"id\":\"s" + i + "\",\"verdict\":\"" + (i <= 7 ? "pass" : "fail") + "\",\"score\":" + (i / 10.0)
          + ",\"answer\":\"A" + i + "\",\"why\":\"w" + i + "\"}");
    }
    return Files.write(file, lines);
  }

  /** The header that submits a run of {@link #scoredDataset} evaluated by {@code exec cat}. */
  static String scoredRunHeader(String name) {
    return "{\"name\":\"" + name + "\",\"evaluator\":{\"kind\":\"exec\",\"cmd\":\"cat\"}}";
  }

  @Override
  public void close() {
    process.close();
  }
}

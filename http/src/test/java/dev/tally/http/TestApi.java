package dev.tally.http;

import dev.tally.core.security.Secret;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.worker.LocalWorker;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A coordinator on a SQLite store in a temporary directory, an in-process worker, and the API on a free
 * loopback port: a real server for contract tests, and a small client for it.
 */
final class TestApi implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();

  final Coordinator coordinator;
  final ApiServer api;
  final HttpClient client;
  final String token;
  private LocalWorker worker;

  private TestApi(Coordinator coordinator, ApiServer api, HttpClient client, String token) {
    this.coordinator = coordinator;
    this.api = api;
    this.client = client;
    this.token = token;
  }

  /** A server on {@code dir}'s store; {@code settings} gets its bind address here. */
  static TestApi start(Path dir, ApiServer.Settings.Builder settings, String token) throws Exception {
    CoordinatorBuilder builder = Coordinator.builder().storeFile(dir.resolve("tally.db"));
    SchedulerMetrics live = SchedulerMetrics.observing(builder);
    Coordinator coordinator = builder.start();
    try {
      ApiServer api = ApiServer.start(settings.bind("127.0.0.1", 0).spoolDirectory(dir.resolve("uploads")).token(token == null ? null : Secret.of(token, "API token")).build(), coordinator, live);
      return new TestApi(coordinator, api, HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build(), token);
    } catch (Exception | Error e) {
      coordinator.close();
      throw e;
    }
  }

  static TestApi start(Path dir) throws Exception {
    return start(dir, ApiServer.Settings.builder(), null);
  }

  /** Starts an in-process worker of {@code slots} slots. */
  TestApi withWorker(int slots) {
    worker = LocalWorker.start("in-process", slots, slots, coordinator.scheduler(), coordinator.store().storeId());
    return this;
  }

  /** Creates a run of {@code n} noop cases ({@code c0}...) in the store, without submitting it. */
  long createRun(String dataset, int n, String evaluator) {
    List<CaseRecord> cases = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      cases.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}"));
    }
    EvaluatorSpec spec = new EvaluatorSpec(evaluator, Map.of(), Duration.ofMinutes(1));
    return coordinator.store().createRun(new RunSpec(dataset, spec, 3), cases);
  }

  /** Creates a run and runs it to its end. */
  RunCounters runToEnd(String dataset, int n) throws Exception {
    long id = createRun(dataset, n, "noop");
    return coordinator.submit(id).get(60, TimeUnit.SECONDS);
  }

  /** Where the server spools uploads (under the test's directory). */
  Path spoolDirectory() {
    return api.spoolDirectory();
  }

  URI uri(String path) {
    return URI.create(api.url() + path);
  }

  HttpRequest.Builder request(String path) {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return b;
  }

  HttpResponse<String> get(String path) throws IOException, InterruptedException {
    return client.send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> send(HttpRequest request) throws IOException, InterruptedException {
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode json(HttpResponse<String> response) throws IOException {
    return JSON.readTree(response.body());
  }

  @Override
  public void close() {
    try {
      api.close();
    } finally {
      if (worker != null) {
        worker.close("test over");
      }
      coordinator.close();
    }
  }
}

package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.simulation.Checker;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code tally server} with a fleet of three {@code tally worker} processes, under real faults: a worker
 * killed with {@code kill -9}, another frozen with SIGSTOP for twice the detection window then continued,
 * and the server itself killed with {@code kill -9} mid-run and started again on its store. Two runs of
 * exec cases share the fleet throughout; every case of both is recorded exactly once (as the API, the
 * results and the store's own invariant checker say), and neither token shows in any log.
 */
class ServerFleetProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String API_TOKEN = "fleet-api-token-5c1e9b";
  private static final String WORKER_TOKEN = "fleet-worker-token-a47d02";

  /** Cases per run: with 4-6 slots of 250 ms cases, some 15 s of work, so every fault lands mid-run. */
  private static final int CASES = 150;
  /** The detection window the server runs with; the frozen worker stays frozen twice as long. */
  private static final Duration WINDOW = Duration.ofSeconds(2);
  /** Each case's time: long enough that a worker always holds some when it is killed or frozen. */
  private static final String CASE_SCRIPT = "#!/bin/sh\nsleep 0.25\necho ok\n";

  @TempDir Path dir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"sqlite", "postgresql"})
  void twoRunsOnAFleetOfThreeSurviveAWorkerKilledAWorkerFrozenAndTheServerKilledEachCaseRecordedOnce(String storeKind) throws Exception {
    StoreUnderTest db = StoreUnderTest.of(storeKind, dir);
    Path script = Files.writeString(dir.resolve("case.sh"), CASE_SCRIPT);
    String exec = JSON.writeValueAsString(Map.of("kind", "exec", "cmd", "sh " + script + " {id}"));
    Path apiToken = secretFile("api-token", API_TOKEN);
    Path workerToken = secretFile("worker-token", WORKER_TOKEN);
    int port = Ports.freeFixedLoopbackPort();
    List<String> server = List.of("server", db.dbArgument(), "--http=127.0.0.1:0", "--listen=127.0.0.1:" + port, "--workers=0",
        "--api-token-file=" + apiToken, "--worker-token-file=" + workerToken,
        "--heartbeat-interval=200ms", "--detection-window=" + WINDOW.toSeconds() + "s");

    List<TallyProcess> workers = new ArrayList<>();
    List<List<String>> ids = new ArrayList<>();
    try {
      try (TallyProcess first = TallyProcess.start(dir, "server-1.log", server, db.env())) {
        for (int w = 1; w <= 3; w++) {
          workers.add(TallyProcess.start(dir, "worker-" + w + ".log", List.of("worker", "--coordinator=127.0.0.1:" + port,
              "--token-file=" + workerToken, "--slots=2", "--name=w" + w)));
        }
        String url = first.serverUrl();
        for (int r = 1; r <= 2; r++) {
          ids.add(caseIds("r" + r + "-c", CASES));
          assertThat(submit(url, "fleet-" + r, exec, ids.get(r - 1))).as("run ids in the order of submission").isEqualTo(r);
        }
        await("both runs under way").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> recorded(url, 1) >= 10 && recorded(url, 2) >= 10);

        // A worker dies with its cases: they go back to the queue.
        TallyProcess killed = workers.get(0);
        Signals.send(killed.process.pid(), "KILL");
        killed.process.waitFor();
        long afterKill = recorded(url, 1) + recorded(url, 2);
        await("progress without the killed worker").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> recorded(url, 1) + recorded(url, 2) >= afterKill + 12);

        // A worker freezes for twice the window: the server gives it up and runs its cases elsewhere; when it
        // thaws, what it then reports of them must not count twice.
        TallyProcess frozen = workers.get(1);
        long stoppedAt = System.nanoTime();
        Signals.send(frozen.process.pid(), "STOP");
        try {
          await("the frozen worker given up, and frozen for twice the window").atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(100))
              .until(() -> workerLeft(url, "w2") && System.nanoTime() - stoppedAt >= 2 * WINDOW.toNanos());
        } finally {
          Signals.send(frozen.process.pid(), "CONT");
        }
        long thawed = recorded(url, 1) + recorded(url, 2);
        await("progress after the thaw").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> recorded(url, 1) + recorded(url, 2) >= thawed + 12);
        assertThat(recorded(url, 1) + recorded(url, 2)).as("the server is killed mid-run").isLessThan(2L * CASES - 20);
        Signals.send(first.process.pid(), "KILL");
        first.process.waitFor();
      }

      // The same server again, on the same store and port: the surviving workers come back to it.
      try (TallyProcess second = TallyProcess.start(dir, "server-2.log", server, db.env())) {
        String url = second.serverUrl();
        // It stands by until the killed server's leader lease lapses (3 s by default), then leads and resumes.
        await("the restarted server leads and resumes both runs").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
            .until(() -> second.output().contains("resuming run 1") && second.output().contains("resuming run 2"));
        for (int run = 1; run <= 2; run++) {
          int r = run;
          await("run " + run + " finished").atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
              .until(() -> get(url + "/api/v1/runs/" + r).get("state").asText().equals("finished"));
          JsonNode counters = get(url + "/api/v1/runs/" + run).get("counters");
          assertThat(counters.get("recorded").asLong()).as("run %d recorded", run).isEqualTo(CASES);
          assertThat(counters.get("passed").asLong()).as("run %d passed", run).isEqualTo(CASES);
          assertThat(resultIds(url, run)).as("run %d's results: each case once", run).hasSize(CASES)
              .containsExactlyInAnyOrderElementsOf(ids.get(run - 1));
        }
        // Each case's attempts, as the API tells them: one recorded attempt per case, and the faulted workers'
        // attempts ended by their loss.
        Set<String> endings = new HashSet<>();
        for (int run = 1; run <= 2; run++) {
          for (String caseId : ids.get(run - 1)) {
            JsonNode attempts = get(url + "/api/v1/runs/" + run + "/cases/" + caseId + "/attempts").get("attempts");
            int recordedAttempts = 0;
            for (JsonNode a : attempts) {
              endings.add(a.get("worker").asText() + " " + a.get("ending").asText());
              recordedAttempts += a.get("ending").asText().equals("recorded") ? 1 : 0;
            }
            assertThat(recordedAttempts).as("recorded attempts of %s in run %d: %s", caseId, run, attempts).isEqualTo(1);
          }
        }
        assertThat(endings).as("how attempts ended").contains("w1 worker_lost", "w2 worker_lost");
        long redeliveries = counter(url, "redeliveries");
        assertThat(redeliveries).as("the killed and the frozen worker's cases went back to the queue").isPositive();
        assertThat(counter(url, "staleResultsFenced")).as("what the frozen worker reported after its thaw was fenced").isPositive();
        // The server's metrics say the same: the store's figures, and what this server recorded itself.
        Map<String, Double> metrics = metrics(url);
        assertThat(metrics).containsEntry("tally_cases{verdict=\"pass\"}", 2.0 * CASES)
            .containsEntry("tally_redeliveries", (double) redeliveries)
            .containsEntry("tally_runs{state=\"finished\"}", 2.0);
        assertThat(metrics.get("tally_records_total{status=\"recorded\"}")).as("cases recorded after the restart")
            .isBetween(1.0, 2.0 * CASES);
        Signals.send(second.process.pid(), "TERM");
        assertThat(second.waitFor(60)).as(second.output()).isZero();
      }
    } finally {
      workers.forEach(TallyProcess::close);
    }

    try (dev.tally.store.JdbcStore store = db.openExisting()) {
      for (int run = 1; run <= 2; run++) {
        Checker.RunCheck check = Checker.checkRun(store, run, ids.get(run - 1));
        assertThat(check.violations()).as("run %d", run).isEmpty();
        assertThat(check.counters().recorded()).isEqualTo(CASES);
      }
    }
    assertNoTokenInAnyLog();
  }

  @Test
  void aBigRunSubmittedFirstDoesNotStarveASmallRunSubmittedAfterIt() throws Exception {
    Path apiToken = secretFile("api-token", API_TOKEN);
    String sleep = "{\"kind\": \"sleep\", \"millis\": 40}";
    try (TallyProcess server = TallyProcess.start(dir, "server.log", List.of("server", "--db=" + dir.resolve("fair.db"),
        "--http=127.0.0.1:0", "--workers=2", "--slots=2", "--api-token-file=" + apiToken))) {
      String url = server.serverUrl();
      // 1,200 cases of 40 ms on 4 slots: some 12 s of work. First come, first served, the small run would
      // wait for all of it; shared fairly, it gets half the slots as soon as it is there.
      long big = submit(url, "big", sleep, caseIds("big-", 1_200));
      await("the big run holding the fleet").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> recorded(url, big) >= 20);
      long small = submit(url, "small", sleep, caseIds("small-", 8));
      await("the small run finished").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> get(url + "/api/v1/runs/" + small).get("state").asText().equals("finished"));
      JsonNode bigNow = get(url + "/api/v1/runs/" + big);
      assertThat(bigNow.get("state").asText()).isEqualTo("running");
      assertThat(bigNow.get("counters").get("recorded").asLong()).as("the big run's cases recorded when the small run finished")
          .isLessThan(1_200 / 2);
      assertThat(get(url + "/api/v1/runs/" + small).get("counters").get("passed").asLong()).isEqualTo(8);
      Signals.send(server.process.pid(), "TERM");
      assertThat(server.waitFor(60)).as(server.output()).isZero();
    }
  }

  /** {@code n} case ids, {@code prefix + i}. */
  private static List<String> caseIds(String prefix, int n) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(prefix + i);
    }
    return ids;
  }

  /**
   * Submits a run over {@code POST /api/v1/runs} (JSON, its cases inline, a key of its own) as a client
   * would, and answers its id.
   */
  private long submit(String url, String name, String evaluator, List<String> ids) throws IOException, InterruptedException {
    StringBuilder body = new StringBuilder("{\"name\": \"" + name + "\", \"evaluator\": " + evaluator
        + ", \"settings\": {\"maxAttempts\": 5, \"caseTimeout\": \"2m\"}, \"cases\": [");
    for (int i = 0; i < ids.size(); i++) {
      body.append(i == 0 ? "" : ", ").append("{\"id\": \"").append(ids.get(i)).append("\"}");
    }
    body.append("]}");
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/runs"))
        .header("Authorization", "Bearer " + API_TOKEN).header("Content-Type", "application/json")
        .header("Idempotency-Key", "\"" + name + "-" + UUID.randomUUID() + "\"").timeout(Duration.ofSeconds(60))
        .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    return JSON.readTree(r.body()).get("id").asLong();
  }

  /** A token file only its owner reads, as a careful operator keeps it. */
  private Path secretFile(String name, String token) throws IOException {
    Path file = Files.writeString(dir.resolve(name), token + "\n");
    Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    return file;
  }

  private void assertNoTokenInAnyLog() throws IOException {
    List<Path> logs;
    try (Stream<Path> files = Files.walk(dir)) {
      logs = files.filter(Files::isRegularFile).filter(f -> f.getFileName().toString().endsWith(".log")).toList();
    }
    assertThat(logs).as("the server's and the workers' logs").hasSizeGreaterThanOrEqualTo(5);
    for (Path log : logs) {
      String text = Files.readString(log);
      assertThat(text).as("%s", log).doesNotContain(API_TOKEN).doesNotContain(WORKER_TOKEN);
    }
  }

  private HttpResponse<String> send(String url) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + API_TOKEN)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode get(String url) throws IOException, InterruptedException {
    HttpResponse<String> r = send(url);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  /** A counter summed over both runs. */
  private long counter(String url, String name) throws IOException, InterruptedException {
    return get(url + "/api/v1/runs/1").get("counters").get(name).asLong() + get(url + "/api/v1/runs/2").get("counters").get(name).asLong();
  }

  /** {@code GET /metrics}, every sample by series. */
  private Map<String, Double> metrics(String url) throws IOException, InterruptedException {
    HttpResponse<String> r = send(url + "/metrics");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    Map<String, Double> samples = new java.util.LinkedHashMap<>();
    for (String line : r.body().split("\n")) {
      if (!line.isBlank() && !line.startsWith("#")) {
        int space = line.lastIndexOf(' ');
        samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
      }
    }
    return samples;
  }

  private long recorded(String url, long run) throws IOException, InterruptedException {
    return get(url + "/api/v1/runs/" + run).get("counters").get("recorded").asLong();
  }

  private boolean workerLeft(String url, String name) throws IOException, InterruptedException {
    for (JsonNode w : get(url + "/api/v1/workers").get("workers")) {
      if (w.get("name").asText().equals(name) && w.get("state").asText().equals("left")) {
        return true;
      }
    }
    return false;
  }

  /** The case ids of a finished run's results, as {@code GET .../results} streams them, repeats kept. */
  private List<String> resultIds(String url, long run) throws IOException, InterruptedException {
    HttpResponse<String> r = send(url + "/api/v1/runs/" + run + "/results");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    List<String> ids = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (String line : r.body().split("\n")) {
      if (!line.isBlank()) {
        String id = JSON.readTree(line).get("id").asText();
        ids.add(id);
        seen.add(id);
      }
    }
    assertThat(seen).hasSameSizeAs(ids);
    return ids;
  }
}

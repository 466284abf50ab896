package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.JobState;
import dev.tally.core.store.RunSpec;
import dev.tally.simulation.Checker;
import dev.tally.store.SqliteStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally server} as a real process: it resumes every unfinished run of its store, serves them over
 * the API with its token, survives {@code kill -9} (the next server on the store finishes every run, each
 * case recorded once), and stops cleanly on SIGTERM, waiting for what is in flight and exiting 0.
 */
class ServerProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TOKEN = "server-test-token-7f3a";

  @TempDir Path dir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

  /** Writes runs of sleep cases into a fresh store, as a server killed before it ran them would leave it. */
  private static List<List<String>> seed(Path db, int runs, int cases, int millis) {
    List<List<String>> ids = new ArrayList<>();
    try (SqliteStore store = SqliteStore.open(db)) {
      for (int r = 0; r < runs; r++) {
        List<CaseRecord> records = new ArrayList<>();
        List<String> runIds = new ArrayList<>();
        for (int i = 0; i < cases; i++) {
          String id = "r" + r + "-c" + i;
          runIds.add(id);
          records.add(new CaseRecord(i, id, "{\"id\":\"" + id + "\",\"millis\":" + millis + "}"));
        }
        EvaluatorSpec sleep = new EvaluatorSpec("sleep", Map.of(), Duration.ofMinutes(1));
        store.createRun(new RunSpec("seeded-" + r, sleep, 5), records);
        ids.add(runIds);
      }
    }
    return ids;
  }

  private List<String> serverArgs(Path db, Path tokenFile, String... more) {
    List<String> args = new ArrayList<>(List.of("server", "--db=" + db, "--http=127.0.0.1:0", "--workers=2", "--slots=2",
        "--api-token-file=" + tokenFile, "--heartbeat-interval=200ms", "--detection-window=1s"));
    args.addAll(List.of(more));
    return args;
  }

  private JsonNode get(String url) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + TOKEN)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  private Path tokenFile() throws Exception {
    return Files.writeString(dir.resolve("api-token"), TOKEN + "\n");
  }

  @Test
  void anApiPortOrAWorkerPortThatAnotherProgramHoldsIsRefusedLeavingNothingBehind() throws Exception {
    Path storeDir = Files.createDirectories(dir.resolve("store"));
    Path db = storeDir.resolve("tally.db");
    try (java.net.ServerSocket held = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      String busy = "127.0.0.1:" + held.getLocalPort();
      List<String> args = new ArrayList<>(serverArgs(db, tokenFile()));
      args.set(args.indexOf("--http=127.0.0.1:0"), "--http=" + busy);
      try (TallyProcess server = TallyProcess.start(dir, "busy-http.log", args)) {
        assertThat(server.waitFor(60)).as(server.output()).isEqualTo(Main.EXIT_USAGE);
        assertThat(server.output()).contains("tally server: cannot serve the HTTP API on " + busy + ": Address already in use")
            .doesNotContain("ERROR");
      }
      try (TallyProcess server = TallyProcess.start(dir, "busy-listen.log", serverArgs(db, tokenFile(), "--listen=" + busy))) {
        assertThat(server.waitFor(60)).as(server.output()).isEqualTo(Main.EXIT_USAGE);
        assertThat(server.output()).contains("tally server: cannot listen for workers on " + busy + ": Address already in use");
      }
    }
    int free;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      free = probe.getLocalPort();
    }
    // One port for the API and the workers: a standby would start, then fail when it took the lead.
    List<String> same = new ArrayList<>(serverArgs(db, tokenFile(), "--listen=127.0.0.1:" + free));
    same.set(same.indexOf("--http=127.0.0.1:0"), "--http=127.0.0.1:" + free);
    try (TallyProcess server = TallyProcess.start(dir, "same-port.log", same)) {
      assertThat(server.waitFor(60)).as(server.output()).isEqualTo(Main.EXIT_USAGE);
      assertThat(server.output()).contains("the coordinator's worker port is there too");
    }
    try (java.util.stream.Stream<Path> left = Files.list(storeDir)) {
      assertThat(left).as("no store, lock or workers' logs").isEmpty();
    }
  }

  @Test
  void aServerKilledWithKill9IsFinishedByTheNextOneOnItsStoreEachCaseRecordedOnce() throws Exception {
    Path db = dir.resolve("server.db");
    List<List<String>> ids = seed(db, 2, 150, 40);
    Path token = tokenFile();
    try (TallyProcess first = TallyProcess.start(dir, "server-1.log", serverArgs(db, token))) {
      String url = first.serverUrl();
      await("cases recorded before the kill").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> get(url + "/api/v1/runs/1").get("counters").get("recorded").asLong() >= 30);
      Signals.send(first.process.pid(), "KILL");
      first.process.waitFor();
    }
    try (TallyProcess second = TallyProcess.start(dir, "server-2.log", serverArgs(db, token))) {
      String url = second.serverUrl();
      // It stands by until the killed server's leader lease lapses (3 s by default), then leads and resumes.
      await("the restarted server leads and resumes both runs").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> second.output().contains("resuming run 1") && second.output().contains("resuming run 2"));
      for (int run = 1; run <= 2; run++) {
        String runUrl = url + "/api/v1/runs/" + run;
        await("run " + run + " finished").atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
            .until(() -> get(runUrl).get("state").asText().equals("finished"));
        assertThat(get(runUrl).get("counters").get("passed").asLong()).isEqualTo(150);
      }
      Signals.send(second.process.pid(), "TERM");
      assertThat(second.waitFor(60)).as(second.output()).isZero();
      for (TallyProcess p : List.of(second)) {
        assertThat(p.output()).doesNotContain(TOKEN);
      }
    }
    assertThat(Files.readString(dir.resolve("server-1.log"))).doesNotContain(TOKEN);
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      for (int run = 1; run <= 2; run++) {
        Checker.RunCheck check = Checker.checkRun(store, run, ids.get(run - 1));
        assertThat(check.violations()).as("run " + run).isEmpty();
        assertThat(check.counters().recorded()).isEqualTo(150);
      }
    }
  }

  /**
   * {@code --workers 0 --in-process 2}: no worker process and no fixed worker port, the cases run on slots
   * inside the server (the lightest server for one machine). Every case is recorded once, each by the
   * in-process worker; SIGTERM while a second run's cases are running waits for them as for any worker's.
   */
  @Test
  void aServerWithInProcessSlotsOnlyRunsItsRunsAndStopsCleanly() throws Exception {
    Path db = dir.resolve("in-process.db");
    List<List<String>> ids = seed(db, 1, 12, 30);
    List<String> args = new ArrayList<>(serverArgs(db, tokenFile(), "--in-process=2", "--stop-grace=60s"));
    args.removeIf(a -> a.startsWith("--workers=") || a.startsWith("--slots="));
    args.add("--workers=0");
    Path started = Files.createDirectories(dir.resolve("started"));
    try (TallyProcess server = TallyProcess.start(dir, "server.log", args)) {
      String url = server.serverUrl();
      assertThat(server.output()).contains("2 in-process slots").doesNotContain("local worker");
      await("run 1 finished").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> get(url + "/api/v1/runs/1").get("state").asText().equals("finished"));
      assertThat(get(url + "/api/v1/runs/1").get("counters").get("passed").asLong()).isEqualTo(12);
      JsonNode workers = get(url + "/api/v1/workers").get("workers");
      assertThat(workers).extracting(w -> w.get("name").asText()).containsExactly("in-process");

      // A second run over the API, whose cases are still running when SIGTERM comes.
      String body = "{\"evaluator\": {\"kind\": \"exec\", \"cmd\": \"sh -c 'touch \\\"$1/$2\\\"; sleep 1' sh " + started
          + " {id}\"}, \"cases\": [{\"id\": \"a\"}, {\"id\": \"b\"}, {\"id\": \"c\"}]}";
      HttpResponse<String> created = http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/runs"))
          .header("Authorization", "Bearer " + TOKEN).header("Idempotency-Key", "in-process-1")
          .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
          .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
      await("a case of run 2 started").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
          .until(() -> listing(started).size() > 0);
      Set<String> startedBeforeTerm = listing(started);
      Signals.send(server.process.pid(), "TERM");
      assertThat(server.waitFor(90)).as(server.output()).isZero();
      assertThat(server.output()).contains("tally server: SIGTERM: stopping").contains("every result in flight recorded");
      try (SqliteStore store = SqliteStore.openExisting(db)) {
        Checker.RunCheck check = Checker.checkRun(store, 1, ids.get(0));
        assertThat(check.violations()).isEmpty();
        assertThat(check.counters().recorded()).isEqualTo(12);
        assertThat(store.jobs(2).stream().filter(j -> j.state() == JobState.LEASED)).isEmpty();
        for (String id : startedBeforeTerm) {
          assertThat(store.attempts(2, id).orElseThrow()).extracting(dev.tally.core.store.AttemptView::ending)
              .as("case %s had started", id).contains("recorded");
        }
      }
    }
  }

  @Test
  void sigtermWaitsForTheResultsInFlightThenExitsZeroSayingSo() throws Exception {
    Path db = dir.resolve("stop.db");
    Path started = Files.createDirectories(dir.resolve("started"));
    // Each case marks when it really starts on a worker (a leased case may still wait in a worker's queue).
    try (SqliteStore store = SqliteStore.open(db)) {
      List<CaseRecord> records = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        records.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\"}"));
      }
      EvaluatorSpec exec = new EvaluatorSpec("exec",
          Map.of("cmd", "sh -c 'touch \"$1/$2\"; sleep 1.5' sh " + started + " {id}"), Duration.ofMinutes(1));
      store.createRun(new RunSpec("stop", exec, 5), records);
    }
    Set<String> startedBeforeTerm;
    try (TallyProcess server = TallyProcess.start(dir, "server.log", serverArgs(db, tokenFile(), "--stop-grace=60s"))) {
      await("a case started on a worker").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> listing(started).size() > 0);
      startedBeforeTerm = listing(started);
      Signals.send(server.process.pid(), "TERM");
      assertThat(server.waitFor(90)).as(server.output()).isZero();
      assertThat(server.output())
          .contains("tally server: SIGTERM: stopping; leasing nothing more")
          .contains("every result in flight recorded; 1 unfinished run stays in " + db + ", and the next tally server on it resumes it");
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      // Every case that had started when the signal came was recorded; nothing is left leased, and the rest
      // (never started: released, or handed back from a worker's queue) waits for the next server.
      assertThat(store.jobs(1).stream().filter(j -> j.state() == JobState.LEASED)).isEmpty();
      for (String id : startedBeforeTerm) {
        assertThat(store.attempts(1, id).orElseThrow()).extracting(dev.tally.core.store.AttemptView::ending)
            .as("case %s had started", id).contains("recorded");
      }
      assertThat(store.run(1).orElseThrow().counters().recorded()).isPositive().isLessThan(40);
    }
  }

  /**
   * SIGTERM, and while the server waits for the cases in flight its lead is taken (here by a test's swap of the
   * leader row; a store that stays unreachable past the leader's patience does the same): it stops waiting at
   * once, says it stepped down, and exits 1 by itself. It used to wait out the whole grace for results it
   * could no longer record, then read its store, and was halted with a thread dump.
   */
  @Test
  void aServerThatStepsDownWhileStoppingStopsWaitingAndExitsOne() throws Exception {
    Path db = dir.resolve("deposed.db");
    try (SqliteStore store = SqliteStore.open(db)) {
      List<CaseRecord> records = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        records.add(new CaseRecord(i, "c" + i, "{\"id\":\"c" + i + "\",\"millis\":60000}"));
      }
      store.createRun(new RunSpec("deposed", new EvaluatorSpec("sleep", Map.of(), Duration.ofMinutes(5)), 5), records);
    }
    try (TallyProcess server = TallyProcess.start(dir, "server.log", serverArgs(db, tokenFile(), "--stop-grace=60s"))) {
      String url = server.serverUrl();
      await("cases in flight").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> countCases(url, "leased") >= 4);
      Signals.send(server.process.pid(), "TERM");
      await("waiting for them").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
          .until(() -> server.output().contains("tally server: SIGTERM: stopping; leasing nothing more"));
      long deposedAt = System.nanoTime();
      try (SqliteStore usurper = SqliteStore.open(db)) {
        dev.tally.core.lead.LeaderRow row = usurper.leader().row();
        assertThat(usurper.swapLeader(row, new dev.tally.core.lead.LeaderRow(row.epoch() + 1, "usurper", null,
            System.currentTimeMillis() + 60_000))).isTrue();
      }
      assertThat(server.waitFor(45)).as(server.output()).isEqualTo(Main.EXIT_FAILED);
      assertThat(Duration.ofNanos(System.nanoTime() - deposedAt)).as("well within the 60 s grace").isLessThan(Duration.ofSeconds(30));
      // Its commit refused, or its look at the row: whichever comes first names epoch 2.
      assertThat(server.output()).contains("tally server: stepped down while stopping: ", "epoch 2", "tally server: stopped with ",
          "unfinished runs stay in").doesNotContain("closing did not finish");
    }
  }

  private static Set<String> listing(Path folder) throws java.io.IOException {
    try (var files = Files.list(folder)) {
      return files.map(f -> f.getFileName().toString()).collect(java.util.stream.Collectors.toSet());
    }
  }

  private long countCases(String url, String state) throws Exception {
    return get(url + "/api/v1/runs/1/cases?state=" + state + "&limit=1000").get("cases").size();
  }

}

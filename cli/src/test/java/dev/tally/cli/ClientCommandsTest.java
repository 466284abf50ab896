package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.coordinator.Coordinator;
import dev.tally.http.ApiServer;
import dev.tally.http.TallyServer;
import dev.tally.worker.LocalWorker;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The client commands against a real server in this JVM (a {@link TallyServer} on a SQLite store, with an
 * in-process worker): a submission whose answer a proxy drops is retried with the same key and makes one
 * run; {@code --idempotency-key} given twice makes one run; a bad dataset line is refused before anything
 * is sent; {@code submit --wait}, {@code runs}, {@code results} and {@code cancel} do what they say, and an
 * unknown run, a wrong token and a server that is not there are said clearly with their exit codes.
 */
class ClientCommandsTest {
  private static final String TOKEN = "client-test-token-5d1e";

  @TempDir Path dir;

  private TallyServer server;
  private LocalWorker worker;
  private Path tokenFile;
  private Path stateDir;

  @BeforeEach
  void startServer() throws Exception {
    tokenFile = Files.writeString(dir.resolve("api-token"), TOKEN + "\n");
    stateDir = dir.resolve("state");
    ApiServer.Settings api = ApiServer.Settings.builder().bind("127.0.0.1", 0).token(dev.tally.core.security.Secret.of(TOKEN, "API token"))
        .spoolDirectory(dir.resolve("uploads")).build();
    server = TallyServer.start(Coordinator.builder().storeFile(dir.resolve("tally.db")), api);
  }

  @AfterEach
  void stopServer() {
    if (worker != null) {
      worker.close("test over");
    }
    server.close();
  }

  private void startWorker() {
    worker = LocalWorker.start("in-process", 4, 4, server.coordinator().scheduler(), server.coordinator().store().storeId());
  }

  private String url() {
    return server.api().url();
  }

  /** One invocation of {@code tally ARGS} in this JVM: its exit code, stdout and stderr. */
  private record Invocation(int exit, String out, String err) {}

  private Invocation tally(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine().setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true));
    int exit = cl.execute(args);
    return new Invocation(exit, out.toString(), err.toString());
  }

  private String[] submit(Path dataset, String server, String... more) {
    List<String> args = new ArrayList<>(List.of("submit", dataset.toString(), "--server", server, "--token-file", tokenFile.toString(),
        "--state-dir", stateDir.toString(), "--evaluator", "noop"));
    args.addAll(List.of(more));
    return args.toArray(String[]::new);
  }

  private Path dataset(int cases) throws Exception {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < cases; i++) {
      s.append("{\"id\":\"c").append(i).append("\"}\n");
    }
    return Files.writeString(dir.resolve("cases.jsonl"), s);
  }

  private int runsOnServer() {
    return server.coordinator().store().runs().size();
  }

  private long stateFiles() throws Exception {
    if (!Files.isDirectory(stateDir)) {
      return 0;
    }
    try (Stream<Path> files = Files.list(stateDir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".json")).count();
    }
  }

  @Test
  void anAnswerLostAfterTheServerMadeTheRunIsRetriedWithTheSameKeyAndMakesOneRun() throws Exception {
    Path cases = dataset(50);
    try (ResponseProxy proxy = new ResponseProxy(server.api().port(), ResponseProxy.Fault.DROP, 1)) {
      Invocation submitted = tally(submit(cases, "http://127.0.0.1:" + proxy.port()));
      assertThat(submitted.exit()).as(submitted.err()).isZero();
      assertThat(proxy.answersLost()).isEqualTo(1);
      assertThat(proxy.connections()).isGreaterThanOrEqualTo(2);
      assertThat(submitted.err()).contains("retry 1 of").contains("with the same idempotency key")
          .contains("was made by an earlier request of this submission");
      List<String> keys = proxy.idempotencyKeys();
      assertThat(keys).hasSizeGreaterThanOrEqualTo(2);
      assertThat(keys).containsOnly(keys.get(0));
      assertThat(runsOnServer()).isEqualTo(1);
      long runId = server.coordinator().store().runs().get(0).runId();
      assertThat(submitted.out().strip()).isEqualTo(runId + " http://127.0.0.1:" + proxy.port() + ApiServer.BASE + "/runs/" + runId);
      assertThat(server.coordinator().store().run(runId).orElseThrow().counters().total()).isEqualTo(50);
    }
    assertThat(stateFiles()).as("the key is forgotten once the server confirmed").isZero();
  }

  @Test
  void theSameIdempotencyKeyTwiceMakesOneRunAndNeedsNoStateFile() throws Exception {
    Path cases = dataset(5);
    Invocation first = tally(submit(cases, url(), "--idempotency-key", "ci-build-4711"));
    Invocation second = tally(submit(cases, url(), "--idempotency-key", "ci-build-4711"));
    assertThat(first.exit()).as(first.err()).isZero();
    assertThat(second.exit()).as(second.err()).isZero();
    assertThat(second.out()).isEqualTo(first.out());
    assertThat(first.err()).contains("created");
    assertThat(second.err()).contains("was made by an earlier request of this submission");
    assertThat(runsOnServer()).isEqualTo(1);
    assertThat(stateDir).doesNotExist();
  }

  @Test
  void aSecondSubmissionAfterAConfirmedOneIsANewRun() throws Exception {
    Path cases = dataset(3);
    Invocation first = tally(submit(cases, url()));
    Invocation second = tally(submit(cases, url()));
    assertThat(first.exit()).isZero();
    assertThat(second.exit()).isZero();
    assertThat(second.out()).isNotEqualTo(first.out());
    assertThat(runsOnServer()).isEqualTo(2);
  }

  @Test
  void aBadLineIsRefusedWithItsFileAndLineAndNothingIsSent() throws Exception {
    Path cases = Files.writeString(dir.resolve("cases.jsonl"), "{\"id\":\"a\"}\n{\"id\":\"b\"\n");
    Invocation refused = tally(submit(cases, url()));
    assertThat(refused.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(refused.err()).contains(cases + ":2: not valid JSON");
    assertThat(runsOnServer()).isZero();
    assertThat(stateFiles()).isZero();
  }

  @Test
  void aRepeatedIdIsRefusedByTheServerAndItsLineIsGivenInTheDataset() throws Exception {
    Path cases = Files.writeString(dir.resolve("cases.jsonl"), "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n");
    Invocation refused = tally(submit(cases, url()));
    assertThat(refused.exit()).as(refused.err()).isEqualTo(Main.EXIT_USAGE);
    assertThat(refused.err()).contains("the server refused the submission").contains("duplicate id")
        .contains("tally: " + cases + " line 3: duplicate id \"a\" (first on line 1)") // both lines the dataset's
        .doesNotContain("request body line"); // and only those
    assertThat(runsOnServer()).isZero();
    assertThat(stateFiles()).as("a refusal created nothing: the key is forgotten").isZero();
  }

  /** Only the places are renumbered, never the id between them (the breaker's round: an id "line 3" became "line 2"). */
  @Test
  void anIdThatReadsLikeALineIsLeftAsItIs() {
    assertThat(SubmitCommand.inDataset("request body line 4: duplicate id \"line 3 (first on line 3)\" (first on line 3)", "d.jsonl",
        line -> line - 1)).isEqualTo("d.jsonl line 3: duplicate id \"line 3 (first on line 3)\" (first on line 2)");
    assertThat(SubmitCommand.inDataset("request body line 1: the run's fields are not one JSON object", "d.jsonl", line -> line - 1))
        .as("the run's fields are no dataset line").isEqualTo("request body line 1: the run's fields are not one JSON object");
  }

  @Test
  void aDatasetInAnotherFormatIsSentAsJsonLinesWithItsSelectionAndTheServersRefusalNamesItsOwnLine() throws Exception {
    Path tests = Files.writeString(dir.resolve("tests.yaml"), "- vars: {q: one}\n  assert: [{type: equals, value: '1'}]\n"
        + "- vars: {q: two}\n- vars: {q: three}\n");
    Invocation submitted = tally(submit(tests, url(), "--epochs", "2", "--limit", "2"));
    assertThat(submitted.exit()).as(submitted.err()).isZero();
    assertThat(submitted.err()).contains("(4 cases)");
    long runId = server.coordinator().store().runs().get(0).runId();
    assertThat(server.coordinator().store().run(runId).orElseThrow().counters().total()).isEqualTo(4);

    Path csv = Files.writeString(dir.resolve("cases.csv"), "id,q\na,1\nb,2\na,3\n");
    Invocation refused = tally(submit(csv, url()));
    assertThat(refused.exit()).as(refused.err()).isEqualTo(Main.EXIT_USAGE);
    assertThat(refused.err()).contains("duplicate id").contains("tally: " + csv + " line 4: duplicate id \"a\" (first on line 2)");
    assertThat(runsOnServer()).isEqualTo(1);
  }

  @Test
  void submitWaitThenResultsGiveTheServersFilesAndTallyRunsExitCode() throws Exception {
    startWorker();
    Path cases = dataset(20);
    Invocation submitted = tally(submit(cases, url(), "--wait", "--name", "nightly"));
    assertThat(submitted.exit()).as(submitted.err()).isZero();
    long runId = Long.parseLong(submitted.out().lines().findFirst().orElseThrow().split(" ")[0]);
    assertThat(submitted.out()).contains("run " + runId + " finished: 20 cases, 20 passed, 0 failed, 0 errored");

    Invocation runs = tally("runs", "--server", url(), "--token-file", tokenFile.toString());
    assertThat(runs.exit()).isZero();
    assertThat(runs.out()).containsPattern("\\s+" + runId + "\\s+finished\\s+20/20\\s+20\\s+0\\s+0\\s+100\\.0%\\s+\\S+\\s+nightly");

    Path out = dir.resolve("results.jsonl");
    Path summary = dir.resolve("summary.json");
    Invocation results = tally("results", Long.toString(runId), "--server", url(), "--token-file", tokenFile.toString(),
        "--out", out.toString(), "--summary", summary.toString());
    assertThat(results.exit()).as(results.err()).isZero();
    assertThat(Files.readAllBytes(out)).isEqualTo(get("/runs/" + runId + "/results"));
    assertThat(Files.readAllBytes(summary)).isEqualTo(get("/runs/" + runId + "/summary"));
    assertThat(Files.readString(summary)).containsPattern("\"passed\"\\s*:\\s*20");
    try (Stream<Path> left = Files.list(dir)) {
      assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.endsWith(".part"));
    }
    // Two options naming one file: refused before anything is downloaded (the results were lost to the summary).
    Invocation clash = tally("results", Long.toString(runId), "--server", url(), "--token-file", tokenFile.toString(),
        "--out", out.toString(), "--summary", out.toString());
    assertThat(clash.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(clash.err()).contains("--out " + out + " and --summary " + out + " are the same file");
    assertThat(Files.readAllBytes(out)).isEqualTo(get("/runs/" + runId + "/results"));

    Invocation waited = tally("wait", Long.toString(runId), "--server", url(), "--token-file", tokenFile.toString());
    assertThat(waited.exit()).isZero();
    Invocation cancelFinished = tally("cancel", Long.toString(runId), "--server", url(), "--token-file", tokenFile.toString());
    assertThat(cancelFinished.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(cancelFinished.err()).contains("409");
  }

  @Test
  void aFailingCaseMakesWaitExitOneAsTallyRunDoes() throws Exception {
    startWorker();
    Path cases = Files.writeString(dir.resolve("cases.jsonl"), "{\"id\":\"ok\",\"script\":\"true\"}\n{\"id\":\"bad\",\"script\":\"false\"}\n");
    Invocation submitted = tally("submit", cases.toString(), "--server", url(), "--token-file", tokenFile.toString(), "--state-dir",
        stateDir.toString(), "--evaluator", "exec", "--cmd", "sh -c {script}", "--max-attempts", "2");
    assertThat(submitted.exit()).as(submitted.err()).isZero();
    String runId = submitted.out().split(" ")[0];
    Invocation waited = tally("wait", runId, "--server", url(), "--token-file", tokenFile.toString());
    assertThat(waited.exit()).isEqualTo(Main.EXIT_FAILED);
    assertThat(waited.out()).contains("1 passed, 1 failed");
    // The case that failed is named, as tally run's summary names it.
    assertThat(waited.out()).as(waited.err()).contains("not passed: 1 of 2 ended (below; every case in 'tally results " + runId + "')")
        .containsPattern("\\n  bad  fail, exit 1\\R");
    assertThat(server.coordinator().store().run(Long.parseLong(runId)).orElseThrow().spec().limits().maxAttempts()).isEqualTo(2);
  }

  @Test
  void cancelCancelsARunningRunAndTwiceIsOneCancel() throws Exception {
    Path cases = dataset(10); // no worker: the run stays running
    String runId = tally(submit(cases, url())).out().split(" ")[0];
    Invocation cancelled = tally("cancel", runId, "--server", url(), "--token-file", tokenFile.toString());
    assertThat(cancelled.exit()).as(cancelled.err()).isZero();
    assertThat(cancelled.out()).contains("run " + runId + " cancelled").contains("10 cancelled");
    assertThat(tally("cancel", runId, "--server", url(), "--token-file", tokenFile.toString()).exit()).isZero();
    Invocation waited = tally("wait", runId, "--server", url(), "--token-file", tokenFile.toString());
    assertThat(waited.exit()).isEqualTo(Main.EXIT_FAILED);
  }

  @Test
  void anUnknownRunAWrongTokenAndAMissingServerAreSaidClearly() throws Exception {
    Invocation unknown = tally("wait", "99", "--server", url(), "--token-file", tokenFile.toString());
    assertThat(unknown.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(unknown.err()).contains("Not Found (404): there is no run 99");

    Path wrong = Files.writeString(dir.resolve("wrong-token"), "not-the-token\n");
    Invocation unauthorized = tally("runs", "--server", url(), "--token-file", wrong.toString());
    assertThat(unauthorized.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(unauthorized.err()).contains("Unauthorized (401)").contains("--token-file");
    assertThat(unauthorized.err()).doesNotContain("not-the-token").doesNotContain(TOKEN);

    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Invocation missing = tally("runs", "--server", "http://127.0.0.1:" + port, "--retries", "1");
    assertThat(missing.exit()).isEqualTo(Main.EXIT_FAILED);
    assertThat(missing.err()).contains("connection refused").contains("gave up after 2 attempts");
  }

  private byte[] get(String path) throws Exception {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create(url() + ApiServer.BASE + path))
        .header("Authorization", "Bearer " + TOKEN).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofByteArray());
    assertThat(r.statusCode()).isEqualTo(200);
    return r.body();
  }
}

package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.RunView;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The API's writes against a real server on loopback: each status of the idempotent {@code POST /runs}
 * (201, 400, 409, 422, the replay with {@code Idempotent-Replayed}), a key sent to another path, keys
 * scoped by credential, twenty racing requests with one key, a client that dies mid-upload, and cancel.
 */
class SubmitApiTest {
  static final String RUNS = ApiServer.BASE + "/runs";
  static final String BODY = "{\"name\": \"nightly\", \"evaluator\": {\"kind\": \"noop\"},"
      + " \"settings\": {\"maxAttempts\": 2, \"caseTimeout\": \"30s\"}, \"cases\": [{\"id\": \"a\"}, {\"id\": \"b\"}, {\"id\": \"c\"}]}";

  @TempDir Path dir;

  static HttpRequest post(TestApi t, String path, String key, String contentType, String body) {
    HttpRequest.Builder b = t.request(path).header("Content-Type", contentType)
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return b.build();
  }

  static HttpResponse<String> submit(TestApi t, String key, String body) throws Exception {
    return t.send(post(t, RUNS, key, "application/json", body));
  }

  private static List<RunView> runs(TestApi t) {
    return t.coordinator.store().runs(RunPage.first(RunPage.MAX_LIMIT));
  }

  @Test
  void aRunIsCreatedWith201ItsLocationAndTheRunObject() throws Exception {
    try (TestApi t = TestApi.start(dir).withWorker(2)) {
      HttpResponse<String> r = submit(t, "\"first-key\"", BODY);
      assertThat(r.statusCode()).isEqualTo(201);
      assertThat(r.headers().firstValue("Location")).hasValue(RUNS + "/1");
      assertThat(r.headers().firstValue(SubmitRoutes.REPLAYED)).isEmpty();
      JsonNode run = TestApi.json(r);
      assertThat(run.get("id").asLong()).isEqualTo(1);
      assertThat(run.get("name").asText()).isEqualTo("nightly");
      assertThat(run.get("total").asLong()).isEqualTo(3);
      assertThat(run.get("settings").get("maxAttempts").asInt()).isEqualTo(2);
      assertThat(run.get("settings").get("caseTimeout").asText()).isEqualTo("30s");
      assertThat(run.get("scorers")).as("no scorers: the evaluator's verdict stands").isEmpty();
      // It runs: the server submitted it to its scheduler.
      await().atMost(Duration.ofSeconds(30)).until(() -> TestApi.json(t.get(RUNS + "/1")).get("state").asText().equals("finished"));
      assertThat(TestApi.json(t.get(RUNS + "/1")).get("counters").get("passed").asLong()).isEqualTo(3);
    }
  }

  @Test
  void theSameKeyAndBodyReplayTheFirstResponseByteForByteAndMakeNoSecondRun() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      HttpResponse<String> first = submit(t, "k", BODY);
      HttpResponse<String> again = submit(t, "\"k\"", BODY); // quoted or bare: one key
      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(again.statusCode()).isEqualTo(201);
      assertThat(again.headers().firstValue(SubmitRoutes.REPLAYED)).hasValue("true");
      assertThat(again.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
      assertThat(again.body()).isEqualTo(first.body());
      assertThat(runs(t)).hasSize(1);
    }
  }

  @Test
  void theSameKeyWithAnotherBodyOrAnotherPathIs422AndCreatesNothing() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      assertThat(submit(t, "k", BODY).statusCode()).isEqualTo(201);
      HttpResponse<String> otherBody = submit(t, "k", BODY.replace("nightly", "weekly"));
      assertThat(otherBody.statusCode()).isEqualTo(422);
      assertThat(otherBody.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith(ApiServer.PROBLEM_JSON));
      JsonNode problem = TestApi.json(otherBody);
      assertThat(problem.get("type").asText()).isEqualTo(ProblemType.KEY_REUSED.uri());
      assertThat(problem.get("status").asInt()).isEqualTo(422);
      assertThat(problem.get("header").asText()).isEqualTo("Idempotency-Key");
      assertThat(problem.get("detail").asText()).contains("run 1");

      HttpResponse<String> otherPath = t.send(post(t, RUNS + "/1/cancel", "k", "application/json", ""));
      assertThat(otherPath.statusCode()).isEqualTo(422);
      assertThat(TestApi.json(otherPath).get("type").asText()).isEqualTo(ProblemType.KEY_REUSED.uri());
      assertThat(runs(t)).hasSize(1);
      assertThat(runs(t).get(0).state().wireName()).as("the refused cancel changed nothing").isEqualTo("running");
    }
  }

  @Test
  void keysBelongToTheCredentialThatSentThem() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      String scopeA = BearerAuth.of(null).scope();
      assertThat(submit(t, "shared", BODY).statusCode()).isEqualTo(201);
      // The same key under another credential is another key: checked on the store, where scopes live.
      var claim = t.coordinator.store().claimKey("sha256:another-credential", "shared", null, System.currentTimeMillis(),
          System.currentTimeMillis() + 30_000);
      assertThat(claim).isInstanceOf(dev.tally.core.store.KeyClaim.Claimed.class);
      assertThat(scopeA).isEqualTo(dev.tally.core.store.IdempotencyRules.ANONYMOUS_SCOPE);
    }
  }

  @Test
  void aMissingOrInvalidKeyIs400NamingTheHeaderAndNothingIsCreated() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      HttpResponse<String> missing = submit(t, null, BODY);
      assertThat(missing.statusCode()).isEqualTo(400);
      JsonNode p = TestApi.json(missing);
      assertThat(p.get("type").asText()).isEqualTo(ProblemType.MISSING_IDEMPOTENCY_KEY.uri());
      assertThat(p.get("header").asText()).isEqualTo("Idempotency-Key");
      assertThat(p.get("detail").asText()).contains("Idempotency-Key");

      HttpResponse<String> tooLong = submit(t, "x".repeat(256), BODY);
      assertThat(tooLong.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(tooLong).get("type").asText()).isEqualTo(ProblemType.INVALID_IDEMPOTENCY_KEY.uri());
      assertThat(TestApi.json(tooLong).get("detail").asText()).contains("255");
      assertThat(runs(t)).isEmpty();
    }
  }

  @Test
  void aBadCaseIsRefusedWithItsLineOrFieldAndTheKeyIsFreeForTheCorrectedBody() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      String ndjson = "{\"evaluator\": {\"kind\": \"noop\"}}\n{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"name\": \"no id\"}\n";
      HttpResponse<String> bad = t.send(post(t, RUNS, "k", "application/x-ndjson", ndjson));
      assertThat(bad.statusCode()).isEqualTo(400);
      JsonNode p = TestApi.json(bad);
      assertThat(p.get("type").asText()).isEqualTo(ProblemType.INVALID_CASE.uri());
      assertThat(p.get("line").asInt()).isEqualTo(4);
      assertThat(p.get("detail").asText()).startsWith("request body line 4:");

      HttpResponse<String> badJson = submit(t, "k", BODY.replace("{\"id\": \"b\"}", "{\"id\": 7}"));
      assertThat(badJson.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(badJson).get("field").asText()).isEqualTo("/cases/1");

      // A number beyond a double's range reached the command as Infinity: refused, naming the field.
      HttpResponse<String> huge = submit(t, "k", BODY.replace("{\"id\": \"b\"}", "{\"id\": \"b\", \"v\": 1e999999999}"));
      assertThat(huge.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(huge).get("field").asText()).isEqualTo("/cases/1");
      assertThat(TestApi.json(huge).get("detail").asText()).startsWith("/cases/1: field \"v\" is a number beyond the range of a double");

      HttpResponse<String> duplicate = submit(t, "k", BODY.replace("{\"id\": \"c\"}", "{\"id\": \"a\"}"));
      assertThat(duplicate.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(duplicate).get("detail").asText()).isEqualTo("/cases/2: duplicate id \"a\" (first on /cases/0)");
      // Only the place is renumbered, never the id (the breaker's round: "line 5" became "/cases/3").
      HttpResponse<String> lineLike = submit(t, "k", BODY.replace("{\"id\": \"a\"}", "{\"id\": \"line 5\"}")
          .replace("{\"id\": \"c\"}", "{\"id\": \"line 5\"}"));
      assertThat(TestApi.json(lineLike).get("detail").asText()).isEqualTo("/cases/2: duplicate id \"line 5\" (first on /cases/0)");

      // Scorers are checked by the worker's own parser before anything is written.
      HttpResponse<String> badScorer = t.send(post(t, RUNS, "k", "application/x-ndjson",
          "{\"evaluator\": {\"kind\": \"noop\"}, \"scorers\": [\"exact\", \"numeric:tolerance=1\"]}\n{\"id\": \"a\"}\n"));
      assertThat(badScorer.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(badScorer).get("field").asText()).isEqualTo("/scorers/1");
      assertThat(TestApi.json(badScorer).get("detail").asText()).contains("numeric has no option tolerance");
      HttpResponse<String> notAString = t.send(post(t, RUNS, "k", "application/x-ndjson",
          "{\"evaluator\": {\"kind\": \"noop\"}, \"scorers\": [7]}\n{\"id\": \"a\"}\n"));
      assertThat(TestApi.json(notAString).get("field").asText()).isEqualTo("/scorers/0");

      // A case without a field the cmd uses, with what stood in the path's way.
      HttpResponse<String> missing = t.send(post(t, RUNS, "k", "application/x-ndjson",
          "{\"evaluator\": {\"kind\": \"exec\", \"cmd\": \"echo {meta.lang}\"}}\n{\"id\": \"a\", \"meta\": {\"language\": \"fr\"}}\n"));
      assertThat(missing.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(missing).get("detail").asText())
          .isEqualTo("request body line 2: case \"a\" has no field \"meta.lang\" (\"meta\" has \"language\"), which the evaluator's cmd uses");
      // The model's prompt is checked the same way, before the run (it used to be made, and every case to error).
      HttpResponse<String> missingInPrompt = t.send(post(t, RUNS, "k", "application/x-ndjson",
          "{\"evaluator\": {\"kind\": \"model\", \"baseUrl\": \"http://127.0.0.1:9/v1\", \"model\": \"m\","
              + " \"prompt\": \"Say {meta.lang}\"}}\n{\"id\": \"a\", \"meta\": {\"lan\": \"en\"}}\n"));
      assertThat(missingInPrompt.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(missingInPrompt).get("detail").asText())
          .isEqualTo("request body line 2: case \"a\" has no field \"meta.lang\" (\"meta\" has \"lan\"), which the evaluator's prompt uses");

      HttpResponse<String> unknownField = submit(t, "k", BODY.replace("\"name\"", "\"nmae\""));
      assertThat(unknownField.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(unknownField).get("field").asText()).isEqualTo("/nmae");
      assertThat(runs(t)).as("nothing of a refused run is written").isEmpty();

      assertThat(submit(t, "k", BODY).statusCode()).as("the key was not kept for a refused body").isEqualTo(201);
      assertThat(runs(t)).hasSize(1);
    }
  }

  @Test
  void theSameKeyWhileItsFirstUploadStillStreamsIs409WithRetryAfterAndTheFirstThenCompletes() throws Exception {
    try (TestApi t = TestApi.start(dir);
        Socket slow = new Socket("127.0.0.1", t.api.port())) {
      OutputStream out = slow.getOutputStream();
      String head = "POST " + RUNS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: slow\r\n"
          + "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n";
      out.write(head.getBytes(StandardCharsets.US_ASCII));
      chunk(out, "{\"evaluator\": {\"kind\": \"noop\"}}\n{\"id\": \"a\"}\n");
      out.flush();
      // The first request holds the key as soon as its head is read; the body has not ended.
      await().atMost(Duration.ofSeconds(10)).until(() -> t.send(post(t, RUNS, "slow", "application/x-ndjson",
          "{\"evaluator\": {\"kind\": \"noop\"}}\n{\"id\": \"a\"}\n")).statusCode() == 409);
      HttpResponse<String> busy = t.send(post(t, RUNS, "slow", "application/x-ndjson", "{\"evaluator\": {\"kind\": \"noop\"}}\n{\"id\": \"a\"}\n"));
      assertThat(busy.statusCode()).isEqualTo(409);
      assertThat(busy.headers().firstValue("Retry-After")).hasValueSatisfying(v -> assertThat(Long.parseLong(v)).isBetween(1L, SubmitRoutes.KEY_IN_USE_RETRY_AFTER_MAX_SECONDS));
      assertThat(TestApi.json(busy).get("type").asText()).isEqualTo(ProblemType.KEY_IN_USE.uri());

      chunk(out, "{\"id\": \"b\"}\n");
      out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      String response = readHead(slow.getInputStream());
      assertThat(response).startsWith("HTTP/1.1 201");
      assertThat(runs(t)).hasSize(1);
      assertThat(runs(t).get(0).counters().total()).isEqualTo(2);
    }
  }

  @Test
  void aClientThatDiesMidUploadLeavesNoRunAndItsRetryWithTheKeySucceedsAtOnce() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      try (Socket dying = new Socket("127.0.0.1", t.api.port())) {
        OutputStream out = dying.getOutputStream();
        out.write(("POST " + RUNS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: dies\r\n"
            + "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        chunk(out, "{\"evaluator\": {\"kind\": \"noop\"}}\n{\"id\": \"a\"}\n");
        out.flush();
        await().atMost(Duration.ofSeconds(10)).until(() -> submit(t, "dies", BODY).statusCode() == 409);
      } // closed mid-body: the server's read fails, the request ends, its key is released
      await().atMost(Duration.ofSeconds(10)).until(() -> submit(t, "dies", BODY).statusCode() == 201);
      assertThat(runs(t)).hasSize(1);
      assertThat(runs(t).get(0).counters().total()).as("the retry's cases, not the dead upload's").isEqualTo(3);
      try (Stream<Path> spool = Files.list(t.spoolDirectory())) {
        assertThat(spool).as("no spool file is left behind").isEmpty();
      }
    }
  }

  /** Regression: a body cut short by the client's half-close got a 500 with no body. */
  /** Regression: /runs/ is routed as /runs, but its fingerprint differed, so the same key got a 422 there. */
  @Test
  void aTrailingSlashIsTheSameRequestForItsKey() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      assertThat(submit(t, "slash", BODY).statusCode()).isEqualTo(201);
      HttpResponse<String> again = t.send(post(t, RUNS + "/", "slash", "application/json", BODY));
      assertThat(again.statusCode()).as(again.body()).isEqualTo(201);
      assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(runs(t)).hasSize(1);
    }
  }

  @Test
  void aBodyThatEndsBeforeItsContentLengthIsA400ProblemAndItsKeyIsFree() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      byte[] body = BODY.getBytes(StandardCharsets.UTF_8);
      try (Socket half = new Socket("127.0.0.1", t.api.port())) {
        OutputStream out = half.getOutputStream();
        out.write(("POST " + RUNS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: half\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(body, 0, body.length / 2);
        out.flush();
        half.shutdownOutput(); // the client's side ends; it still reads the answer
        half.setSoTimeout(10_000);
        String answer = new String(half.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(answer).startsWith("HTTP/1.1 400 ").contains("urn:tally:problem:body-incomplete")
            .contains("Content-Length " + body.length).contains("nothing was created");
      }
      assertThat(runs(t)).isEmpty();
      await().atMost(Duration.ofSeconds(10)).until(() -> submit(t, "half", BODY).statusCode() == 201);
      assertThat(runs(t)).hasSize(1);
    }
  }

  @Test
  void aBodyIsReadAsStrictlyAsACaseLineAndItsLimitsAre400NotServerErrors() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      String twoEvaluators = "{\"evaluator\": {\"kind\": \"noop\"}, \"evaluator\": {\"kind\": \"exec\", \"cmd\": \"true\"},"
          + " \"cases\": [{\"id\": \"a\"}]}";
      HttpResponse<String> repeated = submit(t, "s1", twoEvaluators);
      assertThat(repeated.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(repeated).get("detail").asText()).contains("Duplicate field 'evaluator'");
      assertThat(submit(t, "s2", BODY + " {\"x\": 1}").statusCode()).as("trailing data").isEqualTo(400);
      assertThat(submit(t, "s3", BODY.replace("\"cases\": [", "\"cases\": [{\"id\": \"z\"}], \"cases\": [")).statusCode())
          .as("cases twice").isEqualTo(400);
      String deep = "[".repeat(5_000) + "]".repeat(5_000);
      HttpResponse<String> nested = submit(t, "s4", BODY.replace("\"nightly\"", deep));
      assertThat(nested.statusCode()).as(nested.body()).isEqualTo(400);
      assertThat(TestApi.json(nested).get("type").asText()).isEqualTo(ProblemType.MALFORMED_JSON.uri());
      // A number beyond an int is told the range, not only its lower end (which it met).
      HttpResponse<String> huge = submit(t, "s4h", BODY.replace("\"maxAttempts\": 2", "\"maxAttempts\": 2147483648"));
      assertThat(TestApi.json(huge).get("detail").asText())
          .isEqualTo("/settings/maxAttempts: maxAttempts must be a whole number from 1 to 2147483647, got 2147483648");
      // In words, without the parser's internals (JsonErrors): they named Jackson's features and classes.
      HttpResponse<String> nan = submit(t, "s4n", BODY.replace("\"nightly\"", "NaN"));
      assertThat(TestApi.json(nan).get("detail").asText()).contains("Non-standard token 'NaN'").doesNotContain("`");
      assertThat(TestApi.json(nested).get("detail").asText()).contains("nesting depth").doesNotContain("`");
      HttpResponse<String> header = t.send(post(t, RUNS, "s5", "application/x-ndjson",
          "{\"evaluator\": {\"kind\": \"noop\"}} trailing\n{\"id\": \"a\"}\n"));
      assertThat(header.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(header).get("line").asInt()).isEqualTo(1);
      HttpResponse<String> escape = submit(t, "s6", BODY.replace("nightly", "a\\u001b[31m"));
      assertThat(escape.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(escape).get("field").asText()).isEqualTo("/name");
      HttpResponse<String> bidi = submit(t, "s6b", BODY.replace("nightly", "night\\u202ely"));
      assertThat(bidi.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(bidi).get("detail").asText()).contains("U+202E at character 6");
      // A surrogate without its pair is no character: refused as well (it was stored as the name).
      HttpResponse<String> lone = submit(t, "s6s", BODY.replace("nightly", "night\\ud800ly"));
      assertThat(lone.statusCode()).as(lone.body()).isEqualTo(400);
      assertThat(TestApi.json(lone).get("detail").asText()).contains("U+D800 at character 6")
          .contains("half of a surrogate pair without its other half");
      HttpResponse<String> empty = submit(t, "s7", "{\"evaluator\": {\"kind\": \"noop\"}, \"cases\": []}");
      assertThat(empty.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(empty).get("field").asText()).isEqualTo("/cases");
      HttpResponse<String> gzip = t.send(t.request(RUNS).header("Content-Type", "application/json").header("Idempotency-Key", "s8")
          .header("Content-Encoding", "gzip").POST(HttpRequest.BodyPublishers.ofString(BODY)).build());
      assertThat(gzip.statusCode()).isEqualTo(415);
      assertThat(TestApi.json(gzip).get("header").asText()).isEqualTo("Content-Encoding");
      assertThat(runs(t)).isEmpty();
    }
  }

  @Test
  void spoolFilesLeftByAServerKilledMidUploadAreDeletedAtTheNextStartAndALiveServersAreKept() throws Exception {
    Path spool = Files.createDirectories(dir.resolve("uploads"));
    Process dead = new ProcessBuilder("true").start();
    dead.waitFor();
    Process living = new ProcessBuilder("sleep", "60").start();
    try {
      Path leftover = Files.writeString(spool.resolve("upload-" + dead.pid() + "-123.ndjson"), "{\"evaluator\": {\"kind\": \"noop\"}}\n");
      Path part = Files.writeString(spool.resolve("cases-" + dead.pid() + "-9.part"), "{\"id\": \"a\"}\n");
      // Another server's upload in progress (a leader, beside which this standby starts): before, deleted.
      Path uploading = Files.writeString(spool.resolve("upload-" + living.pid() + "-456.ndjson"), "{\"evaluator\": {\"kind\": \"noop\"}}\n");
      Path other = Files.writeString(spool.resolve("notes.txt"), "not ours");
      try (TestApi t = TestApi.start(dir)) {
        assertThat(t.spoolDirectory()).isEqualTo(spool);
        assertThat(leftover).doesNotExist();
        assertThat(part).doesNotExist();
        assertThat(uploading).as("its process lives").exists();
        assertThat(other).as("only the spool's own files").exists();
      }
    } finally {
      living.destroyForcibly();
    }
  }

  @Test
  void twentyRequestsWithOneKeyReleasedTogetherMakeOneRunAndNo5xx() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      int n = 20;
      ExecutorService pool = Executors.newFixedThreadPool(n);
      try {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          answers.add(pool.submit(() -> {
            go.await();
            return submit(t, "race", BODY);
          }));
        }
        go.countDown();
        Map<Integer, Integer> statuses = new TreeMap<>();
        String created = null;
        for (Future<HttpResponse<String>> f : answers) {
          HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
          statuses.merge(r.statusCode(), 1, Integer::sum);
          if (r.statusCode() == 201) {
            if (created == null) {
              created = r.body();
            }
            assertThat(r.body()).as("every 201 is the one run's response").isEqualTo(created);
          } else {
            assertThat(r.statusCode()).as("a request that did not get the run waits: " + r.body()).isEqualTo(409);
          }
        }
        assertThat(statuses.keySet()).as("statuses %s", statuses).isSubsetOf(201, 409);
        assertThat(statuses.get(201)).isPositive();
        assertThat(runs(t)).hasSize(1);
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void cancellingTwiceIsOneCancelAndAFinishedRunCannotBeCancelled() throws Exception {
    try (TestApi t = TestApi.start(dir)) {
      assertThat(submit(t, "c", BODY).statusCode()).isEqualTo(201); // no worker: its cases stay pending
      HttpResponse<String> first = t.send(post(t, RUNS + "/1/cancel", null, "application/json", ""));
      HttpResponse<String> second = t.send(post(t, RUNS + "/1/cancel", null, "application/json", ""));
      assertThat(first.statusCode()).isEqualTo(200);
      assertThat(second.statusCode()).isEqualTo(200);
      JsonNode run = TestApi.json(second);
      assertThat(run.get("state").asText()).isEqualTo("cancelled");
      assertThat(run.get("counters").get("cancelled").asLong()).isEqualTo(3);
      assertThat(second.body()).isEqualTo(first.body());
      // Its cases say cancelled, and ?verdict=cancelled finds them (the word a case object has is a filter).
      JsonNode cancelled = TestApi.json(t.get(RUNS + "/1/cases?verdict=cancelled")).get("cases");
      assertThat(cancelled).hasSize(3).allSatisfy(c -> assertThat(c.get("verdict").asText()).isEqualTo("cancelled"));
      assertThat(TestApi.json(t.get(RUNS + "/1/cases?verdict=cancelled&state=done")).get("cases")).isEmpty();
      assertThat(TestApi.json(t.get(RUNS + "/1/cases?verdict=error")).get("cases")).isEmpty();

      assertThat(t.send(post(t, RUNS + "/9/cancel", null, "application/json", "")).statusCode()).isEqualTo(404);
    }
    Path other = dir.resolve("other");
    Files.createDirectories(other);
    try (TestApi t = TestApi.start(other).withWorker(2)) {
      t.runToEnd("done.jsonl", 2);
      HttpResponse<String> finished = t.send(post(t, RUNS + "/1/cancel", null, "application/json", ""));
      assertThat(finished.statusCode()).isEqualTo(409);
      assertThat(TestApi.json(finished).get("type").asText()).isEqualTo(ProblemType.RUN_FINISHED.uri());
    }
  }

  @Test
  void retryingErrorsRunsTheErroredCasesAgainAndCountsEachOnce() throws Exception {
    java.nio.file.Path flag = dir.resolve("fixed");
    try (TestApi t = TestApi.start(dir).withWorker(2)) {
      // Before the flag exists cat echoes each case, whose verdict line says what it is; after, all pass.
      String ndjson = "{\"evaluator\": {\"kind\": \"exec\", \"cmd\": \"sh -c 'if [ -e \\\"$1\\\" ]; then echo fine;"
          + " else cat; fi' sh " + flag + "\"}}\n"
          + "{\"id\": \"a\", \"verdict\": \"pass\"}\n{\"id\": \"b\", \"verdict\": \"error\"}\n{\"id\": \"c\", \"verdict\": \"pass\"}\n";
      assertThat(t.send(post(t, RUNS, "retry", "application/x-ndjson", ndjson)).statusCode()).isEqualTo(201);
      await().atMost(Duration.ofSeconds(30)).until(() -> TestApi.json(t.get(RUNS + "/1")).get("state").asText().equals("finished"));
      assertThat(TestApi.json(t.get(RUNS + "/1")).get("counters").get("errored").asLong()).isEqualTo(1);

      java.nio.file.Files.createFile(flag);
      HttpResponse<String> retried = t.send(post(t, RUNS + "/1/retry-errors", null, "application/json", ""));
      assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
      assertThat(TestApi.json(retried).get("state").asText()).isEqualTo("running");
      await().atMost(Duration.ofSeconds(30)).until(() -> TestApi.json(t.get(RUNS + "/1")).get("state").asText().equals("finished"));
      JsonNode counters = TestApi.json(t.get(RUNS + "/1")).get("counters");
      assertThat(counters.get("passed").asLong()).isEqualTo(3);
      assertThat(counters.get("errored").asLong()).isZero();
      assertThat(counters.get("recorded").asLong()).as("each case counted once").isEqualTo(3);

      HttpResponse<String> nothing = t.send(post(t, RUNS + "/1/retry-errors", null, "application/json", ""));
      assertThat(nothing.statusCode()).as("nothing left to retry: the run as it is").isEqualTo(200);
      assertThat(TestApi.json(nothing).get("state").asText()).isEqualTo("finished");
      assertThat(t.send(post(t, RUNS + "/9/retry-errors", null, "application/json", "")).statusCode()).isEqualTo(404);
    }
  }

  @Test
  void theSummaryStatesTheFiguresByAGroupOfTheCasesAndPassAtKOverEpochs() throws Exception {
    try (TestApi t = TestApi.start(dir).withWorker(2)) {
      String ndjson = "{\"evaluator\": {\"kind\": \"exec\", \"cmd\": \"cat\"}}\n"
          + "{\"id\": \"a#1\", \"sampleId\": \"a\", \"epoch\": 1, \"verdict\": \"pass\", \"metadata\": {\"subject\": \"math\"}}\n"
          + "{\"id\": \"a#2\", \"sampleId\": \"a\", \"epoch\": 2, \"verdict\": \"fail\", \"metadata\": {\"subject\": \"math\"}}\n"
          + "{\"id\": \"b#1\", \"sampleId\": \"b\", \"epoch\": 1, \"verdict\": \"fail\", \"subject\": \"law\"}\n"
          + "{\"id\": \"b#2\", \"sampleId\": \"b\", \"epoch\": 2, \"verdict\": \"fail\", \"subject\": \"law\"}\n";
      assertThat(t.send(post(t, RUNS, "groups", "application/x-ndjson", ndjson)).statusCode()).isEqualTo(201);
      await().atMost(Duration.ofSeconds(30)).until(() -> TestApi.json(t.get(RUNS + "/1")).get("state").asText().equals("finished"));
      JsonNode summary = TestApi.json(t.get(RUNS + "/1/summary?groupBy=subject"));
      JsonNode groups = summary.get("groups");
      assertThat(groups.get("by").asText()).isEqualTo("subject");
      assertThat(groups.get("values")).extracting(v -> v.get("value").asText() + "=" + v.get("n").asInt()
          + "@" + v.get("accuracy").get("value").asDouble()).containsExactlyInAnyOrder("math=2@0.5", "law=2@0.0");
      JsonNode passAtK = summary.get("passAtK");
      assertThat(passAtK.get("samples").asInt()).isEqualTo(2);
      assertThat(passAtK.get("values").get(1).get("k").asInt()).isEqualTo(2);
      assertThat(passAtK.get("values").get(1).get("estimate").get("value").asDouble()).as("a passes in 2 epochs, b never")
          .isEqualTo(0.5);
      assertThat(TestApi.json(t.get(RUNS + "/1/summary")).has("groups")).isFalse();
      assertThat(t.get(RUNS + "/1/summary?groupBy=").statusCode()).isEqualTo(400);
    }
  }

  @Test
  void aRunPausedByFailFastShowsWhyAndGoesOnWhenResumedOverTheApi() throws Exception {
    java.nio.file.Path flag = dir.resolve("installed");
    try (TestApi t = TestApi.start(dir).withWorker(1)) {
      // Until the flag exists each case echoes "not installed", then its own line: a verdict line saying error.
      StringBuilder ndjson = new StringBuilder("{\"evaluator\": {\"kind\": \"exec\", \"cmd\": \"sh -c 'if [ -e \\\"$1\\\" ];"
          + " then echo fine; else echo not installed; cat; fi' sh " + flag + "\"}, \"settings\": {\"failFast\": 3}}\n");
      for (int i = 0; i < 40; i++) {
        ndjson.append("{\"id\": \"c").append(i).append("\", \"verdict\": \"error\"}\n");
      }
      assertThat(t.send(post(t, RUNS, "fail-fast", "application/x-ndjson", ndjson.toString())).statusCode()).isEqualTo(201);
      await().atMost(Duration.ofSeconds(30)).until(() -> TestApi.json(t.get(RUNS + "/1")).get("state").asText().equals("paused"));
      JsonNode paused = TestApi.json(t.get(RUNS + "/1"));
      assertThat(paused.get("pausedReason").asText()).isEqualTo("fail fast: its first 3 cases all ended in error alike: not installed");
      assertThat(paused.get("settings").get("failFast").asInt()).isEqualTo(3);

      java.nio.file.Files.createFile(flag);
      HttpResponse<String> resumed = t.send(post(t, RUNS + "/1/resume", null, "application/json", ""));
      assertThat(resumed.statusCode()).as(resumed.body()).isEqualTo(200);
      assertThat(TestApi.json(resumed).get("pausedReason").isNull()).as(resumed.body()).isTrue();
      await().atMost(Duration.ofSeconds(60)).until(() -> TestApi.json(t.get(RUNS + "/1")).get("state").asText().equals("finished"));
      JsonNode counters = TestApi.json(t.get(RUNS + "/1")).get("counters");
      assertThat(counters.get("recorded").asLong()).isEqualTo(40);
      assertThat(counters.get("errored").asLong()).as("the first ones, until fail fast").isBetween(3L, 10L);

      HttpResponse<String> badCap = t.send(post(t, RUNS + "/1/resume", null, "application/json", "{\"maxTokens\": 0}"));
      assertThat(badCap.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(badCap).get("field").asText()).isEqualTo("/maxTokens");
      assertThat(TestApi.json(badCap).get("detail").asText()).as("in the API's words, not the command line's")
          .startsWith("maxTokens must be").doesNotContain("--");
      HttpResponse<String> noPrice = t.send(post(t, RUNS + "/1/resume", null, "application/json", "{\"maxCost\": 5}"));
      assertThat(TestApi.json(noPrice).get("detail").asText()).startsWith("maxCost needs a price (the evaluator's \"price\"")
          .doesNotContain("--");
      HttpResponse<String> nanCap = t.send(post(t, RUNS + "/1/resume", null, "application/json", "{\"maxTokens\": NaN}"));
      assertThat(TestApi.json(nanCap).get("detail").asText()).isEqualTo("request body: Non-standard token 'NaN'");
      // A route that takes no fields refuses a body it would have ignored.
      HttpResponse<String> retryBody = t.send(post(t, RUNS + "/1/retry-errors", null, "application/json", "{\"foo\": 1}"));
      assertThat(retryBody.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(retryBody).get("detail").asText()).isEqualTo("/foo: unknown field 'foo'; a retry of a run's errors takes no fields");
      assertThat(t.send(post(t, RUNS + "/1/cancel", null, "application/json", "{\"x\": NaN")).statusCode()).isEqualTo(400);
      assertThat(t.send(post(t, RUNS + "/1/resume", null, "application/json", "")).statusCode()).as("ended").isEqualTo(409);
      assertThat(t.send(post(t, RUNS + "/9/resume", null, "application/json", "")).statusCode()).isEqualTo(404);
    }
  }

  @Test
  void rescoringJudgesTheStoredAnswersAgainWithoutRunningACaseAndRefusesWhatItCannotDo() throws Exception {
    java.nio.file.Path ran = dir.resolve("ran.log"); // the command appends a line for each case it runs
    try (TestApi t = TestApi.start(dir).withWorker(2)) {
      // cat echoes each case: a verdict line whose answer the scorers judge.
      String ndjson = "{\"evaluator\": {\"kind\": \"exec\", \"cmd\": \"sh -c 'echo ran >> \\\"$1\\\"; cat' sh " + ran
          + "\"}, \"scorers\": [\"exact\"]}\n"
          + "{\"id\": \"a\", \"answer\": \"42\", \"target\": \"42\"}\n{\"id\": \"b\", \"answer\": \"41.5\", \"target\": \"42\"}\n";
      assertThat(t.send(post(t, RUNS, "rescore", "application/x-ndjson", ndjson)).statusCode()).isEqualTo(201);
      await().atMost(Duration.ofSeconds(30)).until(() -> TestApi.json(t.get(RUNS + "/1")).get("state").asText().equals("finished"));
      assertThat(TestApi.json(t.get(RUNS + "/1")).get("counters").get("passed").asLong()).isEqualTo(1);
      assertThat(java.nio.file.Files.readAllLines(ran)).hasSize(2);

      HttpResponse<String> rescored = t.send(post(t, RUNS + "/1/rescore", null, "application/json",
          "{\"scorers\": [\"numeric:abs=1\"]}"));
      assertThat(rescored.statusCode()).as(rescored.body()).isEqualTo(200);
      JsonNode r = TestApi.json(rescored);
      assertThat(r.get("rejudged").asLong()).isEqualTo(2);
      assertThat(r.get("verdictsChanged").asLong()).isEqualTo(1);
      assertThat(r.get("run").get("counters").get("passed").asLong()).isEqualTo(2);
      assertThat(r.get("run").get("scorers").get(0).asText()).isEqualTo("numeric:abs=1");
      JsonNode run = TestApi.json(t.get(RUNS + "/1"));
      assertThat(run.get("counters").get("passed").asLong()).as("the run reads the new figures").isEqualTo(2);
      assertThat(run.get("scorers").get(0).asText()).isEqualTo("numeric:abs=1");
      assertThat(java.nio.file.Files.readAllLines(ran)).as("no case ran again").hasSize(2);

      HttpResponse<String> badSpec = t.send(post(t, RUNS + "/1/rescore", null, "application/json", "{\"scorers\": [\"nope\"]}"));
      assertThat(badSpec.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(badSpec).get("field").asText()).isEqualTo("/scorers/0");
      assertThat(TestApi.json(badSpec).get("detail").asText()).contains("unknown scorer nope");
      HttpResponse<String> unknownField = t.send(post(t, RUNS + "/1/rescore", null, "application/json",
          "{\"scorers\": [\"exact\"], \"scorer\": 1}"));
      assertThat(unknownField.statusCode()).isEqualTo(400);
      assertThat(TestApi.json(unknownField).get("field").asText()).isEqualTo("/scorer");
      assertThat(t.send(post(t, RUNS + "/1/rescore", null, "application/json", "{\"scorers\": ")).statusCode()).isEqualTo(400);
      assertThat(TestApi.json(t.get(RUNS + "/1")).get("scorers").get(0).asText()).as("nothing written").isEqualTo("numeric:abs=1");
      HttpResponse<String> unknown = t.send(post(t, RUNS + "/9/rescore", null, "application/json", "{\"scorers\": [\"exact\"]}"));
      assertThat(unknown.statusCode()).isEqualTo(404);
    }
    java.nio.file.Path other = dir.resolve("other");
    java.nio.file.Files.createDirectories(other);
    try (TestApi t = TestApi.start(other)) {
      assertThat(submit(t, "c", BODY).statusCode()).isEqualTo(201); // no worker: the run stays running
      HttpResponse<String> running = t.send(post(t, RUNS + "/1/rescore", null, "application/json", "{\"scorers\": [\"exact\"]}"));
      assertThat(running.statusCode()).isEqualTo(409);
      assertThat(TestApi.json(running).get("type").asText()).isEqualTo(ProblemType.RUN_NOT_FINISHED.uri());
      assertThat(TestApi.json(t.get(RUNS + "/1")).get("scorers")).as("nothing written").isEmpty();
    }
  }

  @Test
  void aBodyOfAnotherMediaTypeIs415AndAnOversizedOneIs413() throws Exception {
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().maxBodyBytes(100), null)) {
      HttpResponse<String> text = t.send(post(t, RUNS, "m", "text/plain", BODY));
      assertThat(text.statusCode()).isEqualTo(415);
      assertThat(TestApi.json(text).get("header").asText()).isEqualTo("Content-Type");
      HttpResponse<String> big = submit(t, "m", BODY + " ".repeat(200));
      assertThat(big.statusCode()).isEqualTo(413);
      assertThat(runs(t)).isEmpty();
      assertThat(submit(t, "m", "{\"evaluator\": {\"kind\": \"noop\"}, \"cases\": [{\"id\": \"a\"}]}").statusCode())
          .as("the key was released by the refusals").isEqualTo(201);
    }
  }

  private static void chunk(OutputStream out, String data) throws IOException {
    byte[] bytes = data.getBytes(StandardCharsets.UTF_8);
    out.write((Integer.toHexString(bytes.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
    out.write(bytes);
    out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
  }

  /** The status line and headers of a response read off a raw socket. */
  private static String readHead(InputStream in) throws IOException {
    StringBuilder s = new StringBuilder();
    int c;
    while ((c = in.read()) >= 0) {
      s.append((char) c);
      if (s.length() >= 4 && s.substring(s.length() - 4).equals("\r\n\r\n")) {
        break;
      }
    }
    return s.toString();
  }
}

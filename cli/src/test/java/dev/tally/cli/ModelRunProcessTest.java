package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.worker.eval.FakeChatServer;
import java.time.Duration;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally run --evaluator model} end to end: a real {@code tally run} process with its local worker
 * processes, against {@link FakeChatServer} on loopback, on the openai/evals arithmetic example judged by
 * {@code --scorer numeric}. The API key is in the run's environment only; afterwards no file the run wrote
 * (logs at DEBUG, results, summary, store) holds it.
 */
class ModelRunProcessTest {
  /** How long a test waits for the fake server's handlers to count the answers a client has read. */
  private static final Duration SETTLE = Duration.ofSeconds(10);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path DATASET = Path.of("..", "examples", "eval-formats", "openai-evals.jsonl").toAbsolutePath().normalize();
  private static final int CASES = 30;
  private static final String KEY = "sk-fake-0123456789abcdef-process";
  private static final String WRONG_KEY = "sk-wrong-fedcba9876543210-process";
  private static final String KEY_ENV = "TALLY_TEST_MODEL_KEY";
  /** Two JVMs start and 30 requests are answered; minutes leave room for a loaded 2-core machine. */
  private static final long RUN_SECONDS = 180;

  @TempDir Path dir;

  private FakeChatServer server;

  @BeforeEach
  void start() throws IOException {
    server = FakeChatServer.start(KEY);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private int resume(String... more) throws Exception {
    List<String> args = new ArrayList<>(List.of("resume", "1", "--db=" + dir.resolve("tally.db"), "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--workers=1", "--slots=4"));
    args.addAll(List.of(more));
    try (TallyProcess p = TallyProcess.start(dir, "resume.log", args, Map.of(KEY_ENV, KEY))) {
      int exit = p.waitFor(RUN_SECONDS);
      assertThat(exit).as("output:\n%s", p.output()).isIn(Main.EXIT_PASSED, Main.EXIT_FAILED);
      return exit;
    }
  }

  private int run(String key, String... more) throws Exception {
    List<String> args = new ArrayList<>(List.of("run", DATASET.toString(), "--no-progress",
        "--db=" + dir.resolve("tally.db"), "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"),
        "--evaluator=model", "--base-url=" + server.baseUrl(), "--model=calc", "--api-key-env=" + KEY_ENV,
        "--temperature=0", "--price=1,2", "--scorer=numeric"));
    args.addAll(more.length == 0 ? List.of("--workers=1", "--slots=4") : List.of(more));
    try (TallyProcess p = TallyProcess.start(dir, "run.log", args, Map.of(KEY_ENV, key, "TALLY_LOG_LEVEL", "DEBUG"))) {
      int exit = p.waitFor(RUN_SECONDS);
      assertThat(exit).as("output:\n%s", p.output()).isIn(Main.EXIT_PASSED, Main.EXIT_FAILED);
      return exit;
    }
  }

  private List<JsonNode> results() throws IOException {
    List<JsonNode> rows = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve("r.jsonl"))) {
      rows.add(JSON.readTree(line));
    }
    return rows;
  }

  /** Every file under the test's folder whose bytes hold {@code text}: logs, results, summary, the store and its WAL. */
  private List<Path> filesHolding(String text) throws IOException {
    byte[] needle = text.getBytes(StandardCharsets.UTF_8);
    List<Path> holding = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> walk = Files.walk(dir)) {
      files = walk.filter(Files::isRegularFile).toList();
    }
    for (Path f : files) {
      byte[] bytes = Files.readAllBytes(f);
      for (int i = 0; i + needle.length <= bytes.length; i++) {
        if (java.util.Arrays.equals(bytes, i, i + needle.length, needle, 0, needle.length)) {
          holding.add(f);
          break;
        }
      }
    }
    assertThat(files).as("the run wrote its logs, results and store").hasSizeGreaterThan(3);
    return holding;
  }

  @Test
  void everyCaseIsAnsweredByOneBilledRequestAndJudgedWithItsUsageAndCostKept() throws Exception {
    assertThat(run(KEY)).isEqualTo(Main.EXIT_PASSED);
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(CASES);
    assertThat(server.requests()).isEqualTo(CASES);
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("passed").asInt()).isEqualTo(CASES);
    for (JsonNode r : results()) {
      JsonNode fields = r.get("fields");
      fields = fields.isTextual() ? JSON.readTree(fields.asText()) : fields;
      assertThat(fields.get("usage").get("completionTokens").asInt()).as(r.toString()).isEqualTo(1);
      assertThat(fields.get("costUsd").asDouble()).as(r.toString()).isPositive();
      assertThat(fields.get("scores").get("numeric").get("passed").asBoolean()).as(r.toString()).isTrue();
      assertThat(r.get("answer").asText()).as(r.toString()).matches("-?[0-9]+");
    }
    assertThat(filesHolding(KEY)).isEmpty();
  }

  @Test
  void theInspectAndPromptfooExamplesRunThroughTheModelEvaluatorEachCaseAskedOnce() throws Exception {
    Path examples = DATASET.getParent();
    record Example(String file, int cases, int passed, List<String> args) {}
    List<Example> all = List.of(
        new Example("inspect.json", 24, 24, List.of("--scorer=choice")), // chat-message input, multiple choice
        // The 6 tests with only a `contains` assertion have no target: promptfoo's own assertions are not
        // evaluated by Tally's scorers, and such a case is the scorer's error (it says so).
        new Example("promptfoo.yaml", 24, 18, List.of("--prompt={question}", "--scorer=numeric")));
    int billedBefore = 0;
    for (Example e : all) {
      Path db = dir.resolve(e.file() + ".db");
      List<String> args = new ArrayList<>(List.of("run", examples.resolve(e.file()).toString(), "--no-progress",
          "--db=" + db, "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--workers=1",
          "--slots=4", "--evaluator=model", "--base-url=" + server.baseUrl(), "--model=calc", "--api-key-env=" + KEY_ENV,
          "--max-concurrency=3"));
      args.addAll(e.args());
      try (TallyProcess p = TallyProcess.start(dir, e.file() + ".log", args, Map.of(KEY_ENV, KEY))) {
        assertThat(p.waitFor(RUN_SECONDS)).as("%s:%n%s", e.file(), p.output())
            .isEqualTo(e.passed() == e.cases() ? Main.EXIT_PASSED : Main.EXIT_FAILED);
      }
      JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
      assertThat(summary.get("recorded").asInt()).as(e.file()).isEqualTo(e.cases());
      assertThat(summary.get("passed").asInt()).as(e.file()).isEqualTo(e.passed());
      assertThat(server.billedOnceSettled(SETTLE) - billedBefore).as(e.file() + ": each case asked once").isEqualTo(e.cases());
      billedBefore = server.billedOnceSettled(SETTLE);
    }
  }

  @Test
  void aBurstOf429sBacksTheFleetOffAndNoCaseIsPaidTwice() throws Exception {
    server.failNext(6, 429, "1");
    assertThat(run(KEY)).isEqualTo(Main.EXIT_PASSED);
    assertThat(server.requests()).isEqualTo(CASES + 6);
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(CASES);
    assertThat(JSON.readTree(dir.resolve("s.json").toFile()).get("passed").asInt()).isEqualTo(CASES);
  }

  @Test
  void threeWorkerProcessesNeverHaveMoreRequestsInFlightThanTheFleetWideLimitAndBackOffTogether() throws Exception {
    server.delay(java.time.Duration.ofMillis(150));
    server.failNext(4, 429, "1");
    // 12 slots, 3 permits: without the coordinator's limit up to 12 requests would be in flight at once.
    assertThat(run(KEY, "--workers=3", "--slots=4", "--max-concurrency=3")).isEqualTo(Main.EXIT_PASSED);
    assertThat(server.maxInFlight()).as("requests in flight at once, across 3 worker processes").isBetween(1, 3);
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(CASES);
    assertThat(server.requests()).as("each 429 answered once, then the case asked again").isEqualTo(CASES + 4);
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("passed").asInt()).isEqualTo(CASES);
    assertThat(results()).allSatisfy(r -> assertThat(r.get("attempts").asInt()).as(r.toString())
        .as("a rate-limited attempt is not charged").isLessThanOrEqualTo(2));
  }

  @Test
  void aRunStopsAtItsTokenCapSaysSoAndGoesOnWithARaisedCapWithoutPayingAnyResponseTwice() throws Exception {
    server.delay(java.time.Duration.ofMillis(20));
    assertThat(run(KEY, "--workers=1", "--slots=2", "--max-tokens=60")).isEqualTo(Main.EXIT_FAILED);
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("paused").asText()).startsWith("its token cap is reached: ").endsWith("--max-tokens 60");
    // The way on is told from the cap that paused it (FleetLimits.Cap), not from the sentence's wording.
    assertThat(Files.readString(dir.resolve("run.log"))).contains("Go on with a raised cap: tally resume 1 ")
        .containsPattern("--max-tokens N\\R");
    long used = summary.get("usage").get("promptTokens").asLong() + summary.get("usage").get("completionTokens").asLong();
    assertThat(used).isGreaterThanOrEqualTo(60);
    long recorded = summary.get("recorded").asLong();
    assertThat(recorded).as("stopped before the end").isBetween(1L, (long) CASES - 1);
    assertThat(results()).hasSize((int) recorded);
    assertThat(server.billedOnceSettled(SETTLE)).as("every paid answer was kept").isEqualTo((int) recorded);
    assertThat(summary.get("usage").get("costUsd").asDouble()).isPositive();

    assertThat(resume("--max-tokens=100000")).isEqualTo(Main.EXIT_PASSED);
    summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("passed").asInt()).isEqualTo(CASES);
    assertThat(summary.has("paused")).isFalse();
    assertThat(server.billedOnceSettled(SETTLE)).as("no response paid twice across the pause").isEqualTo(CASES);
  }

  @Test
  void rescoringAModelRunAsksTheModelNothingAndJudgesItsStoredCompletionsAgain() throws Exception {
    assertThat(run(KEY)).isEqualTo(Main.EXIT_PASSED);
    int requests = server.requests();
    long negative = results().stream().filter(r -> r.get("answer").asText().startsWith("-")).count();
    assertThat(negative).as("the example has some negative results and some not").isBetween(1L, CASES - 1L);

    // No key in its environment: a rescore needs none, since it asks nobody.
    List<String> args = List.of("rescore", "1", "--db=" + dir.resolve("tally.db"), "--scorer=regex:pattern=^-",
        "--scorer=numeric", "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--no-progress");
    try (TallyProcess p = TallyProcess.start(dir, "rescore.log", args, Map.of())) {
      assertThat(p.waitFor(RUN_SECONDS)).as("output:\n%s", p.output()).isEqualTo(Main.EXIT_FAILED);
      assertThat(p.output()).contains("judged " + CASES + " cases again")
          .contains((CASES - negative) + " cases changed verdict");
    }
    assertThat(server.requests()).as("the model was asked nothing").isEqualTo(requests);
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(CASES);
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("passed").asLong()).as("only the negative answers match ^-").isEqualTo(negative);
    for (JsonNode r : results()) {
      JsonNode fields = r.get("fields");
      fields = fields.isTextual() ? JSON.readTree(fields.asText()) : fields;
      assertThat(fields.get("scores").get("numeric").get("passed").asBoolean()).as(r.toString()).isTrue();
      assertThat(fields.get("usage").get("completionTokens").asInt()).as("the evaluator's fields stay").isEqualTo(1);
    }
  }

  @Test
  void aRejectedKeyPausesTheRunAfterItsFirstCasesRatherThanAskingForEveryOne() throws Exception {
    assertThat(run(WRONG_KEY, "--workers=1", "--slots=2", "--fail-fast=5")).isEqualTo(Main.EXIT_FAILED);
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("paused").asText()).startsWith("fail fast: its first 5 cases all ended in error alike: HTTP 401 from ")
        .contains("[redacted]").doesNotContain(WRONG_KEY);
    assertThat(server.requests()).as("the fifth, and what was in flight then").isBetween(5, 15);
    assertThat(server.billedOnceSettled(SETTLE)).isZero();
  }

  @Test
  void aWrongKeyErrorsEveryCaseWithTheStatusAndTheServersMessageAndTheKeyIsWrittenNowhere() throws Exception {
    // Fail fast off: every case is asked, and every message checked.
    assertThat(run(WRONG_KEY, "--workers=1", "--slots=4", "--fail-fast=0")).isEqualTo(Main.EXIT_FAILED);
    assertThat(server.billedOnceSettled(SETTLE)).isZero();
    List<JsonNode> rows = results();
    assertThat(rows).hasSize(CASES);
    for (JsonNode r : rows) {
      assertThat(r.get("verdict").asText()).isEqualTo("error");
      assertThat(r.get("output").asText()).as(r.toString())
          .startsWith("HTTP 401 from " + server.baseUrl() + "/chat/completions: Incorrect API key provided: [redacted].")
          .contains("the API key is read from " + KEY_ENV);
    }
    assertThat(filesHolding(WRONG_KEY)).isEmpty();
    assertThat(filesHolding(KEY)).isEmpty();
  }
}

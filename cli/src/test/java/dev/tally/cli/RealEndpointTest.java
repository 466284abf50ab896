package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.api.io.TempDir;

/**
 * The model evaluator against a real OpenAI-compatible endpoint, when one is reachable: set {@code
 * TALLY_TEST_BASE_URL} (e.g. {@code https://api.openai.com/v1} or a local vLLM's {@code http://127.0.0.1:8000/v1}),
 * {@code TALLY_TEST_MODEL} (default {@code gpt-4o-mini}) and the key in {@code TALLY_TEST_API_KEY} (none for a
 * local server). CI has none, so there it is skipped; {@code ModelRunProcessTest} runs the same shapes against
 * a fake endpoint everywhere. It checks what holds for any model: every case is answered and recorded once,
 * tokens are counted, a rescore asks nothing, and the key is written nowhere.
 */
@EnabledIfEnvironmentVariable(named = "TALLY_TEST_BASE_URL", matches = "https?://.+")
class RealEndpointTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path DATASET = Path.of("..", "examples", "eval-formats", "openai-evals.jsonl").toAbsolutePath().normalize();
  private static final String KEY_ENV = "TALLY_TEST_API_KEY";

  @TempDir Path dir;

  @Test
  void theOpenAiEvalsExampleIsAnsweredAndRecordedOnceAndRescoredWithoutAsking() throws Exception {
    String model = System.getenv().getOrDefault("TALLY_TEST_MODEL", "gpt-4o-mini");
    List<String> args = new ArrayList<>(List.of("run", DATASET.toString(), "--no-progress", "--workers=2", "--slots=4",
        "--db=" + dir.resolve("tally.db"), "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"),
        "--evaluator=model", "--base-url=" + System.getenv("TALLY_TEST_BASE_URL"), "--model=" + model,
        "--api-key-env=" + KEY_ENV, "--temperature=0", "--max-completion-tokens=16", "--max-concurrency=4",
        "--scorer=numeric", "--fail-fast=0"));
    try (TallyProcess p = TallyProcess.start(dir, "run.log", args, Map.of())) {
      assertThat(p.waitFor(600)).as("output:\n%s", p.output()).isIn(Main.EXIT_PASSED, Main.EXIT_FAILED);
    }
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("recorded").asInt()).isEqualTo(30);
    assertThat(summary.get("jobsFailed").asInt()).isZero();
    assertThat(summary.get("usage").get("completionTokens").asLong()).isPositive();
    long lines = Files.readAllLines(dir.resolve("r.jsonl")).size();
    assertThat(lines).isEqualTo(30);

    long tokens = summary.get("usage").get("promptTokens").asLong();
    List<String> rescore = List.of("rescore", "1", "--db=" + dir.resolve("tally.db"), "--scorer=includes",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--no-progress");
    try (TallyProcess p = TallyProcess.start(dir, "rescore.log", rescore, Map.of())) {
      assertThat(p.waitFor(120)).as("output:\n%s", p.output()).isIn(Main.EXIT_PASSED, Main.EXIT_FAILED);
    }
    assertThat(JSON.readTree(dir.resolve("s.json").toFile()).get("usage").get("promptTokens").asLong())
        .as("a rescore pays for nothing").isEqualTo(tokens);
    String key = System.getenv(KEY_ENV);
    if (key != null && !key.isEmpty()) {
      try (var files = Files.walk(dir)) {
        for (Path f : files.filter(Files::isRegularFile).toList()) {
          assertThat(new String(Files.readAllBytes(f), java.nio.charset.StandardCharsets.ISO_8859_1)).as(f.toString())
              .doesNotContain(key);
        }
      }
    }
  }
}

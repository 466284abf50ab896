package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * {@code tally run} end to end on datasets that are not JSON Lines: the examples in the three foreign formats
 * ({@code examples/eval-formats}, judged by its {@code answer.py}), a typed CSV with epochs and a sample,
 * and the reading options' errors. The workers are in this JVM; the exec evaluator runs real processes.
 */
class DatasetFormatsRunTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The examples, from the cli module's folder (where Maven runs its tests). */
  private static final Path EXAMPLES = Path.of("..", "examples", "eval-formats").toAbsolutePath().normalize();

  @TempDir Path dir;

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int tally(String... args) {
    CommandLine cl = Main.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(args);
  }

  private List<JsonNode> results() throws Exception {
    List<JsonNode> rows = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve("r.jsonl"))) {
      rows.add(JSON.readTree(line));
    }
    return rows;
  }

  private int run(Path dataset, String... more) {
    List<String> args = new ArrayList<>(List.of("run", dataset.toString(), "--workers=0", "--in-process=2", "--no-progress",
        "--db=" + dir.resolve("tally.db"), "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json")));
    args.addAll(List.of(more));
    return tally(args.toArray(String[]::new));
  }

  @ParameterizedTest
  @CsvSource({"openai-evals.jsonl, 30, 25", "inspect.json, 24, 21", "promptfoo.yaml, 24, 21", "promptfoo.csv, 24, 18"})
  void eachExampleRunsAsItIsWithItsTargetsReachingTheEvaluator(String file, int total, int passed) throws Exception {
    int exit = run(EXAMPLES.resolve(file), "--cmd=python3 " + EXAMPLES.resolve("answer.py"));
    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED); // the stand-in's planted weakness fails some
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("total").asInt()).isEqualTo(total);
    assertThat(summary.get("passed").asInt()).as("stderr: %s", err).isEqualTo(passed);
    assertThat(summary.get("failed").asInt()).isEqualTo(total - passed);
    List<JsonNode> rows = results();
    assertThat(rows).hasSize(total).extracting(r -> r.get("id").asText()).doesNotHaveDuplicates();
    // every failure is the planted one: a negative answer given without its sign
    for (JsonNode r : rows) {
      if (r.get("verdict").asText().equals("fail")) {
        assertThat(r.get("output").asText()).as(r.toString()).containsPattern("\"answer\": \"[0-9]*\"");
      }
    }
  }

  @Test
  void theExamplesIdsDoNotDependOnPositionSoARerunResumesNothingAndRunsTheSameCases() throws Exception {
    Path copy = dir.resolve("evals.jsonl");
    List<String> lines = new ArrayList<>(Files.readAllLines(EXAMPLES.resolve("openai-evals.jsonl")));
    java.util.Collections.reverse(lines);
    Files.write(copy, lines);
    run(EXAMPLES.resolve("openai-evals.jsonl"), "--evaluator=noop");
    List<String> ids = results().stream().map(r -> r.get("id").asText()).sorted().toList();
    run(copy, "--evaluator=noop", "--db=" + dir.resolve("other.db"));
    assertThat(results().stream().map(r -> r.get("id").asText()).sorted().toList()).isEqualTo(ids);
  }

  @Test
  void aTypedCsvRunsItsSampleForEachEpochWithTypedFieldsInTheCommand() throws Exception {
    StringBuilder csv = new StringBuilder("id,a,b,meta\n");
    for (int i = 0; i < 40; i++) {
      csv.append("q").append(i).append(',').append(i).append(',').append(i * 2).append(",\"{\"\"k\"\": ").append(i).append("}\"\n");
    }
    Path dataset = Files.writeString(dir.resolve("sums.csv"), csv);
    int exit = run(dataset, "--csv-types=a:int,b:int,meta:json", "--sample=5", "--seed=3", "--epochs=2",
        "--cmd=sh -c 'echo {a} {b} {meta} {epoch} {sampleId}'");
    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    List<JsonNode> rows = results();
    assertThat(rows).hasSize(10);
    for (int i = 0; i < 10; i += 2) {
      String sampleId = rows.get(i).get("id").asText().replace("#1", "");
      assertThat(rows.get(i).get("id").asText()).isEqualTo(sampleId + "#1");
      assertThat(rows.get(i + 1).get("id").asText()).isEqualTo(sampleId + "#2");
      int a = Integer.parseInt(sampleId.substring(1));
      // meta is typed json, so it comes in compact (the cell says {"k": 3}); epoch and sampleId are the epoch's
      assertThat(rows.get(i + 1).get("output").asText())
          .isEqualTo(a + " " + (2 * a) + " {\"k\":" + a + "} 2 " + sampleId + "\n");
    }
    // the same sample again: the same cases
    List<String> ids = rows.stream().map(r -> r.get("id").asText()).toList();
    assertThat(run(dataset, "--csv-types=a:int,b:int,meta:json", "--sample=5", "--seed=3", "--epochs=2",
        "--cmd=sh -c 'echo {a} {b} {meta} {epoch} {sampleId}'")).isEqualTo(Main.EXIT_PASSED);
    assertThat(results().stream().map(r -> r.get("id").asText()).toList()).isEqualTo(ids);
  }

  @Test
  void badReadingOptionsAndBadRowsAreUsageErrorsNamingTheirPlaceAndWriteNothing() throws Exception {
    Path dataset = Files.writeString(dir.resolve("c.csv"), "id,n\na,1\nb,two\n");
    assertThat(run(dataset, "--evaluator=noop", "--csv-types=n:int")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":3: row 2: column \"n\": \"two\" is not an int");
    assertThat(run(dataset, "--evaluator=noop", "--format=xml")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--format: unknown format \"xml\"; the formats are jsonl, json, csv, yaml,"
        + " openai-evals, inspect, promptfoo");
    assertThat(run(dataset, "--evaluator=noop", "--seed=4")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--seed is the seed of --sample");
    assertThat(run(dataset, "--evaluator=noop", "--epochs=0")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--epochs must be from 1 to");
    assertThat(run(dataset, "--evaluator=noop", "--csv-types=n")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--csv-types: \"n\" is not COLUMN:TYPE");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }
}

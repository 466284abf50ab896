package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code examples/exactly-once-effect/} in CI, short: its script runs a dataset whose cases each perform an
 * external effect, kills worker JVMs and the coordinator with {@code kill -9} right after effects, and
 * checks the ledger. Here, read independently: one effect per case although some cases ran more than once,
 * and every execution of a case carried the same {@code TALLY_IDEMPOTENCY_KEY} (with a later attempt and a
 * greater fencing token), every case another.
 */
class ExactlyOnceEffectProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int CASES = 12;
  private static final Path EXAMPLE = Paths.get("..", "examples", "exactly-once-effect").toAbsolutePath().normalize();

  @TempDir Path dir;

  @Test
  void everyCasesEffectHappensOnceWhileKilledWorkersAndACoordinatorMakeSomeRunTwice() throws Exception {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    String tally = String.join(" ", List.of(java, "-Xmx512m", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
        Main.class.getName()).stream().map(ExactlyOnceEffectProcessTest::shellWord).toList());
    Path work = dir.resolve("work");
    Path output = dir.resolve("run.py.log");
    Process script = new ProcessBuilder("python3", EXAMPLE.resolve("run.py").toString(), "--cases", Integer.toString(CASES),
        "--worker-kills", "2", "--coordinator-kills", "1", "--hold", "0.8", "--work-dir", work.toString(), "--tally", tally)
        .redirectErrorStream(true).redirectOutput(output.toFile()).start();
    try {
      assertThat(script.waitFor(300, TimeUnit.SECONDS)).as("run.py finished").isTrue();
    } finally {
      script.descendants().forEach(ProcessHandle::destroyForcibly);
      script.destroyForcibly();
    }
    String said = Files.readString(output);
    assertThat(script.exitValue()).as("run.py's output:%n%s", said).isZero();
    assertThat(said).contains(CASES + " cases -> " + CASES + " effects in the ledger", "OK: every case's effect happened exactly once",
        "killed tally run (kill -9)", "killed worker JVM");

    // The ledger, read here rather than trusted from the script.
    Map<String, Integer> effects = new HashMap<>();
    try (Connection db = DriverManager.getConnection("jdbc:sqlite:" + work.resolve("ledger.db"));
        ResultSet rows = db.createStatement().executeQuery("SELECT case_id, COUNT(*) FROM inbox GROUP BY case_id")) {
      while (rows.next()) {
        effects.put(rows.getString(1), rows.getInt(2));
      }
    }
    assertThat(effects).hasSize(CASES).allSatisfy((c, n) -> assertThat(n).as(c).isEqualTo(1));

    // The side log: what ran. More executions than cases, one key per case, a new key for every case.
    Map<String, List<JsonNode>> executions = new HashMap<>();
    for (String line : Files.readAllLines(work.resolve("side.log"))) {
      JsonNode e = JSON.readTree(line);
      if (e.get("event").asText().equals("execution")) {
        executions.computeIfAbsent(e.get("case").asText(), c -> new ArrayList<>()).add(e);
      }
    }
    assertThat(executions).hasSize(CASES);
    assertThat(executions.values().stream().mapToInt(List::size).sum()).as("executions").isGreaterThan(CASES);
    Set<String> keys = new HashSet<>();
    for (Map.Entry<String, List<JsonNode>> c : executions.entrySet()) {
      Set<String> ofCase = c.getValue().stream().map(e -> e.get("key").asText()).collect(Collectors.toSet());
      assertThat(ofCase).as("the keys of %s's executions", c.getKey()).hasSize(1);
      keys.addAll(ofCase);
      List<Long> tokens = c.getValue().stream().map(e -> Long.parseLong(e.get("token").asText())).toList();
      assertThat(tokens).as("tokens of %s's executions, in order", c.getKey()).isSorted().doesNotHaveDuplicates();
    }
    assertThat(keys).as("a key per case").hasSize(CASES);
  }

  /** {@code s} as one POSIX shell word (what Python's shlex reads back). */
  private static String shellWord(String s) {
    return "'" + s.replace("'", "'\"'\"'") + "'";
  }
}

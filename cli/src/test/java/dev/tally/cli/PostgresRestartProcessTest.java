package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.RunView;
import dev.tally.store.JdbcStore;
import dev.tally.store.PostgresFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PostgreSQL stopped at once ({@code pg_ctl stop -m immediate}: SIGQUIT to the postmaster) under a
 * running {@code tally run} and started again on the same data directory and port: the coordinator waits
 * and tries its batch again on a new connection, the workers keep their results in their outboxes
 * meanwhile, and the run finishes with every case recorded exactly once. The database stays down past the
 * coordinator's 3 s leader lease: its lead is in doubt, it holds on, and renews once the database answers
 * (it used to step down at the lapse, and the run stopped).
 */
class PostgresRestartProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void aRunOutlivesItsDatabaseRestartedUnderItAndRecordsEveryCaseOnce() throws Exception {
    int total = 400;
    // Two one-slot workers through cases of 20 to 80 ms: about 10 s of work, so the restart falls mid-run.
    Path dataset = TallyProcess.sleepDataset(dir.resolve("cases.jsonl"), total, "c", 11);
    try (PostgresFixture.Dedicated server = PostgresFixture.Dedicated.start()) {
      StoreUnderTest db = new StoreUnderTest(server.createDatabase("restarted"), Map.of());
      try (TallyProcess tally = TallyProcess.start(dir, "tally.log", List.of(
          "run", dataset.toString(), "--workers=2", "--slots=1", "--evaluator=sleep", db.dbArgument(),
          "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress"), db.env())) {
        await("a quarter recorded").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
            .until(() -> db.counters().map(c -> c.recorded() >= total / 4).orElse(false));
        server.stopImmediately();
        // The database stays down until the coordinator has found it gone, and has gone a whole leader lease
        // without renewing it.
        await("the coordinator finds the database gone").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> tally.output().contains("lost the connection"));
        await("the coordinator's lead in doubt").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> tally.output().contains("holding on, in doubt"));
        server.restart();
        assertThat(tally.waitFor(180)).as("exit code; output:%n%s", tally.output()).isZero();
        assertThat(tally.output()).as("the coordinator waited for the database").contains("lost the connection")
            .contains("renewed the lead of epoch 1").doesNotContain("stepped down");
      }

      List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
      assertThat(results).hasSize(total);
      Set<String> ids = new HashSet<>();
      for (String line : results) {
        JsonNode row = JSON.readTree(line);
        assertThat(row.get("verdict").asText()).isEqualTo("pass");
        ids.add(row.get("id").asText());
      }
      assertThat(ids).as("every case once").hasSize(total);
      JsonNode summary = JSON.readTree(dir.resolve("summary.json").toFile());
      assertThat(summary.get("recorded").asLong()).isEqualTo(total);
      assertThat(summary.get("passed").asLong()).isEqualTo(total);

      try (JdbcStore store = db.open()) {
        RunView run = store.runs().get(0);
        assertThat(run.ended()).isTrue();
        assertThat(run.counters().recorded()).isEqualTo(total);
        assertThat(store.jobs(run.runId())).hasSize(total).allMatch(j -> j.state() == JobState.DONE);
        List<AttemptView> attempts = store.attempts(run.runId());
        assertThat(attempts.stream().filter(a -> a.ending().equals("recorded")).count())
            .as("each job recorded exactly once").isEqualTo(total);
      }
    }
  }
}

package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.core.lead.LeaderRow;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code tally run} whose store another coordinator takes the lead of mid-run (here a test's own swap of
 * the leader row, as a standby's takeover would be): the run stops at once with its one line, which names
 * the lead it lost rather than calling it a standby, and the same command, run again once that lead has
 * lapsed, finishes the run with every case recorded exactly once.
 */
class DeposedRunProcessTest {
  @TempDir Path dir;

  @Test
  void aRunWhoseLeadIsTakenStopsSayingSoAndTheSameCommandFinishesIt() throws Exception {
    int total = 300;
    Path dataset = TallyProcess.sleepDataset(dir.resolve("cases.jsonl"), total, "c", 5);
    Path db = dir.resolve("tally.db");
    List<String> command = List.of("run", dataset.toString(), "--workers=2", "--slots=2", "--evaluator=sleep", "--db=" + db,
        "--out=" + dir.resolve("results.jsonl"), "--no-progress");
    try (TallyProcess first = TallyProcess.start(dir, "first.log", command)) {
      await("a fifth recorded").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
          .until(() -> TallyProcess.counters(db).map(c -> c.recorded() >= total / 5).orElse(false));
      try (SqliteStore usurper = SqliteStore.open(db)) {
        LeaderRow row = usurper.leader().row();
        // Another coordinator's lead, lapsing 2 s from now so that the same command can lead again after.
        assertThat(usurper.swapLeader(row, new LeaderRow(row.epoch() + 1, "usurper", null, System.currentTimeMillis() + 2_000)))
            .isTrue();
      }
      assertThat(first.waitFor(60)).as(first.output()).isEqualTo(Main.EXIT_FAILED);
      assertThat(first.output()).contains("tally: run 1 stopped: ", "epoch 2", "Nothing recorded is lost")
          .doesNotContain("(a standby)");
    }
    try (TallyProcess again = TallyProcess.start(dir, "again.log", command)) {
      assertThat(again.waitFor(120)).as(again.output()).isZero();
    }
    try (SqliteStore store = SqliteStore.open(db)) {
      RunView run = store.runs().get(0);
      assertThat(run.ended()).isTrue();
      assertThat(run.counters().recorded()).isEqualTo(total);
      List<AttemptView> attempts = store.attempts(run.runId());
      assertThat(attempts.stream().filter(a -> a.ending().equals("recorded")).count()).as("each case recorded once")
          .isEqualTo(total);
    }
  }
}

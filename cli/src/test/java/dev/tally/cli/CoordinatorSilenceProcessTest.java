package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The half-open connection seen from a worker, with real processes: the network path between one worker
 * and its coordinator drops (both ways, nothing closed) for longer than the worker's patience, then
 * returns. Before, a worker kept its dead socket until TCP gave up, a minute or more; now it convicts the
 * silence, reconnects as soon as the path is back, and the run counts every case once.
 */
class CoordinatorSilenceProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void aWorkerCutOffFromItsCoordinatorReconnectsSoonAfterThePathReturnsAndNoCaseCountsTwice() throws Exception {
    int port = Ports.freeFixedLoopbackPort();
    int total = 1_000;
    // 100 ms cases on 2 + 2 slots: about 25 s of work for the two workers, 50 s for one, so the run is
    // still going when the cut-off worker is back (cut-off time: about 12 s).
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      lines.add("{\"id\":\"c" + i + "\",\"millis\":100}");
    }
    Path dataset = Files.write(dir.resolve("cases.jsonl"), lines);
    Path db = dir.resolve("t.db");

    try (SilentPathProxy path = new SilentPathProxy(port);
        TallyProcess run = TallyProcess.start(dir, "run.log", List.of(
            "run", dataset.toString(), "--listen=127.0.0.1:" + port, "--workers=0", "--evaluator=sleep", "--db=" + db,
            "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress"));
        TallyProcess direct = TallyProcess.start(dir, "direct.log", List.of(
            "worker", "--coordinator=127.0.0.1:" + port, "--slots=2", "--name=direct"));
        TallyProcess cutOff = TallyProcess.start(dir, "cut-off.log", List.of(
            "worker", "--coordinator=127.0.0.1:" + path.port(), "--slots=2", "--name=cut-off"))) {
      await("the cut-off worker has delivered results").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
          .until(() -> recordedBy(db, "cut-off") >= 10);

      // The worker may have dialled before the coordinator listened: only what it says from now on counts.
      int outputAtCut = cutOff.output().length();
      path.cut();
      long cutAt = System.nanoTime();
      await("the worker convicts its silent coordinator").atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(100))
          .until(() -> cutOff.output().indexOf("lost the coordinator", outputAtCut) >= 0);
      long convictedAfterMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cutAt);
      assertThat(cutOff.output().substring(outputAtCut)).as("worker output:%n%s", cutOff.output()).containsPattern(
          "lost the coordinator at 127\\.0\\.0\\.1:" + path.port() + ": silent for \\d+ ms with the connection open");
      assertThat(convictedAfterMillis).as("patient with a pause, far quicker than TCP").isBetween(5_000L, 30_000L);
      Thread.sleep(2_000); // the scenario itself: the path stays down a little after the conviction
      assertThat(cutOff.output().substring(outputAtCut)).doesNotContain("reconnected to the coordinator");

      path.restore();
      long restoredAt = System.nanoTime();
      await("the worker is back").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> cutOff.output().indexOf("reconnected to the coordinator", outputAtCut) >= 0);
      long backAfterMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restoredAt);
      assertThat(backAfterMillis).as("within a few seconds of the path's return; worker output:%n%s", cutOff.output())
          .isLessThan(8_000);
      long backAtMillis = System.currentTimeMillis();
      System.out.printf("silent path: convicted %d ms after the cut, reconnected %d ms after the path returned%n",
          convictedAfterMillis, backAfterMillis);

      assertThat(run.waitFor(180)).as("run output:%n%s", run.output()).isZero();
      assertThat(cutOff.process.isAlive()).as("the worker outlives the run").isTrue();

      List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
      assertThat(results).hasSize(total);
      Set<String> ids = new HashSet<>();
      for (String line : results) {
        JsonNode row = JSON.readTree(line);
        assertThat(row.get("verdict").asText()).isEqualTo("pass");
        ids.add(row.get("id").asText());
      }
      assertThat(ids).hasSize(total);
      JsonNode summary = JSON.readTree(dir.resolve("summary.json").toFile());
      assertThat(summary.get("recorded").asLong()).isEqualTo(total);
      assertThat(summary.get("passed").asLong()).isEqualTo(total);

      try (SqliteStore store = SqliteStore.openExisting(db)) {
        RunView view = store.runs().get(0);
        assertThat(store.jobs(view.runId())).hasSize(total).allMatch(j -> j.state() == JobState.DONE);
        List<AttemptView> attempts = store.attempts(view.runId());
        assertThat(attempts.stream().filter(a -> a.ending().equals("recorded")).count())
            .as("each case recorded exactly once").isEqualTo(total);
        assertThat(attempts).as("the worker took work again after it came back")
            .anyMatch(a -> a.worker().equals("cut-off") && a.ending().equals("recorded") && a.startedAtMillis() > backAtMillis);
      }
    }
  }

  /** Cases recorded from {@code worker}, read without migrating a store a live coordinator may be creating. */
  private static long recordedBy(Path db, String worker) {
    if (!Files.exists(db)) {
      return 0;
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      List<RunView> runs = store.runs();
      if (runs.isEmpty()) {
        return 0;
      }
      return store.attempts(runs.get(0).runId()).stream()
          .filter(a -> a.worker().equals(worker) && a.ending().equals("recorded")).count();
    } catch (RuntimeException notReadyYet) {
      return 0;
    }
  }
}

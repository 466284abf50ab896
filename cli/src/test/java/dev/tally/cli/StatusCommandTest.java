package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.CaseRecord;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.WorkerStatus;
import dev.tally.store.SqliteStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code tally status}: what it shows of the workers, and that it only reads. */
class StatusCommandTest {
  @TempDir Path dir;

  private record Result(int exit, String out, String err) {}

  private Result status(Path db) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int exit = cl.execute("status", "--db=" + db);
    return new Result(exit, out.toString(), err.toString());
  }

  @Test
  void showsLiveLeftAndSilentWorkersAndHidesLongGoneOnes() {
    Path db = dir.resolve("t.db");
    long now = System.currentTimeMillis();
    try (SqliteStore store = SqliteStore.open(db)) {
      store.saveWorkerStatuses(List.of(
          new WorkerStatus("1", "w-live", "0.12 of 8.00", true, 0, null, 0, 3, now, null),
          new WorkerStatus("2", "w-left", "9.10 of 8.00", false, 0, null, 0, 0, now - 5_000, "reaped after 2600ms of silence"),
          new WorkerStatus("3", "w-silent", "0.40 of 8.00", true, 0, null, 0, 2, now - 60_000, null),
          new WorkerStatus("4", "w-old", "0.00 of 8.00", true, 0, null, 0, 0, now - 3_600_000, "the coordinator stopped")));
    }
    Result r = status(db);
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out().lines().filter(l -> l.startsWith("w-live"))).singleElement().asString()
        .contains("live").contains("0.12 of 8.00").endsWith("3  -");
    assertThat(r.out()).containsPattern("w-left +left .*\n  left \\d+ s ago: reaped after 2600ms of silence");
    assertThat(r.out().lines().filter(l -> l.startsWith("w-silent"))).singleElement().asString().contains("silent");
    assertThat(r.out()).doesNotContain("w-old").contains("(1 worker that left more than 10 min before the latest report is not shown)");
  }

  /** Regression: a worker that had left still counted down its ejection; a silent one took "new work: yes". */
  @Test
  void aDepartedWorkerShowsOnlyWhatIsStillTrue() {
    Path db = dir.resolve("t.db");
    long now = System.currentTimeMillis();
    try (SqliteStore store = SqliteStore.open(db)) {
      store.saveWorkerStatuses(List.of(
          new WorkerStatus("1", "w-ejected", "0.10 of 8.00", true, now + 60_000, "failure rate 0.9", 2, 3, now, null),
          new WorkerStatus("2", "w-left", "0.10 of 8.00", true, now + 60_000, "failure rate 0.9", 2, 3, now - 5_000, "worker said goodbye"),
          new WorkerStatus("3", "w-silent", "0.40 of 8.00", true, 0, null, 0, 4, now - 60_000, null)));
    }
    Result r = status(db);
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out().lines().filter(l -> l.startsWith("w-ejected"))).singleElement().asString()
        .contains("0.10 of 8.00").containsPattern("ejected \\d+ s more: failure rate 0.9");
    assertThat(r.out().lines().filter(l -> l.startsWith("w-left"))).singleElement().asString()
        .containsPattern("w-left +left +- +- +-  ejected 2x, last: failure rate 0.9$").doesNotContain("s more");
    assertThat(r.out().lines().filter(l -> l.startsWith("w-silent"))).singleElement().asString()
        .containsPattern("w-silent +silent +- +- +-  -$").doesNotContain("yes");
    assertThat(r.out()).contains("  no report for 60 s: its coordinator is gone");
  }

  @Test
  void aWorkerPlaceFilledByANewProcessAfterARestartIsListedOnceNotTwice() {
    Path db = dir.resolve("t.db");
    long now = System.currentTimeMillis();
    String settled = "its coordinator stopped without a word (killed?) at most 1 s after its last report";
    try (SqliteStore store = SqliteStore.open(db)) {
      store.saveWorkerStatuses(List.of(
          new WorkerStatus("old-1", "local-1", "0.10 of 8.00", true, 0, null, 0, 0, now - 20_000, settled),
          new WorkerStatus("old-2", "local-2", "0.10 of 8.00", true, 0, null, 0, 0, now - 20_000, settled),
          new WorkerStatus("new-1", "local-1", "0.05 of 8.00", true, 0, null, 0, 2, now, null),
          new WorkerStatus("new-2", "local-2", "0.07 of 8.00", true, 0, null, 0, 2, now, null),
          new WorkerStatus("gone-3", "local-3", "0.07 of 8.00", true, 0, null, 0, 0, now - 30_000, "closed"),
          new WorkerStatus("gone-3b", "local-3", "0.07 of 8.00", true, 0, null, 0, 0, now - 10_000, "worker said goodbye")));
    }
    Result r = status(db);
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out().lines().filter(l -> l.startsWith("local-1 "))).singleElement().asString().contains("live");
    assertThat(r.out().lines().filter(l -> l.startsWith("local-2 "))).singleElement().asString().contains("live");
    assertThat(r.out().lines().filter(l -> l.startsWith("local-3 "))).as("the latest to leave").singleElement().asString().contains("left");
    assertThat(r.out()).contains("left 10 s ago: worker said goodbye").doesNotContain("left 30 s ago");
    assertThat(r.out().lines().filter(l -> l.equals("  and 1 earlier process under this name, left"))).hasSize(3);
  }

  /** A run of one attempt per case whose two cases, a and b, were leased and lost: both out of attempts. */
  private static long twoCasesOutOfAttempts(SqliteStore store, long now) {
    long runId = store.createRun(new RunSpec("/data/c.jsonl", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 1),
        List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}"), new CaseRecord(1, "b", "{\"id\":\"b\"}")));
    store.apply(StoreBatch.builder(now, List.of(runId), RedeliveryPolicy.defaults()).lease(new LeaseRequest("w", 2, now + 30_000)).build());
    assertThat(store.releaseLeases(runId, now, RedeliveryPolicy.defaults())).as("both out of their one attempt").isEqualTo(2);
    return runId;
  }

  @Test
  void runCountersUseTheSummarysNamesAndCounts() {
    Path db = dir.resolve("t.db");
    long now = System.currentTimeMillis();
    try (SqliteStore store = SqliteStore.open(db)) {
      twoCasesOutOfAttempts(store, now);
    }
    Result r = status(db);
    assertThat(r.exit()).as(r.err()).isZero();
    String header = r.out().lines().filter(l -> l.startsWith("run ")).findFirst().orElseThrow();
    assertThat(header.split(" +")).containsSubsequence("passed", "failed", "errored", "jobsFailed").doesNotContain("gave-up");
    String row = r.out().lines().filter(l -> l.startsWith("1 ")).findFirst().orElseThrow();
    assertThat(row.split(" +")).as("errored counts the cases out of attempts, as summary.json does")
        .startsWith("1", "finished", "2", "0", "0", "2", "2");
  }

  /** Each case that did not pass is named once: a case out of attempts is an error, and was listed twice. */
  @Test
  void theCasesThatDidNotPassAreEachNamedOnceOutOfAttemptsAmongTheErrors() {
    Path db = dir.resolve("t.db");
    long now = System.currentTimeMillis();
    try (SqliteStore store = SqliteStore.open(db)) {
      long runId = twoCasesOutOfAttempts(store, now);
      assertThat(SummaryTable.notPassed(store, runId)).extracting(SummaryTable.NotPassed::caseId).containsExactly("a", "b");
    }
  }

  /** Regression: a run paused by fail fast (or a cap) showed "running" here, and "paused" in the API and tally runs. */
  @Test
  void aPausedRunIsShownPausedAsEverywhereElse() {
    Path db = dir.resolve("t.db");
    long now = System.currentTimeMillis();
    try (SqliteStore store = SqliteStore.open(db)) {
      long runId = store.createRun(new RunSpec("/data/c.jsonl", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 1),
          List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}")));
      store.apply(StoreBatch.builder(now, List.of(runId), RedeliveryPolicy.defaults()).pause(runId, "fail fast: 3 errors alike").build());
      assertThat(store.run(runId).orElseThrow().shownState()).isEqualTo(dev.tally.core.store.RunView.PAUSED);
    }
    Result r = status(db);
    assertThat(r.exit()).as(r.err()).isZero();
    String row = r.out().lines().filter(l -> l.startsWith("1 ")).findFirst().orElseThrow();
    assertThat(row.split(" +")).startsWith("1", "paused");
  }

  @Test
  void aSubmittedRunShowsItsNameAndTheStoresLeaderIsSaid() throws Exception {
    Path db = dir.resolve("t.db");
    long far = System.currentTimeMillis() + 3_600_000;
    try (SqliteStore store = SqliteStore.open(db)) {
      store.createRun(new dev.tally.core.store.NewRun(new RunSpec("upload", new EvaluatorSpec("noop", Map.of(),
          Duration.ofMinutes(1)), 1), "nightly"), dev.tally.core.cases.CaseSource.of(
          List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}")), "the cases"), null);
      assertThat(store.swapLeader(dev.tally.core.lead.LeaderRow.NONE,
          new dev.tally.core.lead.LeaderRow(1, "s1", "workers=127.0.0.1:7070 api=http://127.0.0.1:8080", far))).isTrue();
    }
    Result r = status(db);
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out().lines().filter(l -> l.startsWith("1 "))).singleElement().asString().endsWith("nightly");
    assertThat(r.out()).containsPattern("leader: epoch 1, at workers=127\\.0\\.0\\.1:7070 api=http://127\\.0\\.0\\.1:8080;"
        + " lease renewed, \\d+ ms left");
  }

  @Test
  void neverCreatesOrMigratesAStore() throws Exception {
    Path missing = dir.resolve("missing.db");
    Result r = status(missing);
    assertThat(r.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(r.err()).contains("no store at " + missing);
    assertThat(missing).doesNotExist();

    Path empty = dir.resolve("empty.db");
    Files.createFile(empty); // what a coordinator that just started creating its store leaves for an instant
    r = status(empty);
    assertThat(r.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(r.err()).contains("is not a usable Tally store").contains("is missing");
    assertThat(Files.size(empty)).isZero();
  }
}

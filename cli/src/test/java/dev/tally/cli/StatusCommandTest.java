package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.store.WorkerStatus;
import dev.tally.store.SqliteStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
    assertThat(r.out()).doesNotContain("w-old").contains("(1 workers that left more than 10 min before the latest report are not shown)");
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

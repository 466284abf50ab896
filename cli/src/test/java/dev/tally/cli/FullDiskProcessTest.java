package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store on a disk that fills up mid-run, for real: a 1 MiB tmpfs, mounted without root privileges in a
 * user and mount namespace of its own ({@code unshare -rm}, util-linux), where three {@code tally run}s of
 * one dataset run one after the other. The first fills the disk and stops with one line that names the
 * cause and how to go on; the second, on the still-full disk, says the same kind of line; then the disk
 * is grown ({@code mount -o remount,size=64m}) and the third finishes the run. Nothing is lost: every case
 * is recorded exactly once. The namespace (and its tmpfs) ends with the script, which copies the store
 * out for the checks.
 */
class FullDiskProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Cases enough that the disk fills long before the run ends: a few dozen fill 1 MiB of write-ahead log, and a few hundred are a few seconds of work. */
  private static final int CASES = 600;

  @TempDir Path dir;

  @Test
  void aFullDiskStopsTheRunWithOneLineAndLosesNothing() throws Exception {
    assumeThat(namespacesWork())
        .as("needs unshare -rm (util-linux) with user namespaces, to mount a small tmpfs without root").isTrue();
    Path disk = Files.createDirectories(dir.resolve("disk"));
    Path saved = Files.createDirectories(dir.resolve("saved"));
    Path dataset = TallyProcess.sleepDataset(dir.resolve("cases.jsonl"), CASES, "c", 11);
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    String tally = java + " -Xmx512m -XX:+UseSerialGC -cp \"$CP\" " + Main.class.getName() + " run \"$DATASET\" --db \"$DISK/t.db\""
        + " --workers=1 --slots=4 --evaluator=sleep --out \"$OUT/results.jsonl\" --summary \"$OUT/summary.json\" --no-progress";
    String script = String.join("\n",
        "mount -t tmpfs -o size=1m tally-full-disk \"$DISK\" || exit 90",
        tally + " > \"$OUT/run-1.log\" 2>&1; echo $? > \"$OUT/exit-1\"",
        tally + " > \"$OUT/run-2.log\" 2>&1; echo $? > \"$OUT/exit-2\"",
        "mount -o remount,size=64m \"$DISK\" || exit 91",
        tally + " > \"$OUT/run-3.log\" 2>&1; echo $? > \"$OUT/exit-3\"",
        "for f in t.db t.db-wal t.db-shm; do if [ -f \"$DISK/$f\" ]; then cp \"$DISK/$f\" \"$SAVED/\" || exit 92; fi; done");
    ProcessBuilder pb = new ProcessBuilder("unshare", "-rm", "sh", "-c", script).directory(dir.toFile())
        .redirectErrorStream(true).redirectOutput(dir.resolve("namespace.log").toFile());
    Map<String, String> env = pb.environment();
    env.put("CP", System.getProperty("java.class.path"));
    env.put("DATASET", dataset.toString());
    env.put("DISK", disk.toString());
    env.put("OUT", dir.toString());
    env.put("SAVED", saved.toString());
    Process p = pb.start();
    if (!p.waitFor(300, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new AssertionError("the three runs did not end in 300 s; " + logs());
    }
    assertThat(p.exitValue()).as("the namespace script; %s", logs()).isZero();

    // 1: the disk fills mid-run; one line says so, and how to go on.
    String run1 = read("run-1.log");
    assertThat(read("exit-1").strip()).as(run1).isEqualTo("1");
    assertThat(tallyLines(run1)).as(run1).anySatisfy(l -> assertThat(l)
        .contains("stopped: the store " + disk.resolve("t.db") + " failed: database or disk is full")
        .contains("Nothing recorded is lost; once there is room on its disk, the same tally run command"));
    assertThat(run1).as("no stack trace").doesNotContain("\tat ");

    // 2: the disk is still full: the same kind of line, not a stack trace.
    String run2 = read("run-2.log");
    assertThat(read("exit-2").strip()).as(run2).isEqualTo("1");
    assertThat(tallyLines(run2)).as(run2).anySatisfy(l -> assertThat(l).contains("failed: database or disk is full"));
    assertThat(run2).as("no stack trace").doesNotContain("\tat ").doesNotContain("Exception in thread");

    // 3: with room again, the same command finishes the run without running a recorded case again.
    String run3 = read("run-3.log");
    assertThat(read("exit-3").strip()).as(run3).isEqualTo("0");
    assertThat(run3).containsPattern("resuming run 1: [1-9]\\d* of " + CASES + " cases already ended");
    List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
    assertThat(results).hasSize(CASES);
    for (int i = 0; i < CASES; i++) {
      JsonNode row = JSON.readTree(results.get(i));
      assertThat(row.get("id").asText()).isEqualTo("c" + i);
      assertThat(row.get("verdict").asText()).isEqualTo("pass");
    }
    try (SqliteStore store = SqliteStore.openExisting(saved.resolve("t.db"))) {
      assertThat(store.runs()).as("resumed, never started over").hasSize(1);
      RunView run = store.runs().get(0);
      assertThat(run.ended()).isTrue();
      assertThat(run.counters().recorded()).isEqualTo(CASES);
      assertThat(run.counters().duplicatesSuppressed()).isZero();
      Map<Long, Long> recordedPerJob = store.attempts(run.runId()).stream().filter(a -> a.ending().equals("recorded"))
          .collect(Collectors.groupingBy(AttemptView::jobId, Collectors.counting()));
      assertThat(recordedPerJob).hasSize(CASES).allSatisfy((job, n) -> assertThat(n).isEqualTo(1));
    }
  }

  /** Whether this machine lets an unprivileged process mount a tmpfs in namespaces of its own. */
  private boolean namespacesWork() throws InterruptedException {
    try {
      Path probe = Files.createDirectories(dir.resolve("probe"));
      Process p = new ProcessBuilder("unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tally-probe \"$0\"", probe.toString())
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException e) {
      return false; // no unshare
    }
  }

  /** The lines the tally command itself printed (its logs carry a time first). */
  private static List<String> tallyLines(String output) {
    return output.lines().filter(l -> l.startsWith("tally: ")).toList();
  }

  private String read(String name) throws IOException {
    Path f = dir.resolve(name);
    return Files.exists(f) ? Files.readString(f) : "(no " + name + ")";
  }

  private String logs() throws IOException {
    StringBuilder sb = new StringBuilder();
    for (String name : List.of("namespace.log", "run-1.log", "run-2.log", "run-3.log")) {
      sb.append("\n---- ").append(name).append(":\n").append(read(name));
    }
    return sb.toString();
  }
}

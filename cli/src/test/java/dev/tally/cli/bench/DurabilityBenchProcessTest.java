package dev.tally.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.cli.Main;
import dev.tally.cli.TallyProcess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code --durability} from the command line to the disk: {@code tally bench --count-fsyncs} as a real
 * process counts the coordinator's fsync and fdatasync calls with strace, and they follow the durability.
 * At {@code full} SQLite fsyncs the WAL at every commit, so there are at least as many fsyncs as commits;
 * at {@code relaxed} it fsyncs only at checkpoints, so far fewer.
 */
class DurabilityBenchProcessTest {
  /** Two JVMs start and 1,100 evals run; minutes for a loaded machine. */
  private static final long BENCH_SECONDS = 240;

  /** Fewer commits than this and the two durabilities' counts are too close to tell apart. */
  private static final long MIN_COMMITS = 20;

  private static final Pattern FIGURES = Pattern.compile(
      "(\\d+) evals in \\d+ ms, (\\d+) store commits\\n(?s).*?([0-9.]+) fsyncs/eval \\(measured: strace counted (\\d+) fsync");

  @TempDir Path dir;

  /** The measured run's commits and fsyncs, as the bench printed them. */
  private record Counted(long commits, long fsyncs, String output) {}

  private Counted bench(String durability, int repeat) throws Exception {
    // One slot and no prefetch beyond it: one eval per round trip, so each commit carries few evals.
    List<String> args = List.of("bench", "--workers=1", "--slots=1", "--prefetch=0", "--cases=1000", "--count-fsyncs",
        "--repeat=" + repeat, "--durability=" + durability, "--db=" + Files.createDirectories(dir.resolve(durability)).resolve("bench.db"));
    try (TallyProcess bench = TallyProcess.start(dir, durability + ".log", args)) {
      int exit = bench.waitFor(BENCH_SECONDS);
      String output = bench.output();
      assertThat(exit).as(output).isEqualTo(Main.EXIT_PASSED);
      assertThat(output).contains("--durability " + durability);
      if (repeat == 1) {
        assertThat(output).contains("recorded 1000 of 1000 (duplicates suppressed 0").doesNotContain("measured runs:");
      } else {
        assertThat(output).contains("measured runs: " + repeat + " of 1000 cases each").contains("(median of " + repeat + " runs)");
        for (int r = 1; r <= repeat; r++) {
          assertThat(output).contains("recorded 1000 of 1000 in run " + r + " (duplicates suppressed 0");
        }
      }
      Matcher m = FIGURES.matcher(output);
      assertThat(m.find()).as(output).isTrue();
      return new Counted(Long.parseLong(m.group(2)), Long.parseLong(m.group(4)), output);
    }
  }

  @Test
  void fullFsyncsAtEveryCommitAndRelaxedOnlyAtCheckpoints() throws Exception {
    Assumptions.assumeTrue(FsyncCounter.available(), "strace is not installed: fsyncs cannot be counted here");
    Counted full = bench("full", 2); // two measured runs: the median's figures are quoted, and each run is checked
    assertThat(full.output()).contains("store: SQLite WAL synchronous=FULL");
    assertThat(full.commits()).as(full.output()).isGreaterThanOrEqualTo(MIN_COMMITS);
    assertThat(full.fsyncs()).as("one WAL fsync per commit at least: %s", full.output()).isGreaterThanOrEqualTo(full.commits());

    Counted relaxed = bench("relaxed", 1);
    assertThat(relaxed.output()).contains("store: SQLite WAL synchronous=NORMAL");
    assertThat(relaxed.commits()).as(relaxed.output()).isGreaterThanOrEqualTo(MIN_COMMITS);
    assertThat(relaxed.fsyncs()).as("only checkpoints fsync: %s", relaxed.output()).isLessThan(relaxed.commits() / 2);
  }

  @Test
  void anUnknownDurabilityIsAUsageErrorNamingTheOptionAndTheLevels() {
    StringWriter err = new StringWriter();
    int exit = new CommandLine(new BenchCommand()).setErr(new PrintWriter(err)).execute("--durability=sometimes");
    assertThat(exit).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--durability").contains("unknown durability 'sometimes'").contains("full, relaxed");
  }

  @Test
  void aRepeatOutsideItsRangeIsAUsageErrorNamingTheOptionAndTheRange() {
    for (String repeat : List.of("0", Integer.toString(BenchCommand.MAX_REPEAT + 1))) {
      StringWriter err = new StringWriter();
      int exit = new CommandLine(new BenchCommand()).setErr(new PrintWriter(err)).execute("--repeat=" + repeat);
      assertThat(exit).isEqualTo(Main.EXIT_USAGE);
      assertThat(err.toString()).contains("--repeat must be from 1 to " + BenchCommand.MAX_REPEAT + ", got " + repeat);
    }
  }

  @Test
  void aSummaryOfStraceIsReadForBothCallsWithOrWithoutErrors() {
    List<String> summary = List.of(
        "% time     seconds  usecs/call     calls    errors syscall",
        "------ ----------- ----------- --------- --------- ----------------",
        " 65.02    0.000277          92        31           fdatasync",
        " 34.98    0.000149          29         5         1 fsync",
        "------ ----------- ----------- --------- --------- ----------------",
        "100.00    0.000426          53        36         1 total");
    assertThat(FsyncCounter.count(summary)).isEqualTo(36);
    assertThat(FsyncCounter.count(List.of())).as("no call at all: strace lists none").isZero();
  }
}

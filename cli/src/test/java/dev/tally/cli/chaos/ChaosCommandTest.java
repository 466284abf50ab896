package dev.tally.cli.chaos;

import dev.tally.cli.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.RunSpec;
import dev.tally.simulation.Checker;
import dev.tally.store.SqliteStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import dev.tally.store.PostgresFixture;
import dev.tally.store.StoreLocation;
import picocli.CommandLine;

/**
 * The CI chaos runs, with real coordinator and worker processes (the command itself runs in this JVM; its
 * children are real JVMs, killed with {@code kill -9} and frozen with {@code SIGSTOP}): {@code tally chaos
 * --workers 3 --duration 60s} with one coordinator (about 75 s), and {@code --coordinators 2} on
 * PostgreSQL and on SQLite, whose leader is killed and frozen (about 70 s each). Every fault kind is
 * injected (the first faults are one of each), the invariants hold, and no process is left behind.
 */
class ChaosCommandTest {
  private static final Pattern FAULTS = Pattern.compile("faults injected: (\\d+) \\(([^)]*)\\)");
  private static final Pattern TAKEOVERS = Pattern.compile("takeovers: (\\d+) \\(");
  private static final Pattern TAKEOVER_TIMES =
      Pattern.compile("time to a new leader after a fault: min ([\\d.]+) s, median ([\\d.]+) s, max ([\\d.]+) s");
  /**
   * The longest takeover the CI run accepts: three times the 5 s the issue promises with the defaults
   * (which the report measures against), for a loaded 2-core machine running two servers, two workers and
   * PostgreSQL beside the test.
   */
  private static final double TAKEOVER_LIMIT_SECONDS = 15;

  /** Where chaos puts its store by default: a SQLite file (the location's path does not matter to the fault kinds). */
  private static final StoreLocation SQLITE = new StoreLocation.SqliteFile(Path.of("chaos.db"));

  /** How many faults of {@code kind} the report's faults line says were injected. */
  private static int injected(String output, ChaosCommand.Kind kind) {
    Matcher m = FAULTS.matcher(output);
    assertThat(m.find()).as("a faults line; output:%n%s", output).isTrue();
    Matcher k = Pattern.compile(Pattern.quote(kind.label) + " (\\d+)").matcher(m.group(2));
    assertThat(k.find()).as("%s in %s", kind.label, m.group()).isTrue();
    return Integer.parseInt(k.group(1));
  }

  @TempDir Path dir;

  /** The store of {@code kind} ({@code sqlite}: chaos's own file; {@code postgresql}: a fresh database), its options added to {@code args}. */
  private StoreLocation storeOf(String kind, List<String> args) throws java.io.IOException {
    if (!kind.equals("postgresql")) {
      return SQLITE;
    }
    StoreLocation store = PostgresFixture.freshDatabase();
    args.add("--db=" + store.describe());
    String password = PostgresFixture.password();
    if (password != null) {
      args.add("--db-password-file=" + Files.writeString(dir.resolve("pg-password"), password));
    }
    return store;
  }

  /**
   * One coordinator ({@code tally run}) and three workers under kills, freezes and coordinator restarts; on
   * PostgreSQL the database's network is cut and stalled too ({@link StoreRelay}).
   */
  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"sqlite", "postgresql"})
  @Timeout(value = 240, unit = TimeUnit.SECONDS)
  void sixtySecondsOfKillsFreezesAndCoordinatorRestartsViolateNothing(String storeKind) throws Exception {
    List<String> args = new ArrayList<>(List.of("--workers", "3", "--duration", storeKind.equals("sqlite") ? "60s" : "40s",
        "--seed", "20261130", "--work-dir", dir.resolve("chaos").toString(), "--finish-timeout", "60s"));
    StoreLocation store = storeOf(storeKind, args);
    StringWriter text = new StringWriter();
    PrintWriter pw = new PrintWriter(text, true);
    CommandLine cl = new CommandLine(new ChaosCommand()).setOut(pw).setErr(pw);
    // Processes an earlier test class in this JVM may have left behind are not this run's to answer for.
    java.util.Set<Long> before = ProcessHandle.current().descendants().map(ProcessHandle::pid).collect(java.util.stream.Collectors.toSet());
    long started = System.nanoTime();
    int exit = cl.execute(args.toArray(String[]::new));
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
    String output = text.toString();
    System.out.println(output);

    assertThat(exit).as("exit code after %d s; output:%n%s%s", seconds, output, violationLogs(output)).isZero();
    assertThat(ChaosCommand.Kind.of(1, store)).as("each kind injected at least once")
        .allSatisfy(k -> assertThat(injected(output, k)).as(k.label).isPositive());
    assertThat(output).contains("\nviolations: 0\n").contains("runs: ").contains("(0 left running)");
    assertThat(output).containsPattern("cases: [1-9]\\d* \\(");
    assertThat(ProcessHandle.current().descendants().filter(h -> h.isAlive() && !before.contains(h.pid())).toList())
        .as("no process the chaos run started is left").isEmpty();
  }

  /**
   * Two {@code tally server}s on one store, the leader killed with {@code kill -9} and frozen with SIGSTOP
   * among the worker faults: each fault is followed by a takeover within the limit, the thawed leader steps
   * down, no deposed epoch writes, every case is recorded once, and nothing is left running.
   */
  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"postgresql", "sqlite"})
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void killedAndFrozenLeadersAreTakenOverAndViolateNothing(String storeKind) throws Exception {
    List<String> args = new ArrayList<>(List.of("--coordinators", "2", "--workers", "2", "--duration", "50s", "--seed", "20261202",
        "--work-dir", dir.resolve("chaos").toString(), "--finish-timeout", "90s"));
    StoreLocation store = storeOf(storeKind, args);
    StringWriter text = new StringWriter();
    PrintWriter pw = new PrintWriter(text, true);
    CommandLine cl = new CommandLine(new ChaosCommand()).setOut(pw).setErr(pw);
    java.util.Set<Long> before = ProcessHandle.current().descendants().map(ProcessHandle::pid).collect(java.util.stream.Collectors.toSet());
    long started = System.nanoTime();
    int exit = cl.execute(args.toArray(String[]::new));
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
    String output = text.toString();
    System.out.println(output);

    assertThat(exit).as("exit code after %d s; output:%n%s%s", seconds, output, violationLogs(output)).isZero();
    assertThat(output).contains("\nviolations: 0\n", "(0 left running)", "unexpected exits: 0").containsPattern("cases: [1-9]\\d* \\(");
    List<ChaosCommand.Kind> kinds = ChaosCommand.Kind.of(2, store);
    assertThat(kinds).as("each kind injected at least once")
        .allSatisfy(k -> assertThat(injected(output, k)).as(k.label).isPositive());
    int leaderFaults = kinds.stream().filter(k -> k.label.startsWith("leader")).mapToInt(k -> injected(output, k)).sum();
    Matcher takeovers = TAKEOVERS.matcher(output);
    assertThat(takeovers.find()).as("a takeovers line").isTrue();
    assertThat(Integer.parseInt(takeovers.group(1))).as("a takeover per leader fault, at least").isGreaterThanOrEqualTo(leaderFaults);
    Matcher times = TAKEOVER_TIMES.matcher(output);
    assertThat(times.find()).as("the takeover times").isTrue();
    assertThat(Double.parseDouble(times.group(3))).as("the longest takeover, s").isLessThan(TAKEOVER_LIMIT_SECONDS);
    if (kinds.contains(ChaosCommand.Kind.LEADER_FREEZE)) {
      assertThat(output).as("the frozen leader, continued after its takeover, stepped down").containsPattern("server-\\d \\(pid \\d+\\) stepped down");
    }
    assertThat(ProcessHandle.current().descendants().filter(h -> h.isAlive() && !before.contains(h.pid())).toList())
        .as("no process the chaos run started is left").isEmpty();
  }

  /** The checks are not vacuous: an unfinished run and a results file with a missing and a repeated line are caught. */
  @TempDir Path refusals;

  @Test
  void aStoreThatIsThereAlreadyIsRefusedBeforeAnyDirectoryIsMade() throws Exception {
    Path existing = Files.writeString(refusals.resolve("old.db"), "");
    Path workDir = refusals.resolve("work");
    StringWriter text = new StringWriter();
    PrintWriter pw = new PrintWriter(text, true);
    CommandLine cl = new CommandLine(new ChaosCommand()).setOut(pw).setErr(pw);

    int exit = cl.execute("--db=" + existing, "--work-dir=" + workDir, "--duration=5s");

    assertThat(exit).isEqualTo(Main.EXIT_USAGE);
    assertThat(text.toString()).contains("the store " + existing + " exists already");
    assertThat(workDir).doesNotExist();
    Files.createDirectories(workDir);
    Files.writeString(workDir.resolve("chaos.db"), "");
    assertThat(cl.execute("--work-dir=" + workDir, "--duration=5s")).isEqualTo(Main.EXIT_USAGE);
    try (java.util.stream.Stream<Path> files = Files.list(workDir)) {
      assertThat(files).containsExactly(workDir.resolve("chaos.db"));
    }
    assertThat(cl.execute("--db=" + refusals.resolve("nodir").resolve("x.db"), "--duration=5s")).isEqualTo(Main.EXIT_USAGE);
    assertThat(text.toString()).contains("does not exist (tally creates no directories");
    assertThat(refusals.resolve("nodir")).doesNotExist();
  }

  @Test
  void theCheckerReportsAnUnfinishedRunAndABadResultsFile() throws Exception {
    List<String> ids = List.of("a", "b", "c");
    Path results = dir.resolve("results.jsonl");
    Files.write(results, List.of("{\"id\":\"a\",\"verdict\":\"pass\"}", "{\"id\":\"a\",\"verdict\":\"pass\"}"));
    try (SqliteStore store = SqliteStore.open(dir.resolve("t.db"))) {
      long runId = store.createRun(new RunSpec(dir.resolve("cases.jsonl").toString(), new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 5),
          List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}"), new CaseRecord(1, "b", "{\"id\":\"b\"}"), new CaseRecord(2, "c", "{\"id\":\"c\"}")));
      assertThat(Checker.checkRun(store, runId, ids).violations())
          .anyMatch(v -> v.contains("did not finish"))
          .anyMatch(v -> v.contains("is not in a terminal state"));
      assertThat(ResultsFileCheck.check(store, runId, ids, results))
          .anyMatch(v -> v.contains("has 2 lines for 3 cases"))
          .anyMatch(v -> v.contains("appears again"));
      assertThat(Checker.checkRun(store, runId, List.of("a", "c", "b")).violations())
          .anyMatch(v -> v.contains("not the dataset's cases in dataset order"));
    }
  }

  /** A log the harness names in a violation ("see PATH"). */
  private static final Pattern VIOLATION_LOG = Pattern.compile("VIOLATION .*; see (\\S+\\.log)");
  /** How many of a log's last lines a failure shows. */
  private static final int LOG_TAIL_LINES = 400;

  /**
   * The last lines of every log a violation names (a stuck server's log ends with its thread dump), so
   * that a failure on a CI machine, whose temporary folder is gone, still says what happened.
   */
  private static String violationLogs(String output) {
    StringBuilder b = new StringBuilder();
    Matcher m = VIOLATION_LOG.matcher(output);
    while (m.find()) {
      Path log = Path.of(m.group(1));
      if (!Files.exists(log)) {
        continue;
      }
      List<String> lines;
      try {
        lines = Files.readAllLines(log, java.nio.charset.StandardCharsets.UTF_8);
      } catch (java.io.IOException | java.io.UncheckedIOException e) {
        b.append(String.format("%n---- %s cannot be read: %s%n", log, e));
        continue;
      }
      b.append(String.format("%n---- last %d of %d lines of %s%n", Math.min(LOG_TAIL_LINES, lines.size()), lines.size(), log));
      lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size()).forEach(l -> b.append(l).append('\n'));
    }
    return b.toString();
  }
}

package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.coordinator.CoordinatorLock;
import dev.tally.store.SqliteStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code tally run} end to end in this JVM (its worker processes are real JVMs). */
class RunCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int tally(String... args) {
    CommandLine cl = Main.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(args);
  }

  /** The results file's lines, parsed. */
  private static List<JsonNode> rows(Path results) throws java.io.IOException {
    List<JsonNode> rows = new ArrayList<>();
    for (String line : Files.readAllLines(results)) {
      rows.add(JSON.readTree(line));
    }
    return rows;
  }

  @Test
  void scorersJudgeEachAnswerEachInItsOwnColumnAndTheFirstDecides() throws Exception {
    Path dataset = dir.resolve("scored.jsonl");
    Files.write(dataset, List.of(
        "{\"id\":\"right\",\"reply\":\"4\",\"target\":\"4\"}",
        "{\"id\":\"close\",\"reply\":\"4.05\",\"target\":\"4\"}",
        "{\"id\":\"wrong\",\"reply\":\"five\",\"target\":\"5\"}",
        "{\"id\":\"untargeted\",\"reply\":\"x\"}"));
    int exit = tally("run", dataset.toString(), "--workers=1", "--slots=2", "--evaluator=exec", "--cmd=printf %s {reply}",
        "--scorer=numeric:abs=0.1", "--scorer=exact:name=strict", "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress");

    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    List<JsonNode> rows = rows(dir.resolve("r.jsonl"));
    assertThat(rows).extracting(r -> r.get("verdict").asText()).containsExactly("pass", "pass", "fail", "error");
    // The case no scorer could judge keeps the answer it was given, so that tally rescore can judge it again.
    assertThat(rows).extracting(r -> r.get("answer").asText()).containsExactly("4", "4.05", "five", "x");
    JsonNode close = rows.get(1).get("fields").get("scores");
    assertThat(close.get("numeric").get("passed").asBoolean()).isTrue();
    assertThat(close.get("strict").get("passed").asBoolean()).as("each scorer its own column").isFalse();
    assertThat(rows.get(3).get("output").asText()).startsWith("scorer numeric cannot judge this case");
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("accuracy").get("value").asDouble()).isEqualTo(0.5);
    assertThat(summary.get("meanScore").get("n").asLong()).as("the error has no score").isEqualTo(3);

    // A bad spec is refused before anything runs, naming the option and the known scorers.
    int bad = tally("run", dataset.toString(), "--evaluator=noop", "--scorer=exactly", "--db=" + dir.resolve("other.db"));
    assertThat(bad).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--scorer").contains("unknown scorer exactly").contains("exact, includes");
  }

  @Test
  void aRunWhoseFirstCasesAllErrAlikePausesSaysWhyAndGoesOnOnceFixed() throws Exception {
    Path dataset = dir.resolve("many.jsonl");
    List<String> lines = new java.util.ArrayList<>();
    for (int i = 0; i < 200; i++) {
      lines.add("{\"id\":\"c" + i + "\"}");
    }
    Files.write(dataset, lines);
    Path db = dir.resolve("broken.db");
    int exit = tally("run", dataset.toString(), "--workers=1", "--slots=2", "--evaluator=exec",
        "--cmd=no-such-command-7f3a {id}", "--fail-fast=5", "--db=" + db, "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress");
    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("paused").asText())
        .isEqualTo("fail fast: its first 5 cases all ended in error alike: command not found: no-such-command-7f3a");
    long recorded = summary.get("recorded").asLong();
    assertThat(recorded).as("stopped at the fifth, with what was in flight").isBetween(5L, 20L);
    assertThat(Files.readAllLines(dir.resolve("r.jsonl"))).hasSize((int) recorded);
    assertThat(err.toString()).contains("tally: run 1 paused: fail fast: its first 5 cases")
        .contains("Go on once the cause is fixed: tally resume 1 --db=" + db + " --out=" + dir.resolve("r.jsonl") + " --summary="
            + dir.resolve("s.json") + " --workers=1 --slots=2; then tally retry-errors 1 --db " + db);

  }

  @Test
  void theSummaryNamesTheCasesThatDidNotPassAndWhyInDatasetOrder() throws Exception {
    Path dataset = dir.resolve("mixed.jsonl");
    List<String> lines = new java.util.ArrayList<>();
    for (int i = 0; i < 15; i++) {
      // c3 and c7 fail, saying why on stderr; c11 is an evaluator error (no such command); the rest pass.
      String script = i == 3 || i == 7 ? "echo out; echo \\\"assert failed in case " + i + "\\\" >&2; exit 4"
          : i == 11 ? "no-such-command-4b2e" : "true";
      lines.add("{\"id\":\"c" + i + "\",\"script\":\"" + script + "\"}");
    }
    Files.write(dataset, lines);
    assertThat(tally("run", dataset.toString(), "--workers=0", "--in-process=2", "--evaluator=exec", "--cmd=sh -c {script}",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--no-progress", "--max-attempts=1"))
        .as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    String printed = out.toString();
    assertThat(printed).contains("not passed: 3 of 15 ended (below; every case in " + dir.resolve("r.jsonl") + ")");
    List<String> named = printed.lines().dropWhile(l -> !l.startsWith("not passed")).skip(1).toList();
    assertThat(named).hasSize(3);
    assertThat(named.get(0)).matches("  c3 +fail, exit 4: assert failed in case 3");
    assertThat(named.get(1)).matches("  c7 +fail, exit 4: assert failed in case 7");
    assertThat(named.get(2)).matches("  c11 +fail, exit 127: .*no-such-command-4b2e: not found");
    // An evaluator's error says its message; a case out of attempts, why.
    dev.tally.core.Outcome error = new dev.tally.core.Outcome(dev.tally.core.Verdict.ERROR, null,
        "command not found: nosuchcmd", 3, null, null, null, "");
    assertThat(SummaryTable.NotPassed.of(new dev.tally.core.store.JobView(1, 1, 0, "e", dev.tally.core.store.JobState.DONE, 1, 1, "w",
        error, null)).why()).isEqualTo("error: command not found: nosuchcmd");
    assertThat(SummaryTable.NotPassed.of(new dev.tally.core.store.JobView(2, 1, 1, "f", dev.tally.core.store.JobState.FAILED, 3, 3, "w",
        null, "lost 3 times: worker left")).why()).isEqualTo("out of attempts: lost 3 times: worker left");
    // The same case as the API reports it (tally wait): verdict error, with its failure reason; the reason was lost.
    assertThat(SummaryTable.why("error", null, null, null, "lost 3 times: worker left"))
        .isEqualTo("out of attempts: lost 3 times: worker left");
    // What a terminal shows: no escape sequence of a case's output reaches it, and a long line is cut.
    assertThat(SummaryTable.lastLine("first\n\u001b[31mred\u001b[0m \u0007done\n")).isEqualTo("?[31mred?[0m ?done");
    assertThat(SummaryTable.lastLine("x".repeat(500))).hasSize(SummaryTable.REASON_CHARS).endsWith("...");
    assertThat(SummaryTable.lastLine(" \n ")).isEmpty();
    // Cut between characters, never inside one; C1 controls and invisible format characters shown as '?'.
    assertThat(TerminalText.safe("a".repeat(96) + "\uD83D\uDE00\uD83D\uDE00\uD83D\uDE00\uD83D\uDE00\uD83D\uDE00", 100))
        .isEqualTo("a".repeat(96) + "\uD83D\uDE00...");
    assertThat(TerminalText.safe("\uD83D\uDE00ok", 3)).isEqualTo("\uD83D\uDE00ok");
    assertThat(TerminalText.safe("c1\u009bx bidi\u202eabc zw\u200b", 100)).isEqualTo("c1?x bidi?abc zw?");
    assertThat(TerminalText.safe("ls\u2028tag\uDB40\uDC41", 100)).isEqualTo("ls?tag?"); // a line separator, a tag character
  }

  @Test
  void theErrorStreamShowsNoHiddenCharacterOfWhatItQuotesButKeepsItsLines() {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    PrintWriter terminal = TerminalText.writer(bytes);
    // What a CSV cell held, quoted in an error: a title change and a colour; a tag character split across two
    // writes; a line feed and a tab that messages use.
    terminal.print("column \"n\": \"\u001b]0;PWN\u0007\u001b[31mRED\" is not an int\n\tnext");
    terminal.print("x\uDB40");
    terminal.print("\uDC41\u00e9\uD83D\uDE00\r");
    terminal.println();
    terminal.flush();
    assertThat(bytes.toString(java.nio.charset.Charset.defaultCharset()))
        .isEqualTo("column \"n\": \"?]0;PWN??[31mRED\" is not an int\n\tnextx?\u00e9\uD83D\uDE00?" + System.lineSeparator());
  }

  @Test
  void logLinesShowNoHiddenCharacterOfWhatTheyQuote() {
    ch.qos.logback.classic.LoggerContext context = new ch.qos.logback.classic.LoggerContext();
    ch.qos.logback.classic.Logger logger = context.getLogger("dev.tally.test");
    String logged = LogConfiguration.layout(context).doLayout(new ch.qos.logback.classic.spi.LoggingEvent(
        getClass().getName(), logger, ch.qos.logback.classic.Level.WARN, "run 1 paused: fail fast: {}", null,
        new Object[] {"\u001b]0;PWNED\u0007\u001b[31mRED\u202eevil\nnext"}));
    assertThat(logged).contains("run 1 paused: fail fast: ?]0;PWNED??[31mRED?evil\nnext").doesNotContain("\u001b")
        .doesNotContain("\u202e");
  }

  @Test
  void groupNamesFromCaseDataAreShownAsATerminalMayShowThem() throws Exception {
    StringWriter table = new StringWriter();
    SummaryTable.printGroups(new PrintWriter(table), JSON.readTree("{\"by\": \"c\\u001b[2J\", \"values\": ["
        + "{\"value\": \"x\\u001b[31mRED\\u001b]0;PWNED\\u0007\", \"n\": 1, \"accuracy\": null}]}"));
    assertThat(table.toString()).contains("by c?[2J").contains("x?[31mRED?]0;PWNED?").doesNotContain("\u001b").doesNotContain("\u0007");
  }

  /** A field no case has groups every case under (missing): the table says so instead of passing it off. */
  @Test
  void aGroupByFieldNoCaseHasIsSaid() throws Exception {
    StringWriter table = new StringWriter();
    SummaryTable.printGroups(new PrintWriter(table), JSON.readTree("{\"by\": \"lnag\", \"values\": ["
        + "{\"value\": \"(missing)\", \"n\": 2, \"accuracy\": null}]}"));
    assertThat(table.toString()).contains("(no case has lnag, as metadata.lnag or from the case's top: check the field's name)");
    StringWriter some = new StringWriter();
    SummaryTable.printGroups(new PrintWriter(some), JSON.readTree("{\"by\": \"lang\", \"values\": ["
        + "{\"value\": \"en\", \"n\": 1, \"accuracy\": null}, {\"value\": \"(missing)\", \"n\": 1, \"accuracy\": null}]}"));
    assertThat(some.toString()).doesNotContain("no case has");
  }

  @Test
  void aRunPausedByFailFastGoesOnWithTallyResumeOnceItsEnvironmentIsFixed() throws Exception {
    Path dataset = dir.resolve("many.jsonl");
    List<String> lines = new java.util.ArrayList<>();
    for (int i = 0; i < 60; i++) {
      lines.add("{\"id\":\"c" + i + "\"}");
    }
    Files.write(dataset, lines);
    Path db = dir.resolve("setup.db");
    Path setup = dir.resolve("setup-done");
    String cmd = "--cmd=sh -c 'if [ -e \"$1\" ]; then echo fine; else echo \"setup missing\"; "
        + "echo \"{\\\"verdict\\\": \\\"error\\\"}\"; fi' sh " + setup;
    assertThat(tally("run", dataset.toString(), "--workers=1", "--slots=2", "--evaluator=exec", cmd, "--fail-fast=4",
        "--db=" + db, "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--no-progress"))
        .as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("paused").asText()).isEqualTo("fail fast: its first 4 cases all ended in error alike: setup missing");
    long erred = summary.get("recorded").asLong();

    Files.writeString(setup, "done");
    assertThat(tally("resume", "1", "--db=" + db, "--workers=1", "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress")).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.has("paused")).isFalse();
    assertThat(summary.get("passed").asLong()).isEqualTo(60 - erred);
    assertThat(summary.get("errored").asLong()).isEqualTo(erred);
    assertThat(tally("retry-errors", "1", "--db=" + db, "--workers=1", "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress")).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    assertThat(JSON.readTree(dir.resolve("s.json").toFile()).get("passed").asLong()).isEqualTo(60);
  }

  @Test
  void epochsGivePassAtKInTheSummaryByTheUnbiasedEstimator() throws Exception {
    Path dataset = dir.resolve("epochs.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\",\"always\":\"\"}", "{\"id\":\"b\",\"always\":\"\"}",
        "{\"id\":\"c\",\"always\":\"yes\"}"));
    // a and b fail their first epoch and pass the others; c passes every epoch.
    int exit = tally("run", dataset.toString(), "--epochs=3", "--workers=1", "--slots=2", "--evaluator=exec",
        "--cmd=sh -c 'test \"$1\" != 1 || test -n \"$2\"' sh {epoch} {always}", "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress");
    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    JsonNode passAtK = JSON.readTree(dir.resolve("s.json").toFile()).get("passAtK");
    assertThat(passAtK.get("epochs").asInt()).isEqualTo(3);
    assertThat(passAtK.get("samples").asInt()).isEqualTo(3);
    // By hand: a and b have n=3, c=2; c has n=3, c=3. pass@1 = mean(2/3, 2/3, 1) = 7/9; pass@3 = 1 for all.
    JsonNode one = passAtK.get("values").get(0);
    assertThat(one.get("k").asInt()).isEqualTo(1);
    assertThat(one.get("estimate").get("value").asDouble()).isCloseTo(7.0 / 9, org.assertj.core.data.Offset.offset(1e-12));
    JsonNode three = passAtK.get("values").get(1);
    assertThat(three.get("k").asInt()).isEqualTo(3);
    assertThat(three.get("estimate").get("value").asDouble()).isEqualTo(1.0);
    assertThat(out.toString()).contains("pass@k over 3 samples of up to 3 epochs").contains("pass@1").contains("0.778")
        .contains("n=3 samples)").doesNotContain("scored"); // a mean over samples, not over scored cases
  }

  @Test
  void retryErrorsRunsOnlyTheErroredCasesAgainAndCountsEachOnce() throws Exception {
    Path dataset = dir.resolve("flaky.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\",\"ok\":\"1\"}", "{\"id\":\"b\",\"ok\":\"0\"}",
        "{\"id\":\"c\",\"ok\":\"1\"}"));
    Path flag = dir.resolve("fixed");
    Path runs = dir.resolve("runs.log"); // one line per execution: which cases ran
    String cmd = "--cmd=sh -c 'echo \"$1\" >> \"$3\"; if [ \"$2\" = 1 ] || [ -e \"$4\" ]; then echo fine; "
        + "else echo \"{\\\"verdict\\\": \\\"error\\\"}\"; fi' sh {id} {ok} " + runs + " " + flag;
    Path db = dir.resolve("flaky.db");
    int first = tally("run", dataset.toString(), "--workers=1", "--evaluator=exec", cmd, "--db=" + db,
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--no-progress");
    assertThat(first).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    assertThat(JSON.readTree(dir.resolve("s.json").toFile()).get("errored").asLong()).isEqualTo(1);

    Files.createFile(flag); // what made b error is fixed
    int retried = tally("retry-errors", "1", "--db=" + db, "--workers=1", "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress");
    assertThat(retried).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).contains("run 1: running 1 case again (1 errored, 0 out of attempts)");
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("passed").asLong()).isEqualTo(3);
    assertThat(summary.get("errored").asLong()).isZero();
    assertThat(summary.get("recorded").asLong()).as("each case counted once").isEqualTo(3);
    assertThat(Files.readAllLines(runs)).as("only the errored case ran again").containsExactlyInAnyOrder("a", "b", "c", "b");

    assertThat(tally("retry-errors", "1", "--db=" + db, "--workers=1", "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress")).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).contains("run 1 has no errored case");
    int epochs;
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      epochs = store.leaderEpochs().size();
    }
    assertThat(tally("retry-errors", "7", "--db=" + db)).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("there is no run 7");
    assertThat(tally("resume", "8", "--db=" + db)).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("there is no run 8");
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      assertThat(store.leaderEpochs()).as("a run that is not there is looked up before leading: no new epoch").hasSize(epochs);
    }
  }

  @Test
  void rescoreJudgesTheStoredAnswersAgainWithoutRunningTheCommandAndRewritesTheResults() throws Exception {
    Path dataset = dir.resolve("scored.jsonl");
    Files.write(dataset, List.of(
        "{\"id\":\"right\",\"reply\":\"4\",\"target\":\"4\"}",
        "{\"id\":\"close\",\"reply\":\"4.05\",\"target\":\"4\"}",
        "{\"id\":\"wrong\",\"reply\":\"five\",\"target\":\"5\"}",
        "{\"id\":\"untargeted\",\"reply\":\"x\"}"));
    Path ran = dir.resolve("ran.log"); // the command appends each case it runs
    Path db = dir.resolve("scored.db");
    Path results = dir.resolve("r.jsonl");
    Path summary = dir.resolve("s.json");
    int first = tally("run", dataset.toString(), "--workers=1", "--evaluator=exec", "--db=" + db,
        "--cmd=sh -c 'echo \"$1\" >> \"$2\"; printf %s \"$3\"' sh {id} " + ran + " {reply}", "--scorer=exact",
        "--out=" + results, "--summary=" + summary, "--no-progress");
    assertThat(first).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    assertThat(JSON.readTree(summary.toFile()).get("accuracy").get("value").asDouble()).as("only 4 is exactly 4").isEqualTo(0.25);
    assertThat(Files.readAllLines(ran)).hasSize(4);

    int rescored = tally("rescore", "1", "--db=" + db, "--scorer=numeric:abs=0.1", "--scorer=exact:name=strict",
        "--out=" + results, "--summary=" + summary, "--no-progress");
    assertThat(rescored).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    assertThat(Files.readAllLines(ran)).as("no case ran again").hasSize(4);
    assertThat(err.toString()).contains("run 1: judged 4 cases again with numeric:abs=0.1 exact:name=strict; 1 case changed verdict");
    JsonNode s = JSON.readTree(summary.toFile());
    assertThat(s.get("accuracy").get("value").asDouble()).as("4.05 is within 0.1 of 4").isEqualTo(0.5);
    assertThat(s.get("passed").asLong()).isEqualTo(2);
    assertThat(s.get("errored").asLong()).as("no target: still the case's error").isEqualTo(1);
    assertThat(s.get("recorded").asLong()).as("each case counted once").isEqualTo(4);
    assertThat(out.toString()).contains("accuracy");
    List<JsonNode> rows = rows(results);
    assertThat(rows).extracting(r -> r.get("verdict").asText()).containsExactly("pass", "pass", "fail", "error");
    JsonNode close = rows.get(1).get("fields").get("scores");
    assertThat(close.get("numeric").get("passed").asBoolean()).isTrue();
    assertThat(close.get("strict").get("passed").asBoolean()).isFalse();
    assertThat(close.has("exact")).as("the earlier scorer's column is gone with it").isFalse();
    assertThat(rows.get(3).get("output").asText()).startsWith("scorer numeric cannot judge this case").endsWith("\nx");
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      assertThat(dev.tally.core.score.Scorers.specsOf(store.run(1).orElseThrow().spec().evaluator().options()))
          .as("the run's spec names its scorers now").containsExactly("numeric:abs=0.1", "exact:name=strict");
    }

    // A bad spec, an unknown run and one that has not finished are refused, and nothing is written.
    String before = Files.readString(summary);
    assertThat(tally("rescore", "1", "--db=" + db, "--scorer=exactly", "--summary=" + summary)).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--scorer").contains("unknown scorer exactly");
    assertThat(tally("rescore", "7", "--db=" + db, "--scorer=exact")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("there is no run 7");
    long unfinished;
    try (SqliteStore store = SqliteStore.open(db)) {
      unfinished = store.createRun(new dev.tally.core.store.RunSpec("more.jsonl", new dev.tally.core.EvaluatorSpec("noop",
          java.util.Map.of(), java.time.Duration.ofSeconds(5)), 1), List.of(new dev.tally.core.CaseRecord(0, "q", "{\"id\":\"q\"}")));
    }
    assertThat(tally("rescore", Long.toString(unfinished), "--db=" + db, "--scorer=exact", "--summary=" + summary))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("run " + unfinished + " has not finished");
    assertThat(Files.readString(summary)).isEqualTo(before);
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      assertThat(store.run(1).orElseThrow().counters().passed()).isEqualTo(2);
      assertThat(store.run(unfinished).orElseThrow().spec().evaluator().options()).isEmpty();
    }
  }

  @Test
  void execRunWritesOneResultPerCaseInOrderAndExitsOneOnAFailure() throws Exception {
    Path dataset = dir.resolve("cases.jsonl");
    Files.write(dataset, List.of(
        "{\"id\":\"ok\",\"script\":\"echo fine\"}",
        "",
        "{\"id\":\"bad\",\"script\":\"echo broken >&2; exit 3\"}",
        "{\"id\":\"scored\",\"script\":\"echo '{\\\"verdict\\\": \\\"pass\\\", \\\"score\\\": 0.75}'\"}",
        "{\"id\":\"has space\",\"script\":\"printf %s \\\"$0\\\"\"}"));
    int exit = tally("run", dataset.toString(), "--workers=1", "--slots=2", "--evaluator=exec", "--cmd=sh -c {script} {id}",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--no-progress");

    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_FAILED);
    List<JsonNode> rows = rows(dir.resolve("r.jsonl"));
    assertThat(rows).extracting(r -> r.get("id").asText()).containsExactly("ok", "bad", "scored", "has space");
    assertThat(rows).extracting(r -> r.get("verdict").asText()).containsExactly("pass", "fail", "pass", "pass");
    // stderr is kept apart from stdout, with the exit code.
    assertThat(rows.get(1).get("output").asText()).isEmpty();
    assertThat(rows.get(1).get("stderr").asText()).isEqualTo("broken\n");
    assertThat(rows.get(1).get("exitCode").asInt()).isEqualTo(3);
    assertThat(rows.get(2).get("score").asDouble()).isEqualTo(0.75);
    assertThat(rows.get(0).get("score").isNull()).isTrue();
    assertThat(rows.get(3).get("output").asText()).isEqualTo("has space");
    assertThat(rows).allMatch(r -> r.get("attempts").asInt() == 1 && r.get("worker").asText().equals("local-1"));

    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("total").asInt()).isEqualTo(4);
    assertThat(summary.get("passed").asInt()).isEqualTo(3);
    assertThat(summary.get("failed").asInt()).isEqualTo(1);
    assertThat(summary.get("recorded").asInt()).isEqualTo(4);
    assertThat(summary.get("duplicatesSuppressed").asInt()).isZero();
    assertThat(out.toString()).contains("passed").contains("stale results fenced");

    assertThat(tally("status", "--db=" + dir.resolve("tally.db"))).isZero();
    assertThat(out.toString()).contains("finished").contains(dataset.toString())
        .contains("worker said goodbye: " + RunnerCommand.RUN_OVER).doesNotContain("drain");
    assertThat(Files.readString(dir.resolve("tally.db-logs").resolve("run-1").resolve("worker-1.log")))
        .as("the end of a run is not a signal to its workers")
        .contains("tally worker: " + RunnerCommand.RUN_OVER).doesNotContain("SIGTERM").doesNotContain("drain");
  }

  @Test
  void aPostgresPasswordFileForASqliteStoreIsRefusedBeforeAnythingIsCreated() throws Exception {
    Path dataset = dir.resolve("cases.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    Path db = dir.resolve("t.db");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--workers=1", "--no-progress", "--db=" + db,
        "--db-password-file=" + dir.resolve("pg-password"))).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--db-password-file is for a PostgreSQL --db; " + db + " is a SQLite file");
    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
      assertThat(files).as("no store, lock, log directory or results").containsExactly(dataset);
    }
  }

  /**
   * What a stopped or paused run says to type: the same store, files and fleet, absolute and quoted for a
   * shell. A bare {@code tally resume N --db X} wrote results.jsonl in the directory it was typed in,
   * over another run's, and ran another number of slots.
   */
  @Test
  void theResumeCommandARunSuggestsRepeatsItsStoreFilesAndFleetQuotedForAShell() {
    CommandLine cl = Main.commandLine();
    Path db = dir.resolve("it's here").resolve("t.db");
    cl.parseArgs("run", "cases.jsonl", "--db=" + db, "--out=r.jsonl", "--summary=s.json", "--csv=c.csv", "--workers=3",
        "--slots=1");
    RunCommand run = cl.getSubcommands().get("run").getCommand();

    String cwd = Path.of("").toAbsolutePath().toString();
    assertThat(run.resumeInvocation(4)).isEqualTo("tally resume 4 '--db=" + db.toString().replace("'", "'\\''") + "' --out=" + cwd
        + "/r.jsonl --summary=" + cwd + "/s.json --csv=" + cwd + "/c.csv --workers=3 --slots=1");
  }

  @Test
  void anUnfinishedRunIsResumedOnlyForTheSameCasesNotForAnEditedDataset() throws Exception {
    Path dataset = dir.resolve("cases.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\",\"v\":\"old\"}", "{\"id\":\"b\",\"v\":\"old\"}"));
    String[] run = {"run", dataset.toString(), "--evaluator=noop", "--in-process=1", "--workers=0", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json")};
    assertThat(tally(run)).isEqualTo(Main.EXIT_PASSED); // run 1
    Path db = dir.resolve("tally.db");
    try (SqliteStore store = SqliteStore.open(db)) { // run 2: as if a coordinator died right after making it
      store.createRun(dev.tally.core.store.NewRun.of(store.runs().get(0).spec()), Dataset.read(dataset).open(), null);
    }

    Files.write(dataset, List.of("{\"id\":\"a\",\"v\":\"NEW\"}", "{\"id\":\"b\",\"v\":\"old\"}"));
    assertThat(tally(run)).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).contains("changed since unfinished run 2 was made from it; starting a new run")
        .doesNotContain("resuming run 2");
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      assertThat(store.runs()).extracting(r -> r.runId() + ":" + r.ended()).containsExactly("1:true", "2:false", "3:true");
    }

    Files.write(dataset, List.of("{\"id\":\"a\",\"v\":\"old\"}", "{\"id\":\"b\",\"v\":\"old\"}"));
    assertThat(tally(run)).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).as("the original content again: its run is resumed").contains("resuming run 2");
  }

  @Test
  void anUnfinishedRunIsResumedWhateverTheDatasetIsCalled() throws Exception {
    Path dataset = dir.resolve("cases.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}"));
    Files.createDirectories(dir.resolve("sub"));
    String[] opts = {"--evaluator=noop", "--in-process=1", "--workers=0", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--db=" + dir.resolve("tally.db")};
    assertThat(tally(concat("run", dataset.toString(), opts))).isEqualTo(Main.EXIT_PASSED); // run 1
    try (SqliteStore store = SqliteStore.open(dir.resolve("tally.db"))) { // run 2: its coordinator died at once
      store.createRun(dev.tally.core.store.NewRun.of(store.runs().get(0).spec()), Dataset.read(dataset).open(), null);
    }
    assertThat(tally(concat("run", dir.resolve("sub/../cases.jsonl").toString(), opts))).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).as("./x and x are one dataset").contains("resuming run 2");
  }

  private static String[] concat(String command, String dataset, String[] options) {
    String[] all = new String[options.length + 2];
    all[0] = command;
    all[1] = dataset;
    System.arraycopy(options, 0, all, 2, options.length);
    return all;
  }

  @Test
  void aSecondCoordinatorOnTheSameStoreIsRefusedAndTouchesNothing() throws Exception {
    Path dataset = dir.resolve("cases.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    Path db = dir.resolve("tally.db");
    try (CoordinatorLock held = CoordinatorLock.tryAcquire(db)) { // a coordinator already running on it
      assertThat(held).isNotNull();
      assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--in-process=1", "--workers=0", "--no-progress"))
          .isEqualTo(Main.EXIT_USAGE);
      assertThat(err.toString()).contains("another coordinator (tally run or tally resume) is running on " + db
          + " (it holds " + db + "-lock); wait for it to finish or stop it first").doesNotContain("is working on");
      assertThat(db).doesNotExist();
    }
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--in-process=1", "--workers=0", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json")))
        .as("the lock is free once its holder is done; output:%n%s", err).isEqualTo(Main.EXIT_PASSED);
  }

  @Test
  void anOutputThatIsTheStoreTheDatasetOrAnotherOutputIsRefusedBeforeAnythingIsWritten() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    Path db = dir.resolve("t.db");
    String[] run = {"run", dataset.toString(), "--evaluator=noop", "--workers=0", "--in-process=1", "--no-progress", "--db=" + db};
    assertThat(tally(java.util.stream.Stream.concat(java.util.Arrays.stream(run), java.util.stream.Stream.of(
        "--out=" + dir.resolve("first.jsonl"), "--summary=" + dir.resolve("first.json"))).toArray(String[]::new)))
        .isEqualTo(Main.EXIT_PASSED); // a store with a run in it
    byte[] store = Files.readAllBytes(db);
    List<String> given = Files.readAllLines(dataset);
    Path sub = Files.createDirectories(dir.resolve("sub"));
    Path schema = Files.writeString(dir.resolve("schema.json"), "{\"type\": \"object\"}");
    Path token = Files.writeString(dir.resolve("worker.token"), "x".repeat(32) + "\n");
    record Case(List<String> options, String said) {}
    for (Case c : List.of(
        new Case(List.of("--html=" + db), "--html " + db + " is the store (--db " + db + "), which it would overwrite"),
        // The same file by another name: a relative step, and the store's write-ahead log.
        new Case(List.of("--summary=" + sub.resolve("../t.db")), "is the store (--db " + db + ")"),
        new Case(List.of("--csv=" + db + "-wal"), "is the store's wal file"),
        new Case(List.of("--out=" + dataset), "--out " + dataset + " is the dataset"),
        new Case(List.of("--out=" + dir.resolve("x.json"), "--summary=" + dir.resolve("x.json")),
            "--out " + dir.resolve("x.json") + " and --summary " + dir.resolve("x.json") + " are the same file"),
        new Case(List.of("--out=" + dir.resolve("r.jsonl"), "--csv=" + dir.resolve("r.jsonl")), "are the same file"),
        // Files other options read: a scorer's schema, a token.
        new Case(List.of("--scorer=json:schema-file=" + schema, "--out=" + schema), "is a scorer's file (--scorer ...=" + schema + ")"),
        new Case(List.of("--worker-token-file=" + token, "--summary=" + token), "is the worker token file (--worker-token-file)"))) {
      List<String> args = new ArrayList<>(List.of(run));
      args.addAll(c.options());
      if (c.options().stream().noneMatch(o -> o.startsWith("--out="))) {
        args.add("--out=" + dir.resolve("results.jsonl"));
      }
      if (c.options().stream().noneMatch(o -> o.startsWith("--summary="))) {
        args.add("--summary=" + dir.resolve("summary.json"));
      }
      err.getBuffer().setLength(0);
      assertThat(tally(args.toArray(String[]::new))).as("%s", c.options()).isEqualTo(Main.EXIT_USAGE);
      assertThat(err.toString()).as("%s", c.options()).contains(c.said());
    }
    // Through a link and then "..": the parent of the link's target, where the store is (breaker: removing
    // "link/.." as text first let --html overwrite the store).
    Path elsewhere = Files.createDirectories(dir.resolve("w"));
    Files.createSymbolicLink(elsewhere.resolve("l"), sub);
    err.getBuffer().setLength(0);
    assertThat(tally(java.util.stream.Stream.concat(java.util.Arrays.stream(run), java.util.stream.Stream.of(
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"),
        "--html=" + elsewhere.resolve("l").resolve("..").resolve("t.db"))).toArray(String[]::new))).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("is the store (--db " + db + ")");
    assertThat(Files.readAllBytes(db)).as("the store, untouched").isEqualTo(store);
    assertThat(Files.readAllLines(dataset)).as("the dataset, untouched").isEqualTo(given);
    assertThat(Files.readString(schema)).isEqualTo("{\"type\": \"object\"}");
    // Two streams into one sink overwrite nothing: allowed.
    if (Files.exists(Path.of("/dev/null"))) {
      assertThat(tally(java.util.stream.Stream.concat(java.util.Arrays.stream(run), java.util.stream.Stream.of(
          "--out=/dev/null", "--summary=/dev/null")).toArray(String[]::new))).isEqualTo(Main.EXIT_PASSED);
    }
    assertThat(dir.resolve("x.json")).doesNotExist();
    assertThat(dir.resolve("r.jsonl")).doesNotExist();
  }

  @Test
  void aResultsFileThatCannotBeWrittenIsNamedAndTheTableIsStillPrinted() throws Exception {
    Path full = Path.of("/dev/full"); // every write fails with ENOSPC, as on a full disk
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.exists(full), "Linux's /dev/full");
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}"));
    int exit = tally("run", dataset.toString(), "--evaluator=noop", "--workers=0", "--in-process=1", "--no-progress",
        "--db=" + dir.resolve("t.db"), "--out=" + full, "--summary=" + dir.resolve("s.json"));
    assertThat(exit).isEqualTo(Main.EXIT_FAILED);
    assertThat(err.toString()).contains("tally: run 1 is recorded in " + dir.resolve("t.db"))
        .contains("cannot write " + full + " (No space left on device)").contains("tally resume 1");
    assertThat(out.toString()).as("the table, from the store").contains("passed").contains("accuracy");

    // A report that cannot be written: what was written before it is said, the results and the summary too.
    err.getBuffer().setLength(0);
    int again = tally("run", dataset.toString(), "--evaluator=noop", "--workers=0", "--in-process=1", "--no-progress",
        "--db=" + dir.resolve("t.db"), "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--html=" + full);
    assertThat(again).isEqualTo(Main.EXIT_FAILED);
    assertThat(err.toString()).contains("cannot write " + full + " (No space left on device) (written: " + dir.resolve("r.jsonl")
        + ", " + dir.resolve("s.json") + ")");
  }

  @Test
  void anOutputInAMissingDirectoryIsRefusedByItsOptionAndNoDirectoryIsMade() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    Path typo = dir.resolve("typo").resolve("deeper");
    String[] good = {"--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--db=" + dir.resolve("t.db")};
    for (int i = 0; i < good.length; i++) {
      String[] args = good.clone();
      String option = args[i].substring(0, args[i].indexOf('='));
      args[i] = option + "=" + typo.resolve("file");
      List<String> all = new ArrayList<>(List.of("run", dataset.toString(), "--evaluator=noop", "--workers=0", "--in-process=1", "--no-progress"));
      all.addAll(List.of(args));
      assertThat(tally(all.toArray(String[]::new))).as("%s in a missing directory", option).isEqualTo(Main.EXIT_USAGE);
      assertThat(err.toString()).contains(option + " " + typo.resolve("file") + ": the directory " + typo + " does not exist");
    }
    assertThat(dir.resolve("typo")).doesNotExist();
    assertThat(dir.resolve("t.db")).doesNotExist();
    assertThat(dir.resolve("r.jsonl")).doesNotExist();

    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--workers=0", "--in-process=1", "--no-progress",
        "--out=" + dir, "--summary=" + dir.resolve("s.json"))).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--out " + dir + " is a directory");
  }

  @Test
  void aDuplicateIdStopsTheSubmissionWithFileAndLineAndWritesNothing() throws Exception {
    Path dataset = dir.resolve("dup.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}", "{\"id\":\"a\"}"));
    int exit = tally("run", dataset.toString(), "--evaluator=noop", "--no-progress");
    assertThat(exit).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":3").contains("duplicate id \"a\"").contains("line 1");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }

  @Test
  void aLineThatIsNotAnObjectOrHasABadIdIsRefusedWithItsLine() throws Exception {
    Path dataset = dir.resolve("bad.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "[1,2]"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":2").contains("expected a JSON object");

    // a case without an id gets one from its content; an id that is there must be a string
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":7}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":2").contains("\"id\" must be a non-empty string, got 7");

    Files.write(dataset, List.of("{\"id\":\"a\"} trailing"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":1").contains("not valid JSON");
    assertThat(dir.resolve("tally.db")).doesNotExist();
    Path surrogate = dir.resolve("surrogate.jsonl");
    Files.write(surrogate, List.of("{\"id\":\"fine\",\"emoji\":\"\\ud83d\\ude00\"}", "{\"id\":\"\\ud800\"}"));
    assertThat(tally("run", surrogate.toString(), "--evaluator=noop")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(surrogate + ":2: a string of the case holds an unpaired surrogate escape");
  }

  @Test
  void badBytesRepeatedKeysAndControlCharactersAreRefusedWithTheirLine() throws Exception {
    Path dataset = dir.resolve("bad.jsonl");
    Files.write(dataset, new byte[] {'{', '"', 'i', 'd', '"', ':', '"', 'a', '"', '}', '\n', '{', '"', 'i', 'd', '"', ':', '"', (byte) 0xC3, '"', '}', '\n'});
    assertThat(tally("run", dataset.toString(), "--evaluator=noop")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":2: not valid UTF-8");

    Files.write(dataset, List.of("{\"id\":\"a\",\"id\":\"b\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":1").contains("Duplicate field 'id'");

    Files.write(dataset, List.of("{\"id\":\"a\\u0000b\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":1").contains("control character");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }

  @Test
  void aByteOrderMarkAndCrLfLineEndsAreAccepted() throws Exception {
    Path dataset = dir.resolve("bom.jsonl");
    Files.write(dataset, "\uFEFF{\"id\":\"a\"}\r\n{\"id\":\"b\"}\r\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertThat(tally("run", dataset.toString(), "--workers=0", "--in-process=1", "--evaluator=noop", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"))).as("stderr: %s", err).isZero();
    assertThat(Files.readAllLines(dir.resolve("r.jsonl"))).hasSize(2);
  }

  @Test
  void anAddressThatCannotBeBoundIsRefusedBeforeTheRunIsWritten() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    // --insecure: past the open-port rule (tested below), to the bind itself.
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--listen=192.0.2.1:7070", "--insecure"))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("cannot listen for workers on 192.0.2.1:7070");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }

  @Test
  void aWorkerPortOrAnApiPortThatAnotherProgramHoldsIsRefusedLeavingNothingBehind() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    try (java.net.ServerSocket held = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      String busy = "127.0.0.1:" + held.getLocalPort();
      assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--listen=" + busy, "--no-progress"))
          .as("stderr: %s", err).isEqualTo(Main.EXIT_USAGE);
      assertThat(err.toString()).contains("tally: cannot listen for workers on " + busy + ": Address already in use");
      err.getBuffer().setLength(0);
      assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--http=" + busy, "--workers=2", "--no-progress"))
          .as("stderr: %s", err).isEqualTo(Main.EXIT_USAGE);
      assertThat(err.toString()).contains("tally: cannot serve the HTTP API on " + busy + ": Address already in use");
    }
    int free;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      free = probe.getLocalPort();
    }
    // The API and the workers on one port: tally itself would hold it.
    err.getBuffer().setLength(0);
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--listen=127.0.0.1:" + free, "--http=127.0.0.1:" + free,
        "--no-progress")).as("stderr: %s", err).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("tally: cannot serve the HTTP API on 127.0.0.1:" + free
        + ": the coordinator's worker port is there too (127.0.0.1:" + free + ")");
    // A host that does not resolve: one line, not a stack trace.
    for (String option : List.of("--http=nosuchhost.invalid:" + free, "--listen=nosuchhost.invalid:" + free)) {
      err.getBuffer().setLength(0);
      assertThat(tally("run", dataset.toString(), "--evaluator=noop", option, "--insecure", "--no-progress"))
          .as("%s: stderr: %s", option, err).isEqualTo(Main.EXIT_USAGE);
      assertThat(err.toString()).as(option).contains("the host 'nosuchhost.invalid' cannot be resolved").doesNotContain("\tat ");
    }
    // No store, no lock, no workers' logs: nothing of a run that never started.
    try (java.util.stream.Stream<Path> left = Files.list(dir)) {
      assertThat(left.map(p -> p.getFileName().toString())).containsExactly("c.jsonl");
    }
  }

  @Test
  void aWorkerPortOffLoopbackWithoutATokenIsRefusedBeforeAnythingIsOpened() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--listen=0.0.0.0:0", "--workers=0", "--in-process=1"))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("tally: the worker port on 0.0.0.0:0, which is not a loopback address, would have no token",
        "--worker-token-file FILE (or TALLY_WORKER_TOKEN)", "--insecure");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }

  @Test
  void securityOptionsWithBadFilesAreUsageErrorsNamingTheOption() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    Path missing = dir.resolve("no-such-token");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--worker-token-file=" + missing)).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--worker-token-file: worker token file " + missing + " does not exist");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--tls-cert=" + missing)).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--tls-cert needs --tls-key");
    Path key = Files.writeString(dir.resolve("key.pem"), "not a key");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--tls-cert=" + missing, "--tls-key=" + key))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--tls-cert: certificate file " + missing + " does not exist");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }

  @Test
  void aFileThatIsNotAStoreIsReportedNotThrown() throws Exception {
    Path garbage = dir.resolve("garbage.db");
    Files.write(garbage, "this is not sqlite".repeat(100).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertThat(tally("status", "--db=" + garbage)).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("is not a usable Tally store");
  }

  @Test
  void aTemplateFieldMissingFromACaseIsRefusedBeforeAnythingRuns() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\",\"file\":\"x\"}", "{\"id\":\"b\"}"));
    assertThat(tally("run", dataset.toString(), "--cmd=cat {file}")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":2").contains("no field \"file\"");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }

  /** Regression: the command line had a placeholder pattern of its own and refused this with: case "a" has no field "HOME". */
  @Test
  void anEscapedBraceIsNoFieldAndReachesTheShellAsDocumented() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    int exit = tally("run", dataset.toString(), "--workers=1", "--slots=1", "--cmd=sh -c \"echo ${{HOME}}\"", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"));
    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    JsonNode row = JSON.readTree(Files.readAllLines(dir.resolve("r.jsonl")).get(0));
    assertThat(row.get("verdict").asText()).isEqualTo("pass");
    assertThat(row.get("output").asText().strip()).as("the worker's $HOME, expanded by sh").isEqualTo(System.getenv().getOrDefault("HOME", ""));
  }

  @Test
  void aTemplateTheWorkerCannotParseIsRefusedWithItsOwnMessage() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    assertThat(tally("run", dataset.toString(), "--cmd=''")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--cmd: exec cmd has no command in it");
    assertThat(dir.resolve("tally.db")).doesNotExist();
  }

  @Test
  void fieldsGoInAsTheWorkerInsertsThemObjectsAndNullAsJson() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\",\"v\":{\"x\":1}}", "{\"id\":\"b\",\"v\":null}"));
    assertThat(tally("run", dataset.toString(), "--workers=0", "--in-process=1", "--cmd=printf %s {v}", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"))).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    List<String> results = Files.readAllLines(dir.resolve("r.jsonl"));
    assertThat(JSON.readTree(results.get(0)).get("output").asText()).isEqualTo("{\"x\":1}");
    assertThat(JSON.readTree(results.get(1)).get("output").asText()).isEqualTo("null");
  }

  @Test
  void aResumedRunReportsItsWholeSpanBesideThisCoordinatorsPart() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}"));
    String[] run = {"run", dataset.toString(), "--evaluator=noop", "--in-process=1", "--workers=0", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json")};
    assertThat(tally(run)).isEqualTo(Main.EXIT_PASSED);
    Path db = dir.resolve("tally.db");
    java.time.Clock anHourAgo = java.time.Clock.offset(java.time.Clock.systemUTC(), java.time.Duration.ofHours(-1));
    try (SqliteStore store = SqliteStore.open(db, anHourAgo)) { // as if its coordinator died an hour ago
      store.createRun(dev.tally.core.store.NewRun.of(store.runs().get(0).spec()), Dataset.read(dataset).open(), null);
    }
    assertThat(tally(run)).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).contains("resuming run 2");
    JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
    assertThat(summary.get("runId").asLong()).isEqualTo(2);
    assertThat(summary.get("runWallMillis").asLong()).isGreaterThanOrEqualTo(3_600_000L);
    assertThat(summary.get("wallMillis").asLong()).isLessThan(600_000L);
    assertThat(out.toString()).containsPattern("run 2 finished in \\d+\\.\\d s on this coordinator, 36\\d\\d\\.\\d s since it was created");
  }

  @Test
  void resumingAFinishedRunWritesItsResultsWithoutStartingWorkers() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--in-process=1", "--workers=0", "--no-progress",
        "--out=" + dir.resolve("first.jsonl"), "--summary=" + dir.resolve("first.json"))).isEqualTo(Main.EXIT_PASSED);
    err.getBuffer().setLength(0);

    // As after a coordinator that died between the run's end and writing its results; local workers by default.
    assertThat(tally("resume", "1", "--db=" + dir.resolve("tally.db"), "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"))).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).contains("tally: run 1 has already finished; writing its results")
        .doesNotContain("cases;").doesNotContain("local worker").doesNotContain("remote workers may connect");
    assertThat(Files.readAllLines(dir.resolve("r.jsonl"))).hasSize(2);
    assertThat(dir.resolve("tally.db-logs").resolve("run-1").resolve("worker-1.log")).as("no worker was started").doesNotExist();
  }

  @Test
  void theRunSaysWhatWorkersAreReallyThere() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--in-process=1", "--workers=0", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"))).isEqualTo(Main.EXIT_PASSED);
    assertThat(err.toString()).contains("run 1: 1 case; 1 in-process slot; remote workers may connect to 127.0.0.1:")
        .doesNotContain("0 local workers");
    assertThat(dir.resolve("tally.db")).exists();
    assertThat(dir.resolve("tally.db-logs")).as("no worker process, no empty worker log directory").doesNotExist();

    RunCommand remoteOnly = new RunCommand();
    remoteOnly.workers = 0;
    assertThat(remoteOnly.fleet(2, new HostPort("0.0.0.0", 7070)))
        .isEqualTo("no local workers; waiting for remote workers (tally worker --coordinator 0.0.0.0:7070)");
    RunCommand mixed = new RunCommand();
    mixed.workers = 3;
    mixed.inProcessSlots = 2;
    assertThat(mixed.fleet(1, new HostPort("127.0.0.1", 7070)))
        .isEqualTo("3 local workers x 1 slot + 2 in-process slots; remote workers may connect to 127.0.0.1:7070");
  }

  @Test
  void badUsageExitsTwo() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=exec")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--cmd");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--heartbeat-interval=2s", "--detection-window=5s"))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("3");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--workers=0")).isEqualTo(Main.EXIT_USAGE);
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--detector=bogus")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("bogus");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--detector=phi", "--detection-window=3s")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--detector phi --detection-window 3s: a detection window is for the fixed or missed detector");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--detector=missed", "--heartbeat-interval=1s", "--detection-window=2s"))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--slots=100000")).isEqualTo(Main.EXIT_USAGE);
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--workers=1000")).isEqualTo(Main.EXIT_USAGE);
    assertThat(tally("run", dataset.toString(), "--evaluator=sleep", "--millis=-5")).isEqualTo(Main.EXIT_USAGE);
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--millis=5")).isEqualTo(Main.EXIT_USAGE);
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--case-timeout=0s")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).as("durations as people write them").contains("--case-timeout must be from 1ms to 365 days, got 0s")
        .doesNotContain("PT0S");
    // Shorter than the store's millisecond: refused as usage, not stored as 0 (a stack trace, the breaker's round).
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--case-timeout=PT0.0005S", "--db=" + dir.resolve("ct.db")))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--case-timeout must be from 1ms to 365 days, got PT0.0005S");
    assertThat(dir.resolve("ct.db")).doesNotExist();
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--detection-window=0s")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("the detection window must be positive, got 0ms").doesNotContain("PT0S");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--prefetch=sometimes")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--prefetch must be a whole number (0 or more) or none, got 'sometimes'");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--prefetch=-1")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("got '-1'");
    assertThat(tally("status", "--db=" + dir.resolve("missing.db"))).isEqualTo(Main.EXIT_USAGE);
  }

  @Test
  void withoutPrefetchEveryCaseIsRecordedOnce() throws Exception {
    Path dataset = dir.resolve("cases.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}", "{\"id\":\"c\"}", "{\"id\":\"d\"}"));
    int exit = tally("run", dataset.toString(), "--workers=2", "--slots=1", "--prefetch=none", "--evaluator=sleep",
        "--millis=50", "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"), "--no-progress");

    assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_PASSED);
    assertThat(rows(dir.resolve("r.jsonl"))).extracting(r -> r.get("id").asText()).containsExactly("a", "b", "c", "d");
  }

  @Test
  void serveIsOnlyForExecAndRefusesPlaceholdersBeforeAnythingRuns() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=exec", "--serve", "--cmd=python3 score.py {id}",
        "--db=" + dir.resolve("s.db"))).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--serve: exec --serve starts its command once for many cases")
        .contains("(it has {id})");
    assertThat(dir.resolve("s.db")).doesNotExist();
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--serve")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--serve is only for --evaluator exec");
  }

  @Test
  void theModelEvaluatorsFlagsAreCheckedBeforeAnythingRuns() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\",\"input\":\"What is 1 + 1?\"}"));
    assertThat(tally("run", dataset.toString(), "--evaluator=model", "--model=m")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--evaluator model needs --base-url");
    assertThat(tally("run", dataset.toString(), "--evaluator=model", "--base-url=http://127.0.0.1:9/v1", "--model=m",
        "--temperature=3")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--temperature must be from 0 to 2, got 3");
    assertThat(tally("run", dataset.toString(), "--evaluator=noop", "--model=m")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("--model is only for --evaluator model");
    assertThat(tally("run", dataset.toString(), "--evaluator=model", "--base-url=http://127.0.0.1:9/v1", "--model=m",
        "--prompt=Q: {question}", "--db=" + dir.resolve("m.db"))).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("case \"a\" has no field \"question\", which --prompt uses");
    assertThat(dir.resolve("m.db")).doesNotExist();
  }

  @Test
  void aFieldPathIntoACsvColumnOfJsonTextSaysHowToReadItAsJson() throws Exception {
    Path dataset = dir.resolve("c.csv");
    Files.write(dataset, List.of("id,meta", "a,\"{\"\"lang\"\": \"\"fr\"\"}\""));
    assertThat(tally("run", dataset.toString(), "--evaluator=exec", "--cmd=echo {meta.lang}", "--db=" + dir.resolve("j.db")))
        .isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains(dataset + ":2: case \"a\" has no field \"meta.lang\" (\"meta\" is a string of JSON text,"
        + " not an object or array: for a CSV column, give --csv-types meta:json), which --cmd uses");
    assertThat(dir.resolve("j.db")).doesNotExist();
    assertThat(tally("run", dataset.toString(), "--evaluator=exec", "--cmd=echo {meta.lang}", "--csv-types=meta:json",
        "--workers=0", "--in-process=1", "--db=" + dir.resolve("j.db"), "--out=" + dir.resolve("j.jsonl"),
        "--summary=" + dir.resolve("j.json"), "--no-progress")).isEqualTo(Main.EXIT_PASSED);
    assertThat(Files.readString(dir.resolve("j.jsonl"))).contains("\"output\":\"fr\\n\"");
  }

  @Test
  void anInProcessWorkerAloneRunsTheWholeDataset() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      lines.add("{\"id\":\"n" + i + "\"}");
    }
    Files.write(dataset, lines);
    assertThat(tally("run", dataset.toString(), "--workers=0", "--in-process=2", "--evaluator=noop", "--no-progress",
        "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"))).as("stderr: %s", err).isZero();
    List<String> results = Files.readAllLines(dir.resolve("r.jsonl"));
    assertThat(results).hasSize(50).allMatch(r -> r.contains("\"worker\":\"in-process\"") && r.contains("\"verdict\":\"pass\""));
  }

  @Test
  void storeKeepsEveryRunAcrossInvocations() throws Exception {
    Path dataset = dir.resolve("c.jsonl");
    Files.write(dataset, List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}"));
    for (int i = 0; i < 2; i++) {
      assertThat(tally("run", dataset.toString(), "--workers=1", "--slots=1", "--evaluator=noop", "--no-progress",
          "--out=" + dir.resolve("r.jsonl"), "--summary=" + dir.resolve("s.json"))).as("stderr: %s", err).isZero();
    }
    try (SqliteStore store = SqliteStore.open(dir.resolve("tally.db"))) {
      assertThat(store.runs()).hasSize(2).allMatch(r -> r.ended() && r.counters().passed() == 2);
    }
  }
}

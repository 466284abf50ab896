package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Ticker;
import dev.tally.core.Verdict;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExecEvaluatorTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(20);

  @TempDir Path tmp;

  private static Evaluation run(String cmd, String caseJson) {
    return run(cmd, caseJson, TIMEOUT);
  }

  private static Evaluation run(String cmd, String caseJson, Duration timeout) {
    return EvaluatorFactory.create("exec", Map.of("cmd", cmd))
        .evaluate(new EvalContext("c", caseJson, timeout, Ticker.system()));
  }

  private static Outcome outcome(Evaluation e) {
    assertThat(e).isInstanceOf(Evaluation.Finished.class);
    return ((Evaluation.Finished) e).outcome();
  }

  private static InfraFailure failure(Evaluation e) {
    assertThat(e).isInstanceOf(Evaluation.Failed.class);
    return ((Evaluation.Failed) e).failure();
  }

  @Test
  void exitZeroPassesAndAnyOtherExitFails() {
    Outcome pass = outcome(run("sh -c 'exit 0'", "{}"));
    Outcome fail = outcome(run("sh -c 'exit 3'", "{}"));

    assertThat(pass.verdict()).isEqualTo(Verdict.PASS);
    assertThat(pass.score()).isNull();
    assertThat(fail.verdict()).isEqualTo(Verdict.FAIL);
  }

  /** The JDK blames the first program it runs (setpriv) for a command line too long; the case is told what to do. */
  @Test
  void aCommandLineTooLongForTheSystemIsTheCasesErrorSaidInItsTerms() {
    Outcome o = outcome(run("printf %s {big}", "{\"big\": \"" + "x".repeat(200_000) + "\"}"));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).startsWith("cannot start printf: its command line is too long for the system (3 arguments,")
        .contains("the longest 200000").contains("pass large values on stdin").doesNotContain("setpriv");
  }

  @Test
  void aJsonLastLineOverridesTheVerdictAndGivesTheScore() {
    Outcome o = outcome(run("printf hello\\n%s\\n\\n {line}", "{\"line\": \"{\\\"verdict\\\": \\\"fail\\\", \\\"score\\\": 0.25}\"}"));
    assertThat(o.verdict()).isEqualTo(Verdict.FAIL); // exit 0, but the verdict line says fail
    assertThat(o.score()).isEqualTo(0.25);

    Outcome passOnFailure = outcome(run("sh -c 'echo \"{\\\"verdict\\\": \\\"pass\\\"}\"; exit 1'", "{}"));
    assertThat(passOnFailure.verdict()).isEqualTo(Verdict.PASS);

    Outcome scoreOnly = outcome(run("printf %s {line}", "{\"line\": \"{\\\"score\\\": 3}\"}"));
    assertThat(scoreOnly.verdict()).isEqualTo(Verdict.PASS);
    assertThat(scoreOnly.score()).isEqualTo(3.0);
  }

  @Test
  void aVerdictObjectLongerThanTheLineLimitIsAnErrorNotSilentlyIgnored() {
    // 70 KB of padding inside a fail verdict, then exit 0: ignoring the line would record a pass.
    String q = "chr(34)"; // a double quote, spelled so that the code needs none
    String code = "print('{' + " + q + " + 'verdict' + " + q + " + ': ' + " + q + " + 'fail' + " + q + " + ', ' + "
        + q + " + 'pad' + " + q + " + ': ' + " + q + " + 'x' * 70000 + " + q + " + '}')";
    Outcome o = outcome(run("python3 -c {code}", "{\"code\": \"" + code + "\"}"));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).startsWith("the last line of stdout starts like a verdict object but is longer than the 64 KiB");

    Outcome plain = outcome(run("python3 -c {code}", "{\"code\": \"print('y' * 70000)\"}"));
    assertThat(plain.verdict()).as("a long line that is no object is just output").isEqualTo(Verdict.PASS);
  }

  @Test
  void aJsonLineThatIsNotTheLastLineOrNotAVerdictChangesNothing() {
    Outcome notLast = outcome(run("printf %s\\ndone {line}", "{\"line\": \"{\\\"verdict\\\": \\\"fail\\\"}\"}"));
    assertThat(notLast.verdict()).isEqualTo(Verdict.PASS);
    Outcome noVerdictKeys = outcome(run("printf %s {line}", "{\"line\": \"{\\\"status\\\": \\\"fail\\\"}\"}"));
    assertThat(noVerdictKeys.verdict()).isEqualTo(Verdict.PASS);
    assertThat(noVerdictKeys.score()).isNull();
  }

  /** A verdict line is trusted only whole: a bad verdict or score makes the outcome error, quoting it. */
  @Test
  void aVerdictLineWithABadVerdictOrScoreIsAnErrorQuotingTheValue() {
    Outcome maybe = outcome(run("printf %s {line}", "{\"line\": \"{\\\"verdict\\\":\\\"maybe\\\",\\\"score\\\":\\\"NaN\\\"}\"}"));
    assertThat(maybe.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(maybe.score()).isNull();
    assertThat(maybe.outputTail())
        .contains("malformed verdict line")
        .contains("\"verdict\": \"maybe\" is not pass, fail or error")
        .contains("\"score\": \"NaN\" is not a finite number");

    // The typo "passed" is no verdict either (it used to be ignored, and the case passed).
    Outcome typo = outcome(run("printf %s {line}", "{\"line\": \"{\\\"verdict\\\": \\\"passed\\\", \\\"score\\\": 1}\"}"));
    assertThat(typo.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(typo.outputTail()).contains("\"passed\"");

    // Python's json.dumps writes NaN bare; read it, to reject it by name. A failing exit does not matter.
    Outcome bareNaN = outcome(run("sh -c 'echo \"{\\\"verdict\\\": \\\"pass\\\", \\\"score\\\": NaN}\"; exit 1'", "{}"));
    assertThat(bareNaN.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(bareNaN.outputTail()).contains("\"score\": NaN is not a finite number");
  }

  @Test
  void verdictLineParsing() {
    assertThat(ExecEvaluator.parseVerdictLine("{\"verdict\": \"FAIL\", \"score\": 0.5}"))
        .isEqualTo(new ExecEvaluator.VerdictLine(Verdict.FAIL, 0.5, null));
    assertThat(ExecEvaluator.parseVerdictLine("{\"score\": 2}")).isEqualTo(new ExecEvaluator.VerdictLine(null, 2.0, null));
    assertThat(ExecEvaluator.parseVerdictLine("{\"other\": 1}")).isNull();
    assertThat(ExecEvaluator.parseVerdictLine("{not json")).isNull();
    assertThat(ExecEvaluator.parseVerdictLine("[1]")).isNull();
    for (String bad :
        List.of(
            "{\"score\": Infinity}", "{\"score\": -1e999}", "{\"score\": null}", "{\"score\": \"0.5\"}",
            "{\"verdict\": 1}", "{\"verdict\": null}", "{\"verdict\": \"\"}", "{\"verdict\": \"pass\", \"score\": true}")) {
      assertThat(ExecEvaluator.parseVerdictLine(bad).problem()).as(bad).isNotNull();
    }
  }

  @Test
  void aPlaceholderWithSpacesStaysOneArgument() {
    assertThat(outcome(run("printf %s {id}", "{\"id\": \"a b\"}")).outputTail()).isEqualTo("a b");
    // Nor does it reach a shell: the metacharacters arrive as text.
    assertThat(outcome(run("printf [%s] {id}", "{\"id\": \"x; echo $HOME `id` | y\"}")).outputTail())
        .isEqualTo("[x; echo $HOME `id` | y]");
  }

  @Test
  void numbersAndBooleansAreInsertedAsTheirJsonText() {
    Outcome o = outcome(run("printf %s|%s|%s|%s {n} {b} {s} {i}", "{\"n\": 1.5, \"b\": true, \"s\": \"t\", \"i\": 42}"));
    assertThat(o.outputTail()).isEqualTo("1.5|true|t|42");
  }

  @Test
  void quotedTemplateArgumentsKeepTheirSpaces() {
    Outcome o = outcome(run("sh -c 'printf \"<%s>\" \"$@\"' sh {id} \"two words\"", "{\"id\": \"a b\"}"));
    assertThat(o.outputTail()).isEqualTo("<a b><two words>");
  }

  @Test
  void aMissingFieldIsAnErrorNamingTheField() {
    Outcome o = outcome(run("printf %s {question}", "{\"id\": \"1\"}"));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).contains("'question'");
  }

  @Test
  void aCommandThatIsNotFoundIsAnError() {
    Outcome o = outcome(run("tally-no-such-command-x9 {id}", "{\"id\": \"1\"}"));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).contains("command not found: tally-no-such-command-x9");
  }

  @Test
  void theCaseJsonArrivesOnStdinFollowedByANewline() {
    String json = "{\"id\": \"q1\", \"prompt\": \"2+2\"}";
    assertThat(outcome(run("cat", json)).outputTail()).isEqualTo(json + "\n");
  }

  @Test
  void pastTheTimeoutTheProcessTreeIsKilledAndATimeoutReported() throws Exception {
    Path pids = tmp.resolve("pids");
    long start = System.nanoTime();

    Evaluation e =
        run("sh -c 'sleep 30 & echo $$ $! > \"$1\"; wait' sh {pids}", "{\"pids\": \"" + pids + "\"}", Duration.ofMillis(700));

    assertThat(failure(e).kind()).isEqualTo(InfraFailure.Kind.TIMEOUT);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
    String[] both = Files.readString(pids).trim().split(" ");
    long shell = Long.parseLong(both[0]);
    long sleeper = Long.parseLong(both[1]); // a grandchild of the worker: killed as a descendant
    await().atMost(Duration.ofSeconds(5)).until(() -> Processes.gone(shell) && Processes.gone(sleeper));
  }

  @Test
  void aProcessKilledBySigkillWeDidNotSendIsReportedSignaled() {
    InfraFailure f = failure(run("sh -c 'kill -9 $$'", "{}"));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.SIGNALED);
    assertThat(f.detail()).contains("signal 9");
  }

  /** Exit values 129..192 look like signals to Java; a command may exit with them on purpose. */
  @Test
  void anExitValueAbove128IsTheCasesFailAndItsVerdictLineStillCounts() {
    for (int code : new int[] {129, 130, 134, 139, 143, 192}) {
      assertThat(outcome(run("sh -c 'exit " + code + "'", "{}")).verdict()).as("exit %d", code).isEqualTo(Verdict.FAIL);
    }
    assertThat(outcome(run("sh -c 'echo \"{\\\"verdict\\\": \\\"pass\\\"}\"; exit 130'", "{}")).verdict())
        .isEqualTo(Verdict.PASS);
    assertThat(outcome(run("sh -c 'kill -SEGV $$'", "{}")).verdict()).as("a crash is the case's fail").isEqualTo(Verdict.FAIL);
  }

  @Test
  void theOutputTailIsBoundedAndAChattyStderrDoesNotBlock() {
    Outcome o =
        outcome(run("sh -c 'yes o | head -c 1000000; yes e | head -c 1000000 >&2; echo end >&2'", "{}"));
    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    assertThat(o.outputTail()).hasSizeLessThanOrEqualTo(ExecEvaluator.OUTPUT_TAIL_LIMIT);
    assertThat(o.outputTail()).startsWith("o").endsWith("o\n").doesNotContain("e");
    assertThat(o.stderrTail()).as("stderr is kept apart, bounded alike").hasSizeLessThanOrEqualTo(ExecEvaluator.OUTPUT_TAIL_LIMIT)
        .startsWith("e").contains("e\ne\n").endsWith("end\n");
  }

  @Test
  void aVerdictLinesAnswerAndOtherFieldsAreKeptWithTheExitCodeAndStderrApart() {
    // The case's JSON comes in on stdin: cat makes it the verdict line.
    Outcome o = outcome(run("sh -c 'echo thinking; echo warn >&2; cat; exit 4'",
        "{\"verdict\": \"fail\", \"score\": 0.25, \"answer\": \"B\", \"metrics\": {\"f1\": 0.5}}"));
    assertThat(o.verdict()).isEqualTo(Verdict.FAIL);
    assertThat(o.score()).isEqualTo(0.25);
    assertThat(o.answer()).isEqualTo("B");
    assertThat(o.fieldsJson()).isEqualTo("{\"metrics\":{\"f1\":0.5}}");
    assertThat(o.exitCode()).isEqualTo(4);
    assertThat(o.stderrTail()).isEqualTo("warn\n");
    assertThat(o.outputTail()).startsWith("thinking\n").doesNotContain("warn");

    // An answer that is not a string is kept as its JSON text; a line with nothing else has no fields.
    Outcome n = outcome(run("cat", "{\"score\": 1, \"answer\": 42}"));
    assertThat(n.answer()).isEqualTo("42");
    assertThat(n.fieldsJson()).isNull();
    assertThat(n.exitCode()).isZero();
    // A line with only an answer is a verdict line too (for scorers); the exit code decides the verdict.
    Outcome answerOnly = outcome(run("sh -c 'echo thinking...; cat; exit 1'", "{\"answer\": \"B\", \"why\": \"x\"}"));
    assertThat(answerOnly.answer()).isEqualTo("B");
    assertThat(answerOnly.fieldsJson()).isEqualTo("{\"why\":\"x\"}");
    assertThat(answerOnly.verdict()).isEqualTo(Verdict.FAIL);
    // No verdict line: no answer, no fields, the exit code still kept.
    Outcome plain = outcome(run("sh -c 'echo hello; exit 1'", "{}"));
    assertThat(plain.answer()).isNull();
    assertThat(plain.fieldsJson()).isNull();
    assertThat(plain.exitCode()).isEqualTo(1);
  }

  @Test
  void cancellingKillsTheRunningProcess() throws Exception {
    Path pidFile = tmp.resolve("pid");
    EvalContext ctx =
        new EvalContext("c", "{\"pid\": \"" + pidFile + "\"}", Duration.ofSeconds(60), Ticker.system());
    Evaluator exec = EvaluatorFactory.create("exec", Map.of("cmd", "sh -c 'echo $$ > \"$1\"; exec sleep 60' sh {pid}"));
    AtomicReference<Evaluation> result = new AtomicReference<>();
    // A dedicated thread living through the case: under setpriv the case dies with the thread that forked it.
    Thread slot = new Thread(() -> result.set(exec.evaluate(ctx)));
    slot.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(pidFile) && Files.size(pidFile) > 0);
    long pid = Long.parseLong(Files.readString(pidFile).trim());

    ctx.cancel("abandoned");

    slot.join(10_000);
    assertThat(result.get()).isInstanceOf(Evaluation.Failed.class);
    assertThat(failure(result.get()).detail()).contains("cancelled");
    await().atMost(Duration.ofSeconds(5)).until(() -> Processes.gone(pid));
  }

  @Test
  void casesAreLaunchedUnderTheSupervisorWhenSetprivAndSetsidExist() {
    assumeThat(ExecEvaluator.USE_SUPERVISOR).isTrue();
    List<String> launched = ExecEvaluator.launchCommand(List.of("/bin/echo", "x"));
    assertThat(launched).startsWith("/usr/bin/setpriv", "--pdeathsig", "TERM", "--", "/bin/sh", "-c");
    assertThat(launched.subList(launched.size() - 3, launched.size())).containsExactly("tally-case", "/bin/echo", "x");
  }

  /** (b) of the supervisor: what a case leaves running in the background dies when the case ends. */
  @Test
  void aBackgroundProcessLeftBehindByACaseIsKilledWhenTheCaseEnds() throws Exception {
    assumeThat(ExecEvaluator.USE_SUPERVISOR).isTrue();
    Path pid = tmp.resolve("pid");
    // (sleep &) in a subshell: re-parented to init at once, so no descendant of the case's process.
    Outcome o = outcome(run("sh -c '(sleep 60 & echo $! > \"$1\"); echo started' sh {pid}", "{\"pid\": \"" + pid + "\"}"));

    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    assertThat(o.outputTail()).isEqualTo("started\n");
    long leftover = Long.parseLong(Files.readString(pid).trim());
    await().atMost(Duration.ofSeconds(2)).until(() -> Processes.gone(leftover));
  }

  /** (c): a timeout kills processes that left the tree but not the group. */
  @Test
  void pastTheTimeoutEvenAReparentedProcessOfTheCaseIsKilled() throws Exception {
    assumeThat(ExecEvaluator.USE_SUPERVISOR).isTrue();
    Path pid = tmp.resolve("pid");
    Evaluation e =
        run("sh -c '(sleep 60 & echo $! > \"$1\"); exec sleep 60' sh {pid}", "{\"pid\": \"" + pid + "\"}", Duration.ofMillis(700));

    assertThat(failure(e).kind()).isEqualTo(InfraFailure.Kind.TIMEOUT);
    long orphan = Long.parseLong(Files.readString(pid).trim());
    await().atMost(Duration.ofSeconds(5)).until(() -> Processes.gone(orphan));
  }

  /** The supervisor changes none of what the case sees: stdin, stdout/stderr, exit codes, signals. */
  @Test
  void underTheSupervisorStdinOutputExitCodesAndSignalsAreTheCommands() {
    String json = "{\"id\": \"q1\", \"big\": \"" + "x".repeat(200_000) + "\"}";
    Outcome echoed = outcome(run("sh -c 'wc -c; echo err >&2; exit 3'", json));
    assertThat(echoed.verdict()).isEqualTo(Verdict.FAIL);
    assertThat(echoed.outputTail()).isEqualTo((json.length() + 1) + "\n");
    assertThat(echoed.stderrTail()).isEqualTo("err\n");
    assertThat(echoed.exitCode()).isEqualTo(3);
    assertThat(outcome(run("sh -c 'exit 0'", "{}")).verdict()).isEqualTo(Verdict.PASS);
    assertThat(outcome(run("sh -c 'exit 200'", "{}")).verdict()).isEqualTo(Verdict.FAIL);
    assertThat(outcome(run("sh -c 'kill -TERM $$'", "{}")).verdict()).as("killed by SIGTERM: exit 143")
        .isEqualTo(Verdict.FAIL);
    // A shell ignores SIGINT and SIGQUIT in background jobs; the case must not inherit that.
    assumeThat(ExecEvaluator.launchCommand(List.of("/bin/true")).toString()).contains("--default-signal=INT,QUIT");
    Outcome interrupted = outcome(run("sh -c 'kill -INT $$; echo survived'", "{}"));
    assertThat(interrupted.verdict()).isEqualTo(Verdict.FAIL);
    assertThat(interrupted.outputTail()).doesNotContain("survived");
  }

  @Test
  void aLastLineWithTwoObjectsIsNotAVerdictLine() {
    assertThat(ExecEvaluator.parseVerdictLine("{\"verdict\":\"pass\"} {\"verdict\":\"fail\"}")).isNull();
    assertThat(ExecEvaluator.parseVerdictLine("{\"verdict\":\"pass\"}  ")).isNotNull();
  }

  // ---- case data in a shell script: quoted, never run --------------------------------------------

  @Test
  void anIdThatWouldRunAsCodeInAShellScriptPrintsAsTextAndCreatesNoFile() {
    Path victim = tmp.resolve("x");
    String id = "a; touch " + victim;
    Outcome o = outcome(run("sh -c 'echo {id}'", CaseJson.MAPPER.createObjectNode().put("id", id).toString()));
    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    assertThat(o.outputTail()).isEqualTo(id + "\n");
    assertThat(victim).doesNotExist();
  }

  @Test
  void theRawFormRunsTheValueAsTheScriptSays() {
    Outcome o = outcome(run("sh -c 'echo start; {raw:cmd}'", "{\"cmd\": \"echo from-the-case\"}"));
    assertThat(o.outputTail()).isEqualTo("start\nfrom-the-case\n");
  }

  /** Whatever a value holds (quotes, backslashes, $, backquotes, line breaks), a shell sees it as one word of text. */
  @Property(tries = 60)
  void anyValueReachesTheShellAsExactlyOneWordOfText(@ForAll("awkwardValues") String value) {
    String caseJson = CaseJson.MAPPER.createObjectNode().put("v", value).toString();
    for (String shell : List.of("sh", "bash")) {
      if (ExecEvaluator.resolveExecutable(shell).isEmpty()) {
        continue;
      }
      Outcome o = outcome(run(shell + " -c 'printf \"[%s]\" {v} x{v}y; printf \"<%s>\" $#'", caseJson));
      assertThat(o.outputTail()).as("%s with %s", shell, value).isEqualTo("[" + value + "][x" + value + "y]<0>");
    }
  }

  @Provide
  Arbitrary<String> awkwardValues() {
    return Arbitraries.strings().withChars('a', ' ', '\'', '"', '\\', '$', '`', '\n', ';', '*', '(', ')', '|', '&', '#', '~', '!', 'é')
        .ofMaxLength(12);
  }
}

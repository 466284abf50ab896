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
  void aJsonLineThatIsNotTheLastLineOrNotAVerdictChangesNothing() {
    Outcome notLast = outcome(run("printf %s\\ndone {line}", "{\"line\": \"{\\\"verdict\\\": \\\"fail\\\"}\"}"));
    assertThat(notLast.verdict()).isEqualTo(Verdict.PASS);
    Outcome typo = outcome(run("printf %s {line}", "{\"line\": \"{\\\"verdict\\\": \\\"passed\\\", \\\"score\\\": 1}\"}"));
    assertThat(typo.verdict()).isEqualTo(Verdict.PASS);
    assertThat(typo.score()).isNull();
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
  void aProcessKilledByASignalWeDidNotSendIsReportedSignaled() {
    InfraFailure f = failure(run("sh -c 'kill -9 $$'", "{}"));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.SIGNALED);
    assertThat(f.detail()).contains("signal 9");
  }

  @Test
  void theOutputTailIsBoundedAndAChattyStderrDoesNotBlock() {
    Outcome o =
        outcome(run("sh -c 'yes o | head -c 1000000; yes e | head -c 1000000 >&2; echo end >&2'", "{}"));
    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    assertThat(o.outputTail()).hasSizeLessThanOrEqualTo(ExecEvaluator.OUTPUT_TAIL_LIMIT);
    assertThat(o.outputTail()).startsWith("o").contains("e\ne\n").endsWith("end\n");
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
  void casesAreLaunchedUnderSetprivPdeathsigWhenItExists() {
    assumeThat(Path.of("/usr/bin/setpriv")).isExecutable();
    assertThat(ExecEvaluator.launchCommand(List.of("/bin/echo", "x")))
        .containsExactly("/usr/bin/setpriv", "--pdeathsig", "KILL", "--", "/bin/echo", "x");
  }
}

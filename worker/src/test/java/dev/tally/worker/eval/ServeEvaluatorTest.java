package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Ticker;
import dev.tally.core.Verdict;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code exec --serve} with real processes: a Python scorer that loops over stdin, told by each case what to
 * do ({@code "do"}: print, exit, hang, answer garbage...). Each case's answer carries the scorer's pid, so
 * the tests see which process answered. Cases run on slots of their own (long-lived threads, as the
 * worker's), since a served process belongs to the thread that started it.
 */
class ServeEvaluatorTest {
  /** Generous: a loaded 2-core machine starts Python slowly. */
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private static final String SCORER = """
      import json, os, sys, time
      for line in sys.stdin:
          case = json.loads(line)
          do = case.get("do")
          if do == "print":
              print("thinking about " + case["id"], flush=True)
              print("a warning", file=sys.stderr, flush=True)
          elif do == "exit":
              sys.exit(3)
          elif do == "hang":
              open(case["mark"], "w").write(str(os.getpid()))
              time.sleep(600)
          elif do == "garbage":
              print("{this is not json", flush=True)
              continue
          elif do == "bad-verdict":
              print(json.dumps({"verdict": "maybe", "pid": os.getpid()}), flush=True)
              continue
          elif do == "twice":
              print(json.dumps({"verdict": "pass", "id": case["id"], "pid": os.getpid()}), flush=True)
          elif do == "close":
              os.close(1)
              time.sleep(600)
          print(json.dumps({"verdict": "fail" if do == "fail" else "pass", "id": case["id"], "answer": case["id"], "pid": os.getpid()}), flush=True)
      """;

  @TempDir Path tmp;
  private Path scorer;
  private final ExecutorService slot = slot("serve-test-slot-1");
  private final ExecutorService otherSlot = slot("serve-test-slot-2");

  @BeforeEach
  void writeScorer() throws Exception {
    scorer = Files.writeString(tmp.resolve("scorer.py"), SCORER);
  }

  @AfterEach
  void endSlots() throws Exception {
    for (ExecutorService s : new ExecutorService[] {slot, otherSlot}) {
      s.submit(ServeEvaluator::closeForCurrentSlot).get(30, TimeUnit.SECONDS); // as a worker's slot does when it ends
      s.shutdown();
    }
  }

  private static ExecutorService slot(String name) {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
  }

  private Evaluator serve() {
    return EvaluatorFactory.create("exec", Map.of("cmd", "python3 -u " + scorer, "serve", "true"));
  }

  private static EvalContext context(String id, String caseJson, Duration timeout) {
    return new EvalContext(id, caseJson, timeout, Ticker.system());
  }

  private static Evaluation on(ExecutorService slot, Evaluator evaluator, EvalContext ctx) throws Exception {
    return slot.submit(() -> evaluator.evaluate(ctx)).get(2, TimeUnit.MINUTES);
  }

  private Evaluation on(ExecutorService slot, Evaluator evaluator, String id, String fields) throws Exception {
    return on(slot, evaluator, context(id, "{\"id\":\"" + id + "\"" + fields + "}", TIMEOUT));
  }

  private static Outcome outcome(Evaluation e) {
    assertThat(e).isInstanceOf(Evaluation.Finished.class);
    return ((Evaluation.Finished) e).outcome();
  }

  private static InfraFailure failure(Evaluation e) {
    assertThat(e).isInstanceOf(Evaluation.Failed.class);
    return ((Evaluation.Failed) e).failure();
  }

  private static long pid(Evaluation e) throws Exception {
    JsonNode fields = CaseJson.MAPPER.readTree(outcome(e).fieldsJson());
    return fields.get("pid").asLong();
  }

  @Test
  void oneProcessPerSlotAnswersEveryCaseAndItsOutputBeforeTheAnswerIsTheCasesTail() throws Exception {
    Evaluator serve = serve();
    Evaluation first = on(slot, serve, "a", "");
    Evaluation second = on(slot, serve, "b", ",\"do\":\"print\"");
    Evaluation third = on(slot, serve, "c", ",\"do\":\"fail\"");

    assertThat(pid(second)).as("the same process").isEqualTo(pid(first)).isEqualTo(pid(third));
    assertThat(outcome(first).verdict()).isEqualTo(Verdict.PASS);
    assertThat(outcome(first).answer()).isEqualTo("a");
    assertThat(outcome(first).exitCode()).as("no exit code while serving").isNull();
    assertThat(outcome(second).outputTail()).isEqualTo("thinking about b\n");
    // Two pipes, two threads: stderr written just before the answer may be read after it, for the next case.
    assertThat(outcome(second).stderrTail() + outcome(third).stderrTail()).isEqualTo("a warning\n");
    assertThat(outcome(first).stderrTail()).isEmpty();
    assertThat(outcome(third).verdict()).isEqualTo(Verdict.FAIL);
    assertThat(outcome(third).outputTail()).as("each case its own output").isEmpty();

    Evaluation elsewhere = on(otherSlot, serve, "d", "");
    assertThat(pid(elsewhere)).as("another slot, its own process").isNotEqualTo(pid(first));
  }

  @Test
  void aProcessThatAnswersWithoutReadingAllOfALongLineIsOutOfStepAndReplaced() throws Exception {
    // Reads the first 100 bytes of its stdin, answers, and reads no more: a line longer than the pipe holds
    // (64 KiB) is never all written, and the next case's line would wait behind it forever.
    Path partial = Files.writeString(tmp.resolve("partial.py"), """
        import json, os, time
        os.read(0, 100)
        print(json.dumps({"verdict": "pass", "pid": os.getpid()}), flush=True)
        time.sleep(600)
        """);
    Evaluator serve = EvaluatorFactory.create("exec", Map.of("cmd", "python3 -u " + partial, "serve", "true"));
    String padding = ",\"pad\":\"" + "x".repeat(256 * 1024) + "\"";
    long first = pid(on(slot, serve, "long", padding));

    long startNanos = System.nanoTime();
    InfraFailure stuck = failure(on(slot, serve, "next", ""));
    assertThat(stuck.kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(stuck.detail()).contains("did not read all of the last case's line");
    assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).as("it waited out the grace first")
        .isGreaterThanOrEqualTo(ServedProcess.FEED_GRACE);
    assertThat(pid(on(slot, serve, "after", ""))).as("a fresh process").isNotEqualTo(first);
  }

  @Test
  void aProcessKilledMidCaseFailsItRetryablyAndTheNextCaseGetsAFreshOne() throws Exception {
    Evaluator serve = serve();
    long before = pid(on(slot, serve, "a", ""));
    Path mark = tmp.resolve("hanging");
    Future<Evaluation> hanging = slot.submit(() -> serve.evaluate(
        context("h", "{\"id\":\"h\",\"do\":\"hang\",\"mark\":\"" + mark + "\"}", TIMEOUT)));
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(mark) && !Files.readString(mark).isEmpty());
    ProcessHandle.of(Long.parseLong(Files.readString(mark))).orElseThrow().destroyForcibly(); // kill -9 from outside

    InfraFailure f = failure(hanging.get(1, TimeUnit.MINUTES));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.SIGNALED);
    long after = pid(on(slot, serve, "b", ""));
    assertThat(after).isNotEqualTo(before);
  }

  @Test
  void aProcessThatExitsOrClosesItsStdoutIsACrashAndIsReplaced() throws Exception {
    Evaluator serve = serve();
    long first = pid(on(slot, serve, "a", ""));
    InfraFailure exited = failure(on(slot, serve, "x", ",\"do\":\"exit\""));
    assertThat(exited.kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(exited.detail()).contains("exited (exit value 3)");
    long second = pid(on(slot, serve, "b", ""));
    assertThat(second).isNotEqualTo(first);
    await().atMost(Duration.ofSeconds(30)).until(() -> Processes.gone(first));

    InfraFailure closed = failure(on(slot, serve, "y", ",\"do\":\"close\""));
    assertThat(closed.kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(closed.detail()).contains("closed its stdout");
    await("killed, though it went on sleeping").atMost(Duration.ofSeconds(30)).until(() -> Processes.gone(second));
    assertThat(pid(on(slot, serve, "c", ""))).isNotEqualTo(second);
  }

  @Test
  void aHangEndsAsATimeoutAndItsProcessIsKilledAndReplaced() throws Exception {
    Evaluator serve = serve();
    long first = pid(on(slot, serve, "a", ""));
    Path mark = tmp.resolve("hanging");
    Evaluation hang = on(slot, serve, context("h", "{\"id\":\"h\",\"do\":\"hang\",\"mark\":\"" + mark + "\"}",
        Duration.ofSeconds(3)));

    InfraFailure f = failure(hang);
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.TIMEOUT);
    assertThat(f.detail()).contains("did not answer within the case timeout of 3000 ms");
    await().atMost(Duration.ofSeconds(30)).until(() -> Processes.gone(first));
    assertThat(pid(on(slot, serve, "b", ""))).isNotEqualTo(first);
  }

  @Test
  void garbageOnStdoutIsACrashNotAVerdictAndTheProcessIsReplaced() throws Exception {
    Evaluator serve = serve();
    long first = pid(on(slot, serve, "a", ""));
    InfraFailure f = failure(on(slot, serve, "g", ",\"do\":\"garbage\""));

    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(f.detail()).contains("answered a line that is not a verdict line: {this is not json");
    await().atMost(Duration.ofSeconds(30)).until(() -> Processes.gone(first));
    assertThat(pid(on(slot, serve, "b", ""))).isNotEqualTo(first);
  }

  @Test
  void aSecondAnswerToOneCaseIsNeverTakenAsTheNextCasesAnswer() throws Exception {
    Evaluator serve = serve();
    long first = pid(on(slot, serve, "t", ",\"do\":\"twice\""));
    // The extra answer (with "id": "t") comes before the next case is written, and puts the process out of step
    // (the case gets a fresh process), or after, and fails the case on its id: never "b"'s answer.
    Evaluation next = on(slot, serve, "b", "");
    if (next instanceof Evaluation.Finished) {
      assertThat(outcome(next).answer()).isEqualTo("b");
      assertThat(pid(next)).isNotEqualTo(first);
    } else {
      assertThat(failure(next).detail()).contains("answered with another case's \"id\"");
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> Processes.gone(first));
    Evaluation third = on(slot, serve, "c", "");
    assertThat(outcome(third).answer()).isEqualTo("c");
    assertThat(outcome(third).fieldsJson()).as("the echoed id is checked, not kept").doesNotContain("\"id\"");
  }

  @Test
  void aVerdictLineWithABadValueIsTheCasesErrorAsInExecAndTheProcessStays() throws Exception {
    Evaluator serve = serve();
    Evaluation bad = on(slot, serve, "m", ",\"do\":\"bad-verdict\"");
    Outcome o = outcome(bad);
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).contains("\"verdict\": \"maybe\" is not pass, fail or error");

    Evaluation next = on(slot, serve, "b", "");
    assertThat(outcome(next).verdict()).isEqualTo(Verdict.PASS);
  }

  @Test
  void cancellingTheAttemptKillsTheProcessAtOnce() throws Exception {
    Evaluator serve = serve();
    Path mark = tmp.resolve("hanging");
    EvalContext ctx = context("h", "{\"id\":\"h\",\"do\":\"hang\",\"mark\":\"" + mark + "\"}", TIMEOUT);
    Future<Evaluation> hanging = slot.submit(() -> serve.evaluate(ctx));
    await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(mark) && !Files.readString(mark).isEmpty());
    long pid = Long.parseLong(Files.readString(mark));

    ctx.cancel("the lease was lost");
    InfraFailure f = failure(hanging.get(20, TimeUnit.SECONDS));
    assertThat(f.detail()).contains("cancelled: the lease was lost");
    await().atMost(Duration.ofSeconds(10)).until(() -> Processes.gone(pid));
  }

  @Test
  void theSlotsEndAndTheIdleReaperCloseTheProcess() throws Exception {
    Evaluator serve = serve();
    long first = pid(on(slot, serve, "a", ""));
    long second = pid(on(otherSlot, serve, "b", ""));

    slot.submit(ServeEvaluator::closeForCurrentSlot).get(30, TimeUnit.SECONDS);
    await().atMost(Duration.ofSeconds(10)).until(() -> Processes.gone(first));

    ServeEvaluator.reapIdleSince(System.nanoTime() + 1); // as if IDLE_LIMIT had passed
    await().atMost(Duration.ofSeconds(10)).until(() -> Processes.gone(second));
    assertThat(pid(on(otherSlot, serve, "c", ""))).as("a reaped slot starts afresh").isNotEqualTo(second);
  }

  @Test
  void aSlotTurningToAnotherRunsServedCommandClosesTheOneItHad() throws Exception {
    long first = pid(on(slot, serve(), "a", ""));
    long second = pid(on(slot, serve(), "b", ""));

    assertThat(second).isNotEqualTo(first);
    await("at most one process per slot").atMost(Duration.ofSeconds(10)).until(() -> Processes.gone(first));
  }

  @Test
  void aCommandNotFoundIsTheCasesErrorAndPlaceholdersOrABadServeValueAreRefused() throws Exception {
    Evaluator missing = EvaluatorFactory.create("exec", Map.of("cmd", "no-such-command-here", "serve", "true"));
    assertThat(outcome(on(slot, missing, "a", "")).outputTail()).contains("command not found: no-such-command-here");

    assertThatThrownBy(() -> EvaluatorFactory.create("exec", Map.of("cmd", "python3 score.py {id}", "serve", "true")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot use case fields (it has {id})");
    assertThatThrownBy(() -> EvaluatorFactory.create("exec", Map.of("cmd", "python3 score.py", "serve", "yes")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("option serve must be true or false, got 'yes'");
  }
}

package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.InfraFailure;
import dev.tally.core.Ticker;
import dev.tally.core.Verdict;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class EvaluatorFactoryTest {
  private static EvalContext ctx(String json, Duration timeout) {
    return new EvalContext("c", json, timeout, Ticker.system());
  }

  @Test
  void anUnknownKindIsRefusedNamingItAndTheKnownOnes() {
    assertThatThrownBy(() -> EvaluatorFactory.create("http", Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'http'")
        .hasMessageContaining("exec, model, sleep, noop");
  }

  @Test
  void execWithoutACmdIsRefused() {
    assertThatThrownBy(() -> EvaluatorFactory.create("exec", Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cmd");
  }

  @Test
  void noopPassesWithoutAScore() {
    Evaluation e = EvaluatorFactory.create("noop", Map.of()).evaluate(ctx("{}", Duration.ofSeconds(1)));
    assertThat(e).isEqualTo(Evaluation.finished(Verdict.PASS, null, "", ((Evaluation.Finished) e).outcome().durationMillis()));
  }

  @Test
  void sleepWaitsTheCasesMillisElseTheOption() {
    Evaluator sleep = EvaluatorFactory.create("sleep", Map.of("millis", "10"));

    Evaluation fromCase = sleep.evaluate(ctx("{\"millis\": 300}", Duration.ofSeconds(5)));
    Evaluation fromOption = sleep.evaluate(ctx("{}", Duration.ofSeconds(5)));

    assertThat(((Evaluation.Finished) fromCase).outcome().durationMillis()).isBetween(300L, 3_000L);
    assertThat(((Evaluation.Finished) fromOption).outcome().durationMillis()).isBetween(10L, 290L);
  }

  @Test
  void sleepWithBurnKeepsTheCpuBusyInsteadOfWaiting() {
    java.util.concurrent.atomic.AtomicLong reads = new java.util.concurrent.atomic.AtomicLong();
    Ticker ticker = () -> reads.incrementAndGet() * 1_000; // each read 1 us later: a busy loop reads it all the time
    Evaluator burn = EvaluatorFactory.create("sleep", Map.of("millis", "100", "burn", "true"));
    Evaluation e = burn.evaluate(new EvalContext("c", "{}", Duration.ofSeconds(5), ticker));
    assertThat(e).isInstanceOf(Evaluation.Finished.class);
    assertThat(reads.get()).isGreaterThanOrEqualTo(100_000); // 100 ms of 1 us reads: it never waited

    EvalContext cancelled = ctx("{\"millis\": 60000}", Duration.ofSeconds(120));
    cancelled.cancel("stop");
    Evaluation stopped = EvaluatorFactory.create("sleep", Map.of("burn", "true")).evaluate(cancelled);
    assertThat(((Evaluation.Failed) stopped).failure().detail()).contains("cancelled: stop");
    assertThatThrownBy(() -> EvaluatorFactory.create("sleep", Map.of("burn", "yes")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sleep option burn must be true or false, got 'yes'");
  }

  @Test
  void aSleepPastTheCaseTimeoutIsATimeout() {
    Evaluation e = EvaluatorFactory.create("sleep", Map.of()).evaluate(ctx("{\"millis\": 60000}", Duration.ofMillis(100)));
    assertThat(((Evaluation.Failed) e).failure().kind()).isEqualTo(InfraFailure.Kind.TIMEOUT);
  }

  @Test
  void sleepEndsEarlyWhenCancelled() throws Exception {
    EvalContext c = ctx("{\"millis\": 60000}", Duration.ofSeconds(120));
    AtomicReference<Evaluation> result = new AtomicReference<>();
    Thread t = new Thread(() -> result.set(EvaluatorFactory.create("sleep", Map.of()).evaluate(c)));
    t.start();

    c.cancel("abandoned");

    t.join(5_000);
    assertThat(t.isAlive()).isFalse();
    assertThat(((Evaluation.Failed) result.get()).failure().detail()).contains("cancelled");
  }
}

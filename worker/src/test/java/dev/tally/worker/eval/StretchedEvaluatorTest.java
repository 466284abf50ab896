package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.InfraFailure;
import dev.tally.core.Ticker;
import dev.tally.core.Verdict;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class StretchedEvaluatorTest {
  private static final Evaluator SLEEP_100MS = EvaluatorFactory.create("sleep", Map.of("millis", "100"));

  @Test
  void aCaseTakesFactorTimesAsLongAndKeepsItsAnswer() {
    EvalContext ctx = new EvalContext("c", "{\"id\":\"c\"}", Duration.ofMinutes(1), Ticker.system());
    Evaluation e = new StretchedEvaluator(SLEEP_100MS, 3).evaluate(ctx);
    assertThat(e).isInstanceOf(Evaluation.Finished.class);
    assertThat(((Evaluation.Finished) e).outcome().verdict()).isEqualTo(Verdict.PASS);
    assertThat(ctx.elapsedMillis()).as("100 ms, then twice as long again").isGreaterThanOrEqualTo(300);
    assertThat(((Evaluation.Finished) e).outcome().durationMillis())
        .as("the duration reported is the stretched one, as a slow machine's: speculation judges slowness by it")
        .isGreaterThanOrEqualTo(300);
  }

  @Test
  void anAbandonEndsTheStretchWithoutAnOutcome() throws Exception {
    EvalContext ctx = new EvalContext("c", "{\"id\":\"c\"}", Duration.ofMinutes(10), Ticker.system());
    // 100 ms stretched 1,000 times would be 100 s; the cancel comes once the sleep has answered.
    CompletableFuture<Evaluation> running = CompletableFuture.supplyAsync(() -> new StretchedEvaluator(SLEEP_100MS, 1_000).evaluate(ctx));
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> ctx.elapsedMillis() >= 200);
    ctx.cancel("abandoned by the coordinator: another attempt of the case was recorded first");
    Evaluation e = running.get(30, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(e).isInstanceOfSatisfying(Evaluation.Failed.class,
        f -> assertThat(f.failure().kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED));
  }

  @Test
  void aStretchPastTheCaseTimeoutEndsAtTheTimeout() {
    EvalContext ctx = new EvalContext("c", "{\"id\":\"c\"}", Duration.ofMillis(300), Ticker.system());
    Evaluation e = new StretchedEvaluator(SLEEP_100MS, 10).evaluate(ctx);
    assertThat(e).isInstanceOfSatisfying(Evaluation.Failed.class,
        f -> assertThat(f.failure().kind()).isEqualTo(InfraFailure.Kind.TIMEOUT));
  }

  @Test
  void refusesAFactorBelowOneOrAboveTheLimit() {
    assertThatThrownBy(() -> new StretchedEvaluator(SLEEP_100MS, 0.5)).hasMessageContaining("from 1 to 1000");
    assertThatThrownBy(() -> new StretchedEvaluator(SLEEP_100MS, 1_001)).hasMessageContaining("got 1001");
    assertThatThrownBy(() -> new StretchedEvaluator(SLEEP_100MS, Double.NaN)).isInstanceOf(IllegalArgumentException.class);
  }
}

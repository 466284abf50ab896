package dev.tally.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.EvaluatorSpec;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.store.RunCounters;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which runs fail fast: their first N cases all errors alike, and nothing else. */
class FailFastTest {
  private static Outcome error(String output) {
    return new Outcome(Verdict.ERROR, null, output, 5);
  }

  @Test
  void theNthErrorAlikeFromTheStartPausesTheRunWithItsReason() {
    FailFast f = new FailFast();
    f.activated(1, Map.of(EvaluatorSpec.FAIL_FAST_OPTION, "3"), RunCounters.empty(100));
    assertThat(f.recorded(1, error("command not found: pyhton3\nmore"))).isNull();
    assertThat(f.recorded(1, error("\n  command not found: pyhton3  "))).isNull();
    assertThat(f.recorded(1, error("command not found: pyhton3")))
        .isEqualTo("fail fast: its first 3 cases all ended in error alike: command not found: pyhton3");
    assertThat(f.recorded(1, error("command not found: pyhton3"))).as("said once").isNull();
  }

  @Test
  void onePassOrFailOrAnotherReasonMakesTheRunHealthyForGood() {
    FailFast f = new FailFast();
    for (Outcome breaker : new Outcome[] {new Outcome(Verdict.PASS, 1.0, "ok", 1), new Outcome(Verdict.FAIL, 0.0, "no", 1),
        error("HTTP 401 from the endpoint")}) {
      f.activated(1, Map.of(EvaluatorSpec.FAIL_FAST_OPTION, "2"), RunCounters.empty(10));
      assertThat(f.recorded(1, error("command not found: x"))).isNull();
      assertThat(f.recorded(1, breaker)).isNull();
      assertThat(f.recorded(1, error("command not found: x"))).isNull();
      assertThat(f.recorded(1, error("command not found: x"))).as("after " + breaker.verdict()).isNull();
    }
  }

  @Test
  void theDefaultIsTwentyZeroTurnsItOffAndAResumedRunIsNotJudged() {
    FailFast f = new FailFast();
    f.activated(1, Map.of(), RunCounters.empty(100));
    for (int i = 1; i < EvaluatorSpec.DEFAULT_FAIL_FAST_CASES; i++) {
      assertThat(f.recorded(1, error("boom"))).isNull();
    }
    assertThat(f.recorded(1, error("boom"))).startsWith("fail fast: its first 20 cases");

    f.activated(2, Map.of(EvaluatorSpec.FAIL_FAST_OPTION, "0"), RunCounters.empty(100));
    f.activated(3, Map.of(EvaluatorSpec.FAIL_FAST_OPTION, "1"), RunCounters.builder(100).errored(5).build());
    assertThat(f.recorded(2, error("boom"))).isNull();
    assertThat(f.recorded(3, error("boom"))).isNull();
    assertThat(FailFast.reason(new Outcome(Verdict.ERROR, null, "", 1, null, null, 127, "sh: x: not found\n")))
        .isEqualTo("sh: x: not found");
    assertThatThrownBy(() -> EvaluatorSpec.failFastCases(Map.of(EvaluatorSpec.FAIL_FAST_OPTION, "-1")))
        .hasMessage("--fail-fast must be a whole number from 0 (off) to 10000, got '-1'");
  }
}

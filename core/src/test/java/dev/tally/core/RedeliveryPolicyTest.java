package dev.tally.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.InfraFailure.Kind;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.RedeliveryPolicy.CaseState;
import dev.tally.core.RedeliveryPolicy.Ending;
import dev.tally.core.RedeliveryPolicy.JobHistory;
import dev.tally.core.RedeliveryPolicy.Judgement;
import java.time.Duration;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** Each rule of the redelivery policy on its own, then the backoff's bounds over many draws. */
class RedeliveryPolicyTest {
  private static final RedeliveryPolicy POLICY = RedeliveryPolicy.defaults();
  private static final AttemptLimits LIMITS = new AttemptLimits(5, 1);

  private static Judgement judge(JobHistory before, Kind kind, CaseState where) {
    return POLICY.judge(before, new InfraFailure(kind, "why"), where, LIMITS);
  }

  @Test
  void aFailureWithAttemptsLeftGoesBackToTheQueue() {
    Judgement j = judge(new JobHistory(2, 0, 0), Kind.SIGNALED, CaseState.UNKNOWN);
    assertThat(j.ending()).isEqualTo(Ending.REQUEUED);
    assertThat(j.history()).isEqualTo(new JobHistory(2, 0, 0));
    assertThat(j.failureReason()).isNull();
  }

  @Test
  void theLastAttemptsFailureEndsTheJobWithItsReason() {
    Judgement j = judge(new JobHistory(5, 0, 0), Kind.EVALUATOR_CRASHED, CaseState.UNKNOWN);
    assertThat(j.ending()).isEqualTo(Ending.OUT_OF_ATTEMPTS);
    assertThat(j.failureReason()).isEqualTo("out of attempts (5 of 5); the last ended with evaluator_crashed: why");
  }

  @Test
  void deathsWhileRunningMakeACasePoisonButLossesWhileQueuedNeitherCountNorBreakTheStreak() {
    JobHistory h = new JobHistory(1, 0, 0);
    h = judge(h, Kind.WORKER_LOST, CaseState.RUNNING).history();
    h = judge(h, Kind.WORKER_LOST, CaseState.QUEUED).history();
    h = judge(h, Kind.LEASE_EXPIRED, CaseState.UNKNOWN).history();
    assertThat(h.lostStreak()).isEqualTo(1);
    h = judge(h, Kind.WORKER_LOST, CaseState.RUNNING).history();
    Judgement third = judge(h, Kind.WORKER_LOST, CaseState.RUNNING);
    assertThat(third.ending()).isEqualTo(Ending.POISON);
    assertThat(third.failureReason()).startsWith("poison: 3 attempts in a row");
  }

  @Test
  void aCaseThatRanAndEndedOnALiveWorkerBreaksThePoisonStreak() {
    for (Kind own : new Kind[] {Kind.TIMEOUT, Kind.SIGNALED, Kind.EVALUATOR_CRASHED}) {
      assertThat(judge(new JobHistory(1, 2, 0), own, CaseState.UNKNOWN).history().lostStreak()).as("%s", own).isZero();
    }
  }

  @Test
  void aTimeoutIsRetriedAsManyTimesAsTheRunAllowsThenEndsTheJob() {
    Judgement first = judge(new JobHistory(1, 0, 0), Kind.TIMEOUT, CaseState.RUNNING);
    assertThat(first.ending()).isEqualTo(Ending.REQUEUED);
    assertThat(first.history().timeouts()).isEqualTo(1);
    Judgement second = judge(new JobHistory(2, 0, 1), Kind.TIMEOUT, CaseState.RUNNING);
    assertThat(second.ending()).isEqualTo(Ending.TIMED_OUT);
    assertThat(second.failureReason()).isEqualTo("timed out 2 times (retried at most 1 time); the last: timeout: why");
    assertThat(POLICY.judge(new JobHistory(1, 0, 0), new InfraFailure(Kind.TIMEOUT, ""), CaseState.RUNNING,
        new AttemptLimits(5, 0)).ending()).as("no retry at all").isEqualTo(Ending.TIMED_OUT);
  }

  @Test
  void aHandBackIsFreeAndNeverEndsAJob() {
    Judgement j = judge(new JobHistory(5, 2, 1), Kind.HANDED_BACK, CaseState.QUEUED);
    assertThat(j.ending()).isEqualTo(Ending.REQUEUED);
    assertThat(j.history()).as("its attempt is given back; streaks untouched").isEqualTo(new JobHistory(4, 2, 1));
    assertThat(POLICY.backoff(3, Kind.HANDED_BACK, new SplittableRandom(1))).isZero();
    assertThat(RedeliveryPolicy.chargesAttempt(Kind.HANDED_BACK)).isFalse();
  }

  @Test
  void aJobsFirstLossWithItsWorkerGoesOutAtOnceAndLaterOnesBackOff() {
    SplittableRandom random = new SplittableRandom(7);
    assertThat(POLICY.backoff(1, Kind.WORKER_LOST, random)).isZero();
    boolean anyPositive = false;
    for (int i = 0; i < 50; i++) {
      anyPositive |= !POLICY.backoff(2, Kind.WORKER_LOST, random).isZero();
    }
    assertThat(anyPositive).as("a second loss is spaced like any retry").isTrue();
  }

  @Property(tries = 300)
  void backoffStaysWithinItsCeiling(@ForAll @IntRange(min = 1, max = 40) int attempt, @ForAll @LongRange(min = 0, max = 1_000) long seed) {
    Duration d = POLICY.backoff(attempt, Kind.SIGNALED, new SplittableRandom(seed));
    long ceiling = Math.min(RedeliveryPolicy.DEFAULT_MAX_MILLIS, RedeliveryPolicy.DEFAULT_BASE_MILLIS << Math.min(attempt - 1, 30));
    assertThat(d.toMillis()).isBetween(0L, ceiling);
  }

  @Test
  void buildersAndLimitsRefuseWhatCannotWork() {
    assertThatThrownBy(() -> RedeliveryPolicy.builder().backoffBase(Duration.ofSeconds(2)).backoffMax(Duration.ofSeconds(1)).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must be >= backoff base");
    assertThatThrownBy(() -> RedeliveryPolicy.builder().backoffBase(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("backoff base must be >= 0");
    assertThatThrownBy(() -> RedeliveryPolicy.builder().poisonLimit(-1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0 turns it off");
    assertThatThrownBy(() -> new AttemptLimits(0, 1)).hasMessageContaining("maxAttempts must be >= 1");
    assertThatThrownBy(() -> new AttemptLimits(1, -1)).hasMessageContaining("timeoutRetries must be >= 0");
    assertThatThrownBy(() -> POLICY.backoff(0, Kind.SIGNALED, new SplittableRandom(1))).hasMessageContaining(">= 1");
    assertThat(RedeliveryPolicy.builder().poisonLimit(0).build().judge(new JobHistory(1, 99, 0),
        new InfraFailure(Kind.WORKER_LOST, ""), CaseState.RUNNING, LIMITS).ending()).as("poison judgement off")
        .isEqualTo(Ending.REQUEUED);
  }
}

package dev.tally.core.outlier;

import static dev.tally.core.outlier.Ending.INFRA_FAILURE;
import static dev.tally.core.outlier.Ending.LOST;
import static dev.tally.core.outlier.Ending.SUCCESS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.InfraFailure;
import dev.tally.core.outlier.OutlierEvent.Rule;
import dev.tally.core.outlier.OutlierEvent.Type;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class OutlierDetectorTest {
  private static final String KIND = "run-7";
  private static final List<String> FLEET = List.of("w1", "w2", "w3", "w4");

  private OutlierDetector detector;
  private long now;

  @BeforeEach
  void fourWorkersJoin() {
    detector = new OutlierDetector(OutlierPolicy.defaults());
    now = 1_000;
    FLEET.forEach(w -> detector.workerJoined(w, now));
  }

  // Reports one attempt ended now, after the clock moved on by its duration.
  private void ended(String worker, Ending ending, long durationMillis) {
    now += durationMillis;
    detector.attemptEnded(worker, KIND, ending, durationMillis, now);
  }

  private void succeedOnEveryWorkerBut(String bad, int times, long durationMillis) {
    for (int i = 0; i < times; i++) {
      for (String w : FLEET) {
        if (!w.equals(bad)) {
          ended(w, SUCCESS, durationMillis);
        }
      }
    }
  }

  private long ejectBy5Failures(String worker) {
    for (int i = 0; i < 5; i++) {
      ended(worker, INFRA_FAILURE, 3);
    }
    assertThat(detector.isEjected(worker, now)).isTrue();
    return now;
  }

  @Test
  void aWorkerFailingEveryCaseInAFewMillisIsEjectedAfterFiveConsecutiveFailures() {
    for (int round = 1; round <= 4; round++) {
      for (String w : FLEET) {
        ended(w, w.equals("w4") ? INFRA_FAILURE : SUCCESS, w.equals("w4") ? 3 : 80);
      }
      assertThat(detector.isEjected("w4", now)).as("after %d failures", round).isFalse();
    }
    ended("w4", INFRA_FAILURE, 3);

    assertThat(detector.isEjected("w4", now)).isTrue();
    assertThat(FLEET.subList(0, 3)).noneMatch(w -> detector.isEjected(w, now));
    assertThat(detector.poll(now)).containsExactly(new OutlierEvent(Type.EJECTED, "w4", Rule.CONSECUTIVE_FAILURES,
        "5 consecutive infrastructure failures (limit 5)", now, now + 30_000, 1));
  }

  @Test
  void anEjectionLastsTheBaseTimeThenTheWorkerReturnsOnItsOwnAndIsJudgedAfresh() {
    long ejectedAt = ejectBy5Failures("w4");
    detector.poll(now);

    assertThat(detector.isEjected("w4", ejectedAt + 29_999)).isTrue();
    assertThat(detector.snapshot(ejectedAt + 29_999).get("w4").consecutiveFailures()).isEqualTo(5);
    // Only time passes: no report, and yet the worker is back.
    assertThat(detector.isEjected("w4", ejectedAt + 30_000)).isFalse();
    assertThat(detector.poll(ejectedAt + 30_500)).singleElement().satisfies(e -> {
      assertThat(e.type()).isEqualTo(Type.RETURNED);
      assertThat(e.atMillis()).isEqualTo(ejectedAt + 30_000);
      assertThat(e.rule()).isEqualTo(Rule.CONSECUTIVE_FAILURES);
      assertThat(e.describe()).startsWith("worker w4 returns to service after ejection 1");
    });
    WorkerHealth h = detector.snapshot(ejectedAt + 30_500).get("w4");
    assertThat(h.ejected()).isFalse();
    assertThat(h.timesEjected()).isEqualTo(1);
    assertThat(h.consecutiveFailures()).isZero();
    assertThat(h.recentAttempts()).isZero();
  }

  @Test
  void repeatedEjectionsGrowLinearlyUpToTheMax() {
    long[] expectedSeconds = {30, 60, 90, 120, 150, 180, 210, 240, 270, 300, 300, 300};
    for (int k = 0; k < expectedSeconds.length; k++) {
      long at = ejectBy5Failures("w4");
      OutlierEvent e = detector.poll(now).get(k == 0 ? 0 : 1);  // after the first, a RETURNED comes first
      assertThat(e.type()).isEqualTo(Type.EJECTED);
      assertThat(e.timesEjected()).isEqualTo(k + 1);
      assertThat(e.untilMillis() - at).as("ejection %d", k + 1).isEqualTo(expectedSeconds[k] * 1000);
      now = e.untilMillis();
    }
  }

  @Test
  void failVerdictsNeverEjectBecauseTheyAreSuccessesForTheWorker() {
    // w4 runs a run whose every case fails its own check, fast: SUCCESS endings throughout.
    for (int i = 0; i < 200; i++) {
      succeedOnEveryWorkerBut("w4", 1, 80);
      ended("w4", SUCCESS, 80);
    }
    assertThat(detector.isEjected("w4", now)).isFalse();
    assertThat(detector.poll(now)).isEmpty();
    assertThat(detector.snapshot(now).get("w4").recentFailureRate()).isZero();
  }

  @Test
  void infrastructureFailureKindsMapToEndingsAndOnlyWorkerSideOnesCount() {
    assertThat(Ending.of(InfraFailure.Kind.TIMEOUT)).isEqualTo(INFRA_FAILURE);
    assertThat(Ending.of(InfraFailure.Kind.SIGNALED)).isEqualTo(INFRA_FAILURE);
    assertThat(Ending.of(InfraFailure.Kind.EVALUATOR_CRASHED)).isEqualTo(INFRA_FAILURE);
    assertThat(Ending.of(InfraFailure.Kind.WORKER_LOST)).isEqualTo(LOST);
    assertThat(Ending.of(InfraFailure.Kind.COORDINATOR_RESTARTED)).isEqualTo(LOST);
    assertThat(Ending.of(InfraFailure.Kind.HANDED_BACK)).as("a draining worker's hand-back is not held against it")
        .isEqualTo(LOST);
  }

  @Test
  void lostAttemptsNeitherCountNorBreakARunOfFailures() {
    for (int i = 0; i < 50; i++) {
      ended("w4", LOST, 3);
    }
    assertThat(detector.snapshot(now).get("w4").recentAttempts()).isZero();
    for (int i = 0; i < 4; i++) {
      ended("w4", INFRA_FAILURE, 3);
    }
    ended("w4", LOST, 3);
    assertThat(detector.isEjected("w4", now)).isFalse();
    ended("w4", INFRA_FAILURE, 3);
    assertThat(detector.isEjected("w4", now)).isTrue();
  }

  @Test
  void aWorkerFailingEverySecondCaseIsEjectedByRateWithTheNumbersInTheReason() {
    succeedOnEveryWorkerBut("w4", 10, 80);
    for (int i = 0; i < 9; i++) {
      ended("w4", i % 2 == 0 ? INFRA_FAILURE : SUCCESS, 80);
      assertThat(detector.isEjected("w4", now)).as("after %d attempts", i + 1).isFalse();
    }
    ended("w4", SUCCESS, 80);  // the 10th attempt: 5 failures, never two in a row

    assertThat(detector.isEjected("w4", now)).isTrue();
    assertThat(detector.poll(now)).singleElement().satisfies(e -> {
      assertThat(e.rule()).isEqualTo(Rule.FAILURE_RATE);
      assertThat(e.reason()).isEqualTo("infrastructure failure rate 0.50 over its last 10 attempts against the"
          + " fleet's 0.00 over 30 attempts of 3 other workers (limit 0.30)");
    });
  }

  @Test
  void aColdStartNeverEjectsOnRateBeforeEnoughWorkersHaveEnoughAttempts() {
    // The others have 9 attempts each: one short of counting.
    succeedOnEveryWorkerBut("w4", 9, 80);
    for (int i = 0; i < 40; i++) {
      ended("w4", i % 2 == 0 ? INFRA_FAILURE : SUCCESS, 80);
    }
    assertThat(detector.isEjected("w4", now)).isFalse();
    // One more success each and the same record is judged.
    succeedOnEveryWorkerBut("w4", 1, 80);
    ended("w4", INFRA_FAILURE, 80);
    assertThat(detector.isEjected("w4", now)).isTrue();
  }

  @Test
  void aFleetOfTwoNeverEjectsOnRate() {
    detector.workerLeft("w3");
    detector.workerLeft("w4");
    for (int i = 0; i < 100; i++) {
      ended("w1", SUCCESS, 80);
      ended("w2", i % 2 == 0 ? INFRA_FAILURE : SUCCESS, 80);
    }
    assertThat(detector.isEjected("w2", now)).isFalse();
    assertThat(detector.snapshot(now).get("w2").recentFailureRate()).isEqualTo(0.5);
  }

  @Test
  void aFleetFailingForASharedReasonEjectsNobodyByRate() {
    // Every worker fails 2 of every 5 attempts (a run whose cases time out anywhere): 0.4 is nobody's fault.
    for (int i = 0; i < 100; i++) {
      for (String w : FLEET) {
        ended(w, i % 5 < 2 ? INFRA_FAILURE : SUCCESS, 80);
      }
    }
    assertThat(detector.ejections()).isZero();
  }

  @Test
  void aSlowWorkerIsEjectedByLatencyOnlyOnceItHasEnoughSuccesses() {
    succeedOnEveryWorkerBut("w4", 10, 80);
    for (int i = 0; i < 9; i++) {
      ended("w4", SUCCESS, 2_400);
    }
    assertThat(detector.isEjected("w4", now)).as("after 9 successes").isFalse();
    ended("w4", SUCCESS, 2_400);

    assertThat(detector.isEjected("w4", now)).isTrue();
    assertThat(detector.poll(now)).singleElement().satisfies(e -> {
      assertThat(e.rule()).isEqualTo(Rule.LATENCY);
      assertThat(e.reason()).isEqualTo("median latency 2400 ms over its last 10 successes against the fleet's 80 ms"
          + " over 30 successes of 3 other workers for kind run-7 (limit 400 ms)");
    });
  }

  @Test
  void aSlowWorkerIsNotJudgedWhileTooFewOthersHaveEnoughSuccessesOfTheKind() {
    succeedOnEveryWorkerBut("w4", 9, 80);
    ended("w1", SUCCESS, 80);  // only w1 has 10
    for (int i = 0; i < 20; i++) {
      ended("w4", SUCCESS, 2_400);
    }
    assertThat(detector.isEjected("w4", now)).isFalse();
  }

  @Test
  void latencyIsComparedWithinAKindOnly() {
    succeedOnEveryWorkerBut("w4", 10, 80);
    for (int i = 0; i < 20; i++) {
      now += 2_400;
      detector.attemptEnded("w4", "run-8", SUCCESS, 2_400, now);  // nobody else runs run-8
    }
    assertThat(detector.isEjected("w4", now)).isFalse();
  }

  @Test
  void aWorkerFourTimesSlowerOrSlowerByLessThanTheMinimumExcessStaysInService() {
    succeedOnEveryWorkerBut("w4", 10, 80);
    for (int i = 0; i < 20; i++) {
      ended("w4", SUCCESS, 320);
    }
    assertThat(detector.isEjected("w4", now)).isFalse();

    // 2 ms cases: 50 ms is 25 times slower, but only 48 ms more.
    OutlierDetector fast = new OutlierDetector(OutlierPolicy.defaults());
    FLEET.forEach(w -> fast.workerJoined(w, 0));
    for (int i = 0; i < 20; i++) {
      for (String w : FLEET) {
        fast.attemptEnded(w, KIND, SUCCESS, w.equals("w4") ? 50 : 2, 1_000 + i);
      }
    }
    assertThat(fast.ejections()).isZero();
  }

  @Test
  void theShareCapKeepsAQualifyingWorkerInServiceAndSaysSoOnce() {
    ejectBy5Failures("w3");
    ejectBy5Failures("w4");
    detector.poll(now);
    for (int i = 0; i < 8; i++) {
      ended("w2", INFRA_FAILURE, 3);
    }

    assertThat(detector.isEjected("w2", now)).isFalse();
    assertThat(detector.ejectedCount(now)).isEqualTo(2);
    assertThat(detector.refusedEjections()).isEqualTo(4);  // the 5th to the 8th failure
    assertThat(detector.poll(now)).singleElement().satisfies(e -> {
      assertThat(e.type()).isEqualTo(Type.EJECTION_REFUSED);
      assertThat(e.reason()).isEqualTo("5 consecutive infrastructure failures (limit 5); but 2 of 4 workers are"
          + " already ejected, the most allowed at once (max(1, floor(4 x 0.5)) = 2)");
      assertThat(e.describe()).startsWith("worker w2 stays in service although it qualifies for ejection");
    });

    // When a place frees up, the next failure ejects it.
    now += 30_000;
    assertThat(detector.ejectedCount(now)).isZero();
    ended("w2", INFRA_FAILURE, 3);
    assertThat(detector.isEjected("w2", now)).isTrue();
  }

  @Test
  void aFleetOfOneCanStillEjectItsOnlyWorker() {
    OutlierDetector alone = new OutlierDetector(OutlierPolicy.defaults());
    alone.workerJoined("solo", 0);
    for (int i = 1; i <= 5; i++) {
      alone.attemptEnded("solo", KIND, INFRA_FAILURE, 1, i);
    }
    assertThat(alone.isEjected("solo", 5)).isTrue();
  }

  @Test
  void aWorkerThatLeftIsForgottenAndLateReportsAboutItAreIgnored() {
    ejectBy5Failures("w4");
    detector.workerLeft("w4");

    assertThat(detector.snapshot(now)).doesNotContainKey("w4");
    assertThat(detector.isEjected("w4", now)).isFalse();
    assertThat(detector.ejectedCount(now)).isZero();
    assertThat(detector.fleetSize()).isEqualTo(3);
    ended("w4", INFRA_FAILURE, 3);  // late, from the closed connection
    assertThat(detector.snapshot(now)).doesNotContainKey("w4");

    detector.workerJoined("w4", now);
    WorkerHealth fresh = detector.snapshot(now).get("w4");
    assertThat(fresh.timesEjected()).isZero();
    assertThat(fresh.recentAttempts()).isZero();
    // Its old ejection's end does not return anybody.
    detector.poll(now);
    assertThat(detector.poll(now + 60_000)).isEmpty();
  }

  @Test
  void attemptsThatStartedBeforeAnEjectionDoNotCountAfterTheReturn() {
    long ejectedAt = ejectBy5Failures("w4");
    // Reports while ejected change nothing.
    now += 1_000;
    detector.attemptEnded("w4", KIND, INFRA_FAILURE, 3, now);
    assertThat(detector.snapshot(now).get("w4").consecutiveFailures()).isEqualTo(5);

    // After the return: an attempt leased before the ejection ends late; then one leased after it.
    now = ejectedAt + 30_010;
    detector.attemptEnded("w4", KIND, INFRA_FAILURE, 40_000, now);
    assertThat(detector.snapshot(now).get("w4").recentAttempts()).isZero();
    detector.attemptEnded("w4", KIND, INFRA_FAILURE, 5, now);
    assertThat(detector.snapshot(now).get("w4").consecutiveFailures()).isEqualTo(1);
  }

  @Test
  void timeNeverRunsBackwards() {
    long ejectedAt = ejectBy5Failures("w4");
    assertThat(detector.isEjected("w4", ejectedAt + 30_000)).isFalse();
    // An earlier reading is taken as the latest one: the return stands.
    assertThat(detector.isEjected("w4", ejectedAt)).isFalse();
  }

  @Test
  void theSnapshotShowsEachWorkersHealth() {
    succeedOnEveryWorkerBut("w4", 10, 80);
    ended("w4", SUCCESS, 100);
    ended("w4", SUCCESS, 300);
    ended("w4", SUCCESS, 200);
    ended("w4", INFRA_FAILURE, 3);
    ended("w4", INFRA_FAILURE, 3);

    WorkerHealth h = detector.snapshot(now).get("w4");
    assertThat(h).isEqualTo(new WorkerHealth("w4", OptionalLong.empty(), 0, 2, 5, 2, java.util.Map.of(KIND, 200L)));
    assertThat(h.recentFailureRate()).isEqualTo(0.4);
    assertThat(detector.snapshot(now)).containsOnlyKeys(FLEET);

    for (int i = 0; i < 3; i++) {  // 2 + 3 in a row
      ended("w4", INFRA_FAILURE, 3);
    }
    assertThat(detector.snapshot(now).get("w4").ejectedUntilMillis()).hasValue(now + 30_000);
    assertThat(detector.snapshot(now).get("w4").ejected()).isTrue();
  }

  @Test
  void latencyHistoryIsKeptForABoundedNumberOfKinds() {
    for (int k = 0; k <= OutlierDetector.MAX_TRACKED_KINDS; k++) {
      now += 10;
      detector.attemptEnded("w1", "run-" + k, SUCCESS, 10, now);
    }
    assertThat(detector.snapshot(now).get("w1").medianLatencyMillisByKind())
        .hasSize(OutlierDetector.MAX_TRACKED_KINDS)
        .doesNotContainKey("run-0")
        .containsKey("run-" + OutlierDetector.MAX_TRACKED_KINDS);
  }

  @Test
  void unpolledEventsAreBoundedAndTheDropsCounted() {
    OutlierDetector alone = new OutlierDetector(OutlierPolicy.builder().consecutiveFailures(1).build());
    alone.workerJoined("solo", 0);
    long t = 0;
    for (int i = 0; i < OutlierDetector.MAX_PENDING_EVENTS; i++) {  // an ejection and a return each
      t += 1;
      alone.attemptEnded("solo", KIND, INFRA_FAILURE, 0, t);
      t += 300_000;
    }
    assertThat(alone.poll(t)).hasSize(OutlierDetector.MAX_PENDING_EVENTS);
    assertThat(alone.droppedEvents()).isEqualTo(OutlierDetector.MAX_PENDING_EVENTS);
  }

  @Test
  void aNegativeDurationIsRefusedQuotingIt() {
    assertThatThrownBy(() -> detector.attemptEnded("w1", KIND, SUCCESS, -5, now))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("durationMillis must be >= 0, got -5");
  }
}

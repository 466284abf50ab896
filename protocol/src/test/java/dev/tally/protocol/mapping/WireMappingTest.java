package dev.tally.protocol.mapping;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.protocol.Result;
import org.junit.jupiter.api.Test;

class WireMappingTest {

  @Test
  void outcomesRoundTripWithAndWithoutScore() {
    for (Outcome o : new Outcome[] {
        new Outcome(Verdict.PASS, 1.5, "tail", 10), new Outcome(Verdict.ERROR, null, "", 0),
        new Outcome(Verdict.FAIL, 0.0, "x", Long.MAX_VALUE),
        new Outcome(Verdict.PASS, 1.0, "out", 3, "B", "{\"metrics\":{\"f1\":0.5}}", 0, "err"),
        new Outcome(Verdict.FAIL, null, "", 3, "", null, -1, "")}) {
      assertThat(WireMapping.toCore(WireMapping.toWire(o))).isEqualTo(o);
    }
    assertThat(WireMapping.toWire(new Outcome(Verdict.PASS, 0.0, "", 1)).getHasScore()).isTrue();
  }

  @Test
  void workerSideFailuresRoundTripAndCoordinatorSideOnesHaveNoWireForm() {
    for (InfraFailure.Kind k : new InfraFailure.Kind[] {
        InfraFailure.Kind.TIMEOUT, InfraFailure.Kind.SIGNALED, InfraFailure.Kind.EVALUATOR_CRASHED,
        InfraFailure.Kind.HANDED_BACK}) {
      InfraFailure f = new InfraFailure(k, "why");
      assertThat(WireMapping.toCore(WireMapping.toWire(f, 5))).isEqualTo(f);
    }
    assertThatThrownBy(() -> WireMapping.toWire(new InfraFailure(InfraFailure.Kind.WORKER_LOST, ""), 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no wire form");
  }

  @Test
  void theResultsAWorkerSendsAreTheReportsTheCoordinatorReads() {
    Outcome o = new Outcome(Verdict.FAIL, 0.25, "out", 42);
    Result recorded = WireMapping.result(7, 3, o).toBuilder().setQueuedMillis(9).build();
    assertThat(WireMapping.toReport(recorded)).isEqualTo(AttemptReport.of(7, 3, o).withTiming(9, 42));
    InfraFailure f = new InfraFailure(InfraFailure.Kind.TIMEOUT, "ran past 10m");
    Result failed = WireMapping.result(8, Long.MAX_VALUE, f, 600_000);
    assertThat(failed.getFailure().getDurationMillis()).isEqualTo(600_000);
    assertThat(WireMapping.toReport(failed)).isEqualTo(AttemptReport.failed(8, Long.MAX_VALUE, f).withTiming(0, 600_000));
  }

  @Test
  void aWorkerCannotSendAFailureOnlyTheCoordinatorDecides() {
    for (InfraFailure.Kind k : InfraFailure.Kind.values()) {
      InfraFailure f = new InfraFailure(k, "d");
      if (k.reportedByWorkers()) {
        assertThat(WireMapping.toReport(WireMapping.result(1, 1, f, 0)).failure()).isEqualTo(f);
      } else {
        assertThatThrownBy(() -> WireMapping.result(1, 1, f, 0))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(k.name()).hasMessageContaining("no wire form");
      }
    }
  }

  @Test
  void anUnknownFailureKindIsReadAsAnEvaluatorCrashThatNamesIt() {
    InfraFailure f = WireMapping.toCore(dev.tally.protocol.InfraFailure.newBuilder().setKindValue(9).setDetail("d").build());
    assertThat(f).isEqualTo(new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, "unknown failure kind 9: d"));
  }

  @Test
  void anOutcomeWithoutAVerdictIsRefused() {
    Result r = Result.newBuilder().setJobId(1).setOutcome(dev.tally.protocol.Outcome.newBuilder()).build();
    assertThatThrownBy(() -> WireMapping.toReport(r))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("verdict must be PASS, FAIL or ERROR, got 0");
  }

  @Test
  void aNonFiniteScoreOrFieldsThatAreNotAnObjectAreRefused() {
    Result nan = Result.newBuilder().setJobId(1).setOutcome(dev.tally.protocol.Outcome.newBuilder()
        .setVerdict(dev.tally.protocol.Verdict.PASS).setHasScore(true).setScore(Double.NaN)).build();
    assertThatThrownBy(() -> WireMapping.toReport(nan))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("score must be a finite number, got NaN");
    Result array = Result.newBuilder().setJobId(1).setOutcome(dev.tally.protocol.Outcome.newBuilder()
        .setVerdict(dev.tally.protocol.Verdict.PASS).setFieldsJson("[1]")).build();
    assertThatThrownBy(() -> WireMapping.toReport(array))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fieldsJson must be the text of a JSON object");
  }

  @Test
  void aDurationBeyondALongIsRefused() {
    Result r = Result.newBuilder().setJobId(1).setOutcome(dev.tally.protocol.Outcome.newBuilder()
        .setVerdict(dev.tally.protocol.Verdict.PASS).setDurationMillis(-1L)).build();
    assertThatThrownBy(() -> WireMapping.toReport(r))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("18446744073709551615");
  }
}

package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.coordinator.net.RecordingEvents.Event;
import dev.tally.coordinator.net.RecordingEvents.Kind;
import dev.tally.core.Assignment;
import dev.tally.core.InfraFailure;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerHandle;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The WorkerEvents contract checker: each rule broken alone is caught, and a lawful history passes. */
class WorkerEventsCheckerTest {
  private final RecordingEvents recorded = new RecordingEvents();
  private final WorkerEventsChecker checker = new WorkerEventsChecker(recorded);
  private static final AttemptReport REPORT =
      AttemptReport.failed(1, 1, new InfraFailure(InfraFailure.Kind.TIMEOUT, "late"));

  /** A session handle that only has an identity. */
  private record Session(String workerId, String label) implements WorkerHandle {
    @Override
    public String name() {
      return workerId + "-host";
    }

    @Override
    public int dispatchWindow() {
      return 1;
    }

    @Override
    public void assign(List<Assignment> assignments) {}

    @Override
    public void acknowledge(List<Ack> acks) {}

    @Override
    public void abandon(long jobId, long token, String reason) {}

    @Override
    public void close(String reason) {}

    @Override
    public String toString() {
      return label;
    }
  }

  @Test
  void aLawfulHistoryPassesAndReachesTheDelegateUnchanged() {
    Session first = new Session("w", "w/1");
    Session second = new Session("w", "w/2");
    Session other = new Session("v", "v/1");
    checker.workerJoined(first);
    checker.workerJoined(other); // another worker may be live at the same time
    checker.attemptEnded(first, REPORT);
    checker.workerLost(first, "superseded by a new session");
    checker.workerJoined(second); // after the first was lost
    checker.attemptEnded(second, REPORT);

    assertThatCode(checker::verify).doesNotThrowAnyException();
    assertThat(checker.violations()).isEmpty();
    assertThat(checker.eventCount()).isEqualTo(6);
    assertThat(recorded.events).extracting(Event::kind)
        .containsExactly(Kind.JOINED, Kind.JOINED, Kind.ENDED, Kind.LOST, Kind.JOINED, Kind.ENDED);
  }

  @Test
  void anEventBeforeTheJoinIsCaught() {
    Session s = new Session("w", "w/1");
    checker.attemptEnded(s, REPORT);
    checker.workerLost(s, "closed by peer");
    assertThat(checker.violations()).containsExactly(
        "event 1: attemptEnded before workerJoined for w/1 (" + REPORT + ")",
        "event 2: workerLost before workerJoined for w/1 ('closed by peer')");
  }

  @Test
  void anEventAfterTheLossIsCaught() {
    Session s = new Session("w", "w/1");
    checker.workerJoined(s);
    checker.workerLost(s, "reaped");
    checker.attemptEnded(s, REPORT);
    checker.workerLost(s, "again");
    checker.workerJoined(s);
    assertThat(checker.violations()).containsExactly(
        "event 3: attemptEnded after workerLost for w/1 (" + REPORT + ")",
        "event 4: workerLost twice for w/1 ('again')",
        "event 5: workerJoined after workerLost for w/1");
    assertThat(recorded.events).as("passed on all the same").hasSize(5);
  }

  @Test
  void aSecondJoinOfOneHandleIsCaught() {
    Session s = new Session("w", "w/1");
    checker.workerJoined(s);
    checker.workerJoined(s);
    assertThat(checker.violations()).containsExactly("event 2: workerJoined twice for w/1");
  }

  @Test
  void twoJoinedSessionsOfOneWorkerAtOnceAreCaught() {
    Session first = new Session("w", "w/1");
    Session second = new Session("w", "w/2");
    checker.workerJoined(first);
    checker.workerJoined(second);
    checker.workerLost(first, "superseded by a new session");
    checker.workerLost(second, "closed by peer");
    assertThat(checker.violations()).containsExactly(
        "event 2: w/2 joined while worker 'w' already had a joined session not yet lost: [w/1]");
  }

  @Test
  void verifyFailsWithTheCountAndTheFirstViolationsAndKeepsOnlyTheFirstHundred() {
    Session s = new Session("w", "w/1");
    checker.workerJoined(s);
    checker.workerLost(s, "closed by peer");
    for (int i = 0; i < WorkerEventsChecker.MAX_KEPT_VIOLATIONS + 50; i++) {
      checker.attemptEnded(s, REPORT);
    }
    assertThat(checker.violationCount()).isEqualTo(WorkerEventsChecker.MAX_KEPT_VIOLATIONS + 50);
    assertThat(checker.violations()).hasSize(WorkerEventsChecker.MAX_KEPT_VIOLATIONS);
    assertThatThrownBy(checker::verify).isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("150 of 152 worker events broke the WorkerEvents contract:\n  event 3: attemptEnded after workerLost");
  }

  @Test
  void aStandaloneCheckerOnlyJudges() {
    WorkerEventsChecker alone = WorkerEventsChecker.standalone();
    alone.workerLost(new Session("w", "w/1"), "x");
    assertThat(alone.violationCount()).isEqualTo(1);
  }
}

package dev.tally.core.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.store.WorkerStatus.Condition;
import org.junit.jupiter.api.Test;

class WorkerStatusTest {
  private static final long NOW = 1_000_000;

  private static WorkerStatus status(boolean accepting, long ejectedUntil, long reportedAt, String left) {
    return new WorkerStatus("1", "w", "0.1 of 8.0", accepting, ejectedUntil, null, 0, 1, reportedAt, left);
  }

  /** One word per worker, the same in tally status, the API and the dashboard (they had two rules). */
  @Test
  void aWorkersConditionIsOneWordFromItsLastReport() {
    assertThat(status(true, 0, NOW, null).condition(NOW)).isEqualTo(Condition.LIVE);
    assertThat(status(false, 0, NOW, null).condition(NOW)).as("suspected: no new work").isEqualTo(Condition.DRAINED);
    assertThat(status(true, NOW + 1, NOW, null).condition(NOW)).isEqualTo(Condition.EJECTED);
    assertThat(status(true, NOW, NOW, null).condition(NOW)).as("the ejection is over").isEqualTo(Condition.LIVE);
    assertThat(status(true, 0, NOW - WorkerStatus.SILENT_AFTER_MILLIS + 1, null).condition(NOW)).isEqualTo(Condition.LIVE);
    assertThat(status(false, NOW + 60_000, NOW - WorkerStatus.SILENT_AFTER_MILLIS, null).condition(NOW))
        .as("its coordinator stopped reporting: nothing else it said holds").isEqualTo(Condition.SILENT);
    assertThat(status(true, 0, NOW, "reaped").condition(NOW)).isEqualTo(Condition.LEFT);
    assertThat(Condition.DRAINED.word()).isEqualTo("drained");
  }
}

package dev.tally.core.detect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class MissedHeartbeatsDetectorTest {
  private static final long MS = 1_000_000L;
  private static final long S = 1_000 * MS;
  private static final long START = 123 * S;

  @Test
  void convictsAfterExactlyNWholeIntervalsOfSilence() {
    MissedHeartbeatsDetector d = fiveOfOneSecond().newDetector(START);
    assertThat(d.convicted(START + 5 * S - 1)).isFalse();
    assertThat(d.convicted(START + 5 * S)).isTrue();

    MissedHeartbeatsDetector three = MissedHeartbeatsDetector.builder()
        .heartbeatInterval(Duration.ofMillis(250)).convictAfterMissed(3).drainAfterMissed(2).build()
        .newDetector(START);
    assertThat(three.convicted(START + 750 * MS - 1)).isFalse();
    assertThat(three.convicted(START + 750 * MS)).isTrue();
  }

  @Test
  void suspicionIsTheNumberOfIntervalsMissed() {
    MissedHeartbeatsDetector d = fiveOfOneSecond().newDetector(START);
    assertThat(d.suspicion(START)).isZero();
    assertThat(d.suspicion(START + 2_500 * MS)).isEqualTo(2.5);
    assertThat(d.convictionLevel()).isEqualTo(5);
    assertThat(d.drainLevel()).isEqualTo(3);
  }

  @Test
  void drainsAfterThreeMissedIntervalsByDefault() {
    MissedHeartbeatsDetector d = fiveOfOneSecond().newDetector(START);
    assertThat(d.draining(START + 3 * S - 1)).isFalse();
    assertThat(d.draining(START + 3 * S)).isTrue();
    assertThat(d.convicted(START + 3 * S)).isFalse();
  }

  @Test
  void anyFrameRestartsTheCount() {
    MissedHeartbeatsDetector d = fiveOfOneSecond().newDetector(START);
    d.heartbeat(START + 4 * S);
    assertThat(d.convicted(START + 8 * S)).isFalse();
    assertThat(d.convicted(START + 9 * S)).isTrue();
    d.heartbeat(START + 2 * S); // late, out of order: changes nothing
    assertThat(d.convicted(START + 9 * S)).isTrue();
  }

  @Test
  void theDefaultsConvictAfterTheSameFiveSecondsAsTheFixedWindow() {
    MissedHeartbeatsDetector.Config c = MissedHeartbeatsDetector.builder().build();
    assertThat(c.detectionWindow()).isEqualTo(FixedTimeoutDetector.DEFAULT_WINDOW);
    assertThat(c.drainWindow()).isEqualTo(Duration.ofSeconds(3));
    assertThat(c.describe()).isEqualTo("missed-heartbeats(interval=500ms, drain at 6 missed, convict at 10 missed)");
  }

  @Test
  void silencesOfHoursStayFinite() {
    MissedHeartbeatsDetector d = MissedHeartbeatsDetector.builder().build().newDetector(0);
    assertThat(d.suspicion(Long.MAX_VALUE)).isFinite();
    assertThat(d.convicted(10 * 3_600 * S)).isTrue();
  }

  @Test
  void theBuilderRejectsEachBadArgumentSayingTheRule() {
    assertThatThrownBy(() -> MissedHeartbeatsDetector.builder().heartbeatInterval(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("heartbeatInterval must be positive, got PT0S");
    assertThatThrownBy(() -> MissedHeartbeatsDetector.builder().convictAfterMissed(0))
        .hasMessage("convictAfterMissed must be between 1 and 1000 heartbeat intervals, got 0");
    assertThatThrownBy(() -> MissedHeartbeatsDetector.builder().drainAfterMissed(0))
        .hasMessage("drainAfterMissed must be a finite number of heartbeat intervals above 0, got 0.0");
    assertThatThrownBy(() -> MissedHeartbeatsDetector.builder().convictAfterMissed(3).drainAfterMissed(4).build())
        .hasMessage("drainAfterMissed must be at most convictAfterMissed (3), got 4.0");
    assertThatThrownBy(() -> MissedHeartbeatsDetector.builder()
        .heartbeatInterval(Duration.ofDays(365L * 100)).convictAfterMissed(1_000).build())
        .hasMessageStartingWith("convictAfterMissed x heartbeatInterval must fit in a long of nanoseconds");
  }

  /** A 1 s interval, drain at 3 missed, convict at 5: the numbers these cases are worked out for. */
  private static MissedHeartbeatsDetector.Config fiveOfOneSecond() {
    return MissedHeartbeatsDetector.builder().heartbeatInterval(Duration.ofSeconds(1))
        .convictAfterMissed(5).drainAfterMissed(3).build();
  }
}

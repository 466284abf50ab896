package dev.tally.core.detect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DetectorSettingsTest {
  private static final Duration SECOND = Duration.ofSeconds(1);
  private static final Duration DEFAULT_INTERVAL = DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL;

  @Test
  void parsesEachKindToItsDefaults() {
    DetectorSettings fixed = DetectorSettings.parse("fixed", DEFAULT_INTERVAL);
    assertThat(fixed.kind()).isEqualTo(DetectorSettings.Kind.FIXED);
    assertThat(fixed.detectionWindow()).isEqualTo(Duration.ofSeconds(5));
    assertThat(fixed.drainWindow()).isEqualTo(Duration.ofSeconds(3));
    assertThat(fixed.factory().apply(0)).isInstanceOf(FixedTimeoutDetector.class);
    assertThat(fixed.describe()).isEqualTo("fixed-timeout(window=5000ms, drain after 3000ms)");

    DetectorSettings missed = DetectorSettings.parse("MISSED", DEFAULT_INTERVAL);
    assertThat(missed.detectionWindow()).isEqualTo(Duration.ofSeconds(5));
    assertThat(missed.drainWindow()).isEqualTo(Duration.ofSeconds(3));
    assertThat(missed.factory().apply(0)).isInstanceOf(MissedHeartbeatsDetector.class);

    DetectorSettings phi = DetectorSettings.parse(" phi ", DEFAULT_INTERVAL);
    assertThat(phi.detectionWindow()).isEqualTo(Duration.ofMillis(2_523)); // 0.5 s + 1.5 s pause + about 5.2 x 100 ms
    assertThat(phi.detectionWindow()).isEqualTo(Duration.ofMillis(phi.detectionWindow().toMillis())); // whole ms
    assertThat(phi.drainWindow()).isLessThan(phi.detectionWindow());
    assertThat(phi.factory().apply(0)).isInstanceOf(PhiAccrualDetector.class);
    assertThat(phi.describe()).startsWith("phi-accrual(threshold=8.0");
  }

  @Test
  void theFactoryStartsEachDetectorsClockAtTheConnectionsStart() {
    FailureDetector d = DetectorSettings.parse("missed", DEFAULT_INTERVAL).factory().apply(1_000 * 1_000_000_000L);
    assertThat(d.convicted(1_004 * 1_000_000_000L)).isFalse();
    assertThat(d.convicted(1_005 * 1_000_000_000L)).isTrue();
  }

  @Test
  void rejectsAnUnknownKindNamingTheKnownOnes() {
    assertThatThrownBy(() -> DetectorSettings.parse("accrual", SECOND))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("detector kind must be one of fixed, missed, phi; got 'accrual'");
    assertThatThrownBy(() -> DetectorSettings.parse(null, SECOND))
        .hasMessage("detector kind must be one of fixed, missed, phi; got null");
  }

  @Test
  void theHeartbeatIntervalMustFitThreeTimesInsideEachKindsDetectionWindow() {
    assertThatThrownBy(() -> DetectorSettings.fixed(SECOND, Duration.ofMillis(2_999), SECOND))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("the heartbeat interval must fit at least 3 times inside the detection window, "
            + "got an interval of 1000ms and a window of 2999ms");
    assertThatThrownBy(() -> DetectorSettings.missed(
            MissedHeartbeatsDetector.builder().heartbeatInterval(SECOND).convictAfterMissed(2).drainAfterMissed(1).build()))
        .hasMessageStartingWith("the heartbeat interval must fit at least 3 times inside the detection window, "
            + "got an interval of 1000ms and a window of 2000ms");
    // phi: 1 s interval + 0.5 s pause + ~5.2 x 100 ms = ~2.0 s of silence convicts on a steady link.
    assertThatThrownBy(() -> DetectorSettings.phi(
            PhiAccrualDetector.builder().heartbeatInterval(SECOND).acceptableHeartbeatPause(Duration.ofMillis(500)).build()))
        .hasMessageStartingWith("the heartbeat interval must fit at least 3 times inside the detection window, "
            + "got an interval of 1000ms and a window of 2023ms");
    assertThatThrownBy(() -> DetectorSettings.parse("fixed", Duration.ofSeconds(2)))
        .hasMessageContaining("got an interval of 2000ms and a window of 5000ms");
    assertThat(DetectorSettings.fixed(SECOND, Duration.ofSeconds(3), Duration.ofSeconds(2)).detectionWindow())
        .isEqualTo(Duration.ofSeconds(3));
    assertThat(DetectorSettings.parse("missed", Duration.ofSeconds(10)).detectionWindow())
        .isEqualTo(Duration.ofSeconds(100));
  }

  @Test
  void rejectsANonPositiveInterval() {
    assertThatThrownBy(() -> DetectorSettings.parse("fixed", Duration.ZERO))
        .hasMessage("heartbeatInterval must be positive, got PT0S");
    assertThatThrownBy(() -> DetectorSettings.parse("phi", null))
        .hasMessage("heartbeatInterval must be positive, got null");
  }
}

package dev.tally.core.detect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class FixedTimeoutDetectorTest {
  private static final long S = 1_000_000_000L;

  @Test
  void reapsAWorkerSilentForOneWholeWindow() {
    FixedTimeoutDetector d = new FixedTimeoutDetector(Duration.ofSeconds(5), 0);
    assertThat(d.convicted(5 * S - 1)).isFalse();
    assertThat(d.convicted(5 * S)).isTrue();
  }

  @Test
  void theOriginalConstructorDrainsAfterSixTenthsOfTheWindow() {
    FixedTimeoutDetector d = new FixedTimeoutDetector(Duration.ofSeconds(5), 0);
    assertThat(d.drainLevel()).isEqualTo(0.6);
    assertThat(d.draining(3 * S - 1)).isFalse();
    assertThat(d.draining(3 * S)).isTrue();
    assertThat(d.describe()).isEqualTo("fixed-timeout(window=5000ms, drain after 3000ms)");
  }

  @Test
  void drainsAfterTheGivenSilence() {
    FixedTimeoutDetector d = new FixedTimeoutDetector(Duration.ofSeconds(4), Duration.ofSeconds(1), 10 * S);
    assertThat(d.draining(11 * S - 1)).isFalse();
    assertThat(d.draining(11 * S)).isTrue();
    assertThat(d.convicted(11 * S)).isFalse();
    d.heartbeat(11 * S);
    assertThat(d.draining(11 * S)).isFalse();
  }

  @Test
  void rejectsADrainPointOutsideTheWindow() {
    assertThatThrownBy(() -> new FixedTimeoutDetector(Duration.ofSeconds(5), Duration.ofSeconds(6), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("drainAfter must be positive and at most the window (PT5S), got PT6S");
    assertThatThrownBy(() -> new FixedTimeoutDetector(Duration.ofSeconds(5), Duration.ZERO, 0))
        .hasMessage("drainAfter must be positive and at most the window (PT5S), got PT0S");
    assertThatThrownBy(() -> new FixedTimeoutDetector(Duration.ZERO, 0))
        .hasMessage("window must be positive, got PT0S");
  }

  @Test
  void aDetectorWithoutADrainStageDrainsOnlyWhenConvicted() {
    FailureDetector plain = new FailureDetector() {
      long last;

      @Override
      public void heartbeat(long nowNanos) {
        last = nowNanos;
      }

      @Override
      public double suspicion(long nowNanos) {
        return (nowNanos - last) / (double) S;
      }

      @Override
      public double convictionLevel() {
        return 2;
      }

      @Override
      public String describe() {
        return "plain";
      }
    };
    assertThat(plain.drainLevel()).isEqualTo(2);
    assertThat(plain.draining(2 * S - 1)).isFalse();
    assertThat(plain.draining(2 * S)).isTrue();
  }
}

package dev.tally.core.outlier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class OutlierPolicyTest {

  @Test
  void defaultsAreTheDocumentedOnes() {
    OutlierPolicy p = OutlierPolicy.defaults();
    assertThat(p.consecutiveFailures()).isEqualTo(5);
    assertThat(p.window()).isEqualTo(20);
    assertThat(p.minAttempts()).isEqualTo(10);
    assertThat(p.minWorkers()).isEqualTo(3);
    assertThat(p.failureRateFactor()).isEqualTo(2.0);
    assertThat(p.failureRateMargin()).isEqualTo(0.3);
    assertThat(p.latencyFactor()).isEqualTo(5.0);
    assertThat(p.latencyMinExcess()).isEqualTo(Duration.ofMillis(100));
    assertThat(p.baseEjection()).isEqualTo(Duration.ofSeconds(30));
    assertThat(p.maxEjection()).isEqualTo(Duration.ofMinutes(5));
    assertThat(p.maxEjectedShare()).isEqualTo(0.5);
  }

  @Test
  void ejectionsGrowLinearlyWithTheirCountUpToTheMax() {
    OutlierPolicy p = OutlierPolicy.defaults();
    assertThat(p.ejectionMillis(1)).isEqualTo(30_000);
    assertThat(p.ejectionMillis(2)).isEqualTo(60_000);
    assertThat(p.ejectionMillis(9)).isEqualTo(270_000);
    assertThat(p.ejectionMillis(10)).isEqualTo(300_000);
    assertThat(p.ejectionMillis(11)).isEqualTo(300_000);
    assertThat(p.ejectionMillis(Integer.MAX_VALUE)).isEqualTo(300_000);
    assertThatThrownBy(() -> p.ejectionMillis(0)).hasMessage("timesEjected must be >= 1, got 0");
  }

  @Test
  void theShareCapIsTheFloorOfTheShareButAtLeastOneWorker() {
    OutlierPolicy half = OutlierPolicy.defaults();
    assertThat(half.maxEjected(0)).isZero();
    assertThat(half.maxEjected(1)).isEqualTo(1);
    assertThat(half.maxEjected(2)).isEqualTo(1);
    assertThat(half.maxEjected(3)).isEqualTo(1);
    assertThat(half.maxEjected(4)).isEqualTo(2);
    assertThat(half.maxEjected(5)).isEqualTo(2);
    assertThat(half.maxEjected(100)).isEqualTo(50);
    OutlierPolicy tenth = OutlierPolicy.builder().maxEjectedShare(0.1).build();
    assertThat(tenth.maxEjected(9)).isEqualTo(1);
    assertThat(tenth.maxEjected(20)).isEqualTo(2);
    assertThat(OutlierPolicy.builder().maxEjectedShare(1.0).build().maxEjected(7)).isEqualTo(7);
    assertThatThrownBy(() -> half.maxEjected(-1)).hasMessage("fleetSize must be >= 0, got -1");
  }

  @Test
  void aShareWhoseProductIsWholeInDecimalIsNotRoundedDownByBinaryArithmetic() {
    // 0.29 * 100 is 28.999999999999996 in doubles.
    assertThat(OutlierPolicy.builder().maxEjectedShare(0.29).build().maxEjected(100)).isEqualTo(29);
  }

  @Test
  void everySetterRefusesAnOutOfRangeValueAndRestatesTheRule() {
    OutlierPolicy.Builder b = OutlierPolicy.builder();
    assertThatThrownBy(() -> b.consecutiveFailures(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consecutive failures must be >= 1 (one failure is the least that can eject), got 0");
    assertThatThrownBy(() -> b.window(0)).hasMessage("window must hold >= 1 attempt, got 0");
    assertThatThrownBy(() -> b.minAttempts(0)).hasMessage("minimum attempts must be >= 1, got 0");
    assertThatThrownBy(() -> b.minWorkers(1)).hasMessage(
        "minimum workers must be >= 2 (a worker is judged against the others, so at least one other is needed),"
            + " got 1");
    assertThatThrownBy(() -> b.failureRateFactor(0.5)).hasMessageStartingWith("failure-rate factor must be a"
        + " finite number >= 1").hasMessageEndingWith("got 0.5");
    assertThatThrownBy(() -> b.failureRateFactor(Double.NaN)).hasMessageEndingWith("got NaN");
    assertThatThrownBy(() -> b.failureRateMargin(0.0)).hasMessage(
        "failure-rate margin must be > 0 (else one failure in a clean fleet ejects) and < 1 (else no rate can exceed"
            + " it), got 0.0");
    assertThatThrownBy(() -> b.failureRateMargin(1.0)).hasMessageEndingWith("got 1.0");
    assertThatThrownBy(() -> b.latencyFactor(1.0)).hasMessageStartingWith("latency factor must be a finite number"
        + " > 1").hasMessageEndingWith("got 1.0");
    assertThatThrownBy(() -> b.latencyMinExcess(Duration.ofMillis(-1)))
        .hasMessage("latency minimum excess must be >= 0, got PT-0.001S");
    assertThatThrownBy(() -> b.baseEjection(Duration.ZERO))
        .hasMessage("base ejection must be >= 1 ms (a shorter one is no ejection), got PT0S");
    assertThatThrownBy(() -> b.maxEjection(Duration.ZERO)).hasMessage("max ejection must be >= 1 ms, got PT0S");
    assertThatThrownBy(() -> b.maxEjectedShare(0.0))
        .hasMessage("max ejected share must be > 0 and <= 1 (a share of the fleet), got 0.0");
    assertThatThrownBy(() -> b.maxEjectedShare(1.5)).hasMessageEndingWith("got 1.5");
    assertThatThrownBy(() -> b.latencyMinExcess(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void buildRefusesSettingsThatContradictEachOther() {
    assertThatThrownBy(() -> OutlierPolicy.builder().window(5).minAttempts(6).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("minimum attempts (6) must be <= window (5), or no worker could ever be judged");
    assertThatThrownBy(() -> OutlierPolicy.builder().baseEjection(Duration.ofMinutes(10)).build())
        .hasMessage("max ejection (PT5M) must be >= base ejection (PT10M)");
  }
}

package dev.tally.core.detect;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class HealthAwareDetectorTest {
  private static final long MS = 1_000_000L;
  private static final long S = 1_000 * MS;

  /** A local health driven to {@code score} by late ticks; returns the time of its last tick. */
  private static long raise(LocalHealth h, int score) {
    long t = 0;
    h.tick(t);
    for (int i = 0; i < score; i++) {
      t += 100 * MS + 500 * MS;
      h.tick(t);
    }
    assertThat(h.score()).isEqualTo(score);
    return t;
  }

  /** The defaults without the own-lag allowance, so that the multiplier's effect is seen alone. */
  private static LocalHealth multiplierOnly() {
    return new LocalHealth(LocalHealth.Config.builder()
        .ownLag(PeerLag.Config.of(Duration.ofNanos(1), Duration.ofNanos(1))).build());
  }

  private static HealthAwareDetector fixed5s(LocalHealth h, long start) {
    return new HealthAwareDetector(new FixedTimeoutDetector(Duration.ofSeconds(5), start), h,
        new PeerLag(h.config().peerLag()), start);
  }

  @Test
  void aHealthyObserverJudgesExactlyAsTheDetectorAlone() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    HealthAwareDetector d = fixed5s(h, 0);
    assertThat(d.convicted(5 * S - 1)).isFalse();
    assertThat(d.convicted(5 * S)).isTrue();
    assertThat(d.draining(3 * S)).isTrue();
    assertThat(d.describe(5 * S)).isEqualTo(d.describe()).doesNotContain("local health");
  }

  @Test
  void aLateObserverStretchesConvictionAndDrainByItsMultiplier() {
    LocalHealth h = multiplierOnly();
    long t = raise(h, 2); // x3
    HealthAwareDetector d = fixed5s(h, t);
    assertThat(d.draining(t + 9 * S - MS)).isFalse();
    assertThat(d.draining(t + 9 * S)).isTrue();
    assertThat(d.convicted(t + 15 * S - MS)).isFalse();
    assertThat(d.convicted(t + 15 * S)).isTrue();
    assertThat(d.rawSuspicion(t + 3 * S)).isEqualTo(0.6); // what the silence alone says
    assertThat(d.describe(t + 15 * S)).endsWith("; local health x3, lag allowance 0 ms");
  }

  @Test
  void phiIsStretchedAsMuchAsTheOthers() {
    LocalHealth healthy = new LocalHealth(LocalHealth.Config.defaults());
    LocalHealth starved = multiplierOnly();
    long t = raise(starved, 1); // x2
    PhiAccrualDetector.Config phi = PhiAccrualDetector.builder().build();
    HealthAwareDetector a = new HealthAwareDetector(phi.newDetector(t), healthy, new PeerLag(PeerLag.Config.off()), t);
    HealthAwareDetector b = new HealthAwareDetector(phi.newDetector(t), starved, new PeerLag(PeerLag.Config.off()), t);
    for (int i = 1; i <= 40; i++) { // a steady history at the 500 ms interval
      a.heartbeat(t + i * 500 * MS);
      b.heartbeat(t + i * 500 * MS);
    }
    long last = t + 40 * 500 * MS;
    long alone = firstConviction(a, last);
    long stretched = firstConviction(b, last);
    assertThat(alone).isBetween(2 * S, 3 * S);
    assertThat((double) stretched).isCloseTo(2.0 * alone, org.assertj.core.data.Offset.offset(20.0 * MS));
  }

  @Test
  void aWorkerThatReportedLagIsForgivenThatMuchMoreSilence() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    HealthAwareDetector d = fixed5s(h, 0);
    d.heartbeat(1 * S);
    d.lagReported(1 * S, 2 * S); // its own timers ran 2 s late
    assertThat(d.allowanceNanos(1 * S)).isEqualTo(2 * S);
    // Alone, the detector convicts after 5 s. The allowance fades over a minute, 2 s x (1 - s/60) left
    // after a silence of s, so conviction comes when s - 2 s x (1 - s/60) reaches 5 s: at s = 6.774 s.
    assertThat(d.convicted(1 * S + 5 * S)).isFalse();
    assertThat(d.convicted(1 * S + 6_770 * MS)).isFalse();
    assertThat(d.convicted(1 * S + 6_780 * MS)).isTrue();
    assertThat(d.describe(8 * S)).contains("lag allowance 1766 ms");
  }

  @Test
  void aTrulyDeadWorkerIsStillConvictedWithinTheBound() {
    // The worst case: the observer at its ceiling and the worker having reported more lag than allowed.
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    long t = raise(h, LocalHealth.DEFAULT_MAX_SCORE);
    for (DetectorSettings.Kind kind : DetectorSettings.Kind.values()) {
      DetectorSettings settings = DetectorSettings.defaults(kind, DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL);
      HealthAwareDetector d = new HealthAwareDetector(settings.factory().apply(t), h,
          new PeerLag(h.config().peerLag()), t);
      long last = t;
      for (int i = 1; i <= 40; i++) {
        last = t + i * 500 * MS;
        d.heartbeat(last);
      }
      d.lagReported(last, 60 * S);
      long bound = settings.detectionWindow().toNanos() * (1 + LocalHealth.DEFAULT_MAX_SCORE)
          + PeerLag.DEFAULT_MAX_ALLOWANCE.toNanos() + LocalHealth.DEFAULT_OWN_LAG_ALLOWANCE.toNanos();
      assertThat(firstConviction(d, last)).as(kind.configName()).isPositive().isLessThanOrEqualTo(bound);
    }
  }

  @Test
  void anObserverThatRanLateForgivesEveryWorkerThatMuchSilence() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    h.tick(0);
    h.tick(100 * MS + 3 * S); // this process did not run for 3 s
    assertThat(h.ownLagAllowanceNanos(100 * MS + 3 * S)).isEqualTo(3 * S);
    HealthAwareDetector d = fixed5s(h, 100 * MS + 3 * S);
    // x2 and 3 s forgiven, fading over a minute: conviction when (s - 3 s x (1 - s/60)) / 2 reaches 5 s.
    long s = 12_381 * MS;
    assertThat(d.convicted(100 * MS + 3 * S + s - 10 * MS)).isFalse();
    assertThat(d.convicted(100 * MS + 3 * S + s + 10 * MS)).isTrue();
    assertThat(d.describe(100 * MS + 3 * S)).endsWith("; local health x2, lag allowance 3000 ms");
  }

  @Test
  void peerLagOffIgnoresReports() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.off());
    HealthAwareDetector d = fixed5s(h, 0);
    d.lagReported(0, 3 * S);
    assertThat(d.allowanceNanos(0)).isZero();
    assertThat(d.convicted(5 * S)).isTrue();
  }

  @Test
  void aSmallerReportDoesNotShortenALargerAllowance() {
    PeerLag lag = new PeerLag(PeerLag.Config.defaults());
    lag.report(0, 3 * S);
    lag.report(1 * S, 1 * S);
    assertThat(lag.allowanceNanos(1 * S)).isGreaterThan(2 * S);
    lag.report(2 * S, 60 * S); // capped
    assertThat(lag.allowanceNanos(2 * S)).isEqualTo(PeerLag.DEFAULT_MAX_ALLOWANCE.toNanos());
    assertThat(lag.allowanceNanos(62 * S)).isZero();
  }

  /** Nanoseconds of silence after {@code last} at which {@code d} first convicts, in 1 ms steps; -1 if not within 5 min. */
  private static long firstConviction(FailureDetector d, long last) {
    for (long s = 0; s <= 300 * S; s += MS) {
      if (d.convicted(last + s)) {
        return s;
      }
    }
    return -1;
  }
}

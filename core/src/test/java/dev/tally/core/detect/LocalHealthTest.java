package dev.tally.core.detect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LocalHealthTest {
  private static final long MS = 1_000_000L;
  private static final long S = 1_000 * MS;

  /** Ticks every period, each {@code lateMillis} late, from {@code startNanos} for {@code count} ticks; returns the last time. */
  private static long tickEvery(LocalHealth h, long startNanos, int count, long lateMillis) {
    long t = startNanos;
    for (int i = 0; i < count; i++) {
      t += LocalHealth.DEFAULT_TICK_PERIOD.toNanos() + lateMillis * MS;
      h.tick(t);
    }
    return t;
  }

  @Test
  void aHealthyObserverJudgesWithTheDetectorsOwnSettings() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    h.tick(0);
    tickEvery(h, 0, 100, 20); // 20 ms late: scheduling noise, under the 100 ms that counts
    assertThat(h.multiplier()).isEqualTo(1.0);
    assertThat(h.snapshot().lateTicks()).isZero();
  }

  @Test
  void lateTicksRaiseTheMultiplierOneStepEachUpToItsCeiling() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    h.tick(0);
    long t = 100 * MS + 150 * MS;
    LocalHealth.Observation o = h.tick(t);
    assertThat(o.late()).isTrue();
    assertThat(o.lateNanos()).isEqualTo(150 * MS);
    assertThat(o.reason()).isEqualTo("a timer ran 150 ms late");
    assertThat(h.multiplier()).isEqualTo(2.0);
    tickEvery(h, t, 10, 300);
    assertThat(h.score()).isEqualTo(LocalHealth.DEFAULT_MAX_SCORE);
    assertThat(h.multiplier()).isEqualTo(1 + LocalHealth.DEFAULT_MAX_SCORE);
  }

  @Test
  void decaysOneStepPerQuietDecayPeriodBackToOne() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    h.tick(0);
    long t = tickEvery(h, 0, 3, 500);
    assertThat(h.multiplier()).isEqualTo(4.0);
    // On time from now on: one step down per 5 s without a raise.
    t = tickEvery(h, t, 49, 0); // 4.9 s
    assertThat(h.multiplier()).isEqualTo(4.0);
    t = tickEvery(h, t, 1, 0);
    assertThat(h.multiplier()).isEqualTo(3.0);
    t = tickEvery(h, t, 100, 0);
    assertThat(h.multiplier()).isEqualTo(1.0);
    // A late tick in between restarts the wait.
    t = tickEvery(h, t, 1, 200);
    t = tickEvery(h, t, 40, 0);
    t = tickEvery(h, t, 1, 200);
    assertThat(h.multiplier()).isEqualTo(3.0);
    tickEvery(h, t, 45, 0); // 4.5 s after the second late tick, 8.8 s after the first
    assertThat(h.multiplier()).isEqualTo(3.0);
  }

  @Test
  void manyWorkersSilentAtOnceCountAgainstTheObserver() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    for (int i = 0; i < 8; i++) {
      h.sessionOpened();
    }
    h.tick(0);
    h.silenceChanged(true); // one of eight: a worker's own problem
    long t = tickEvery(h, 0, 3, 0);
    assertThat(h.multiplier()).isEqualTo(1.0);
    h.silenceChanged(true); // two of eight: a quarter, silent together
    LocalHealth.Observation o = h.tick(t + 100 * MS);
    assertThat(o.correlated()).isTrue();
    assertThat(o.reason()).isEqualTo("many workers silent at once");
    assertThat(h.multiplier()).isEqualTo(2.0);
    h.silenceChanged(false);
    h.sessionClosed(true); // the other silent one ended: none silent now
    assertThat(h.snapshot().silentSessions()).isZero();
    assertThat(h.snapshot().sessions()).isEqualTo(7);
    tickEvery(h, t + 100 * MS, 10, 0);
    assertThat(h.multiplier()).isEqualTo(2.0); // decays only after 5 s
  }

  @Test
  void oneSilentWorkerNeverStretchesItsOwnJudgement() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    for (int i = 0; i < 3; i++) {
      h.sessionOpened();
    }
    h.silenceChanged(true); // a third of the fleet, but one worker: frozen or dead, convicted on time
    h.tick(0);
    tickEvery(h, 0, 10, 0);
    assertThat(h.multiplier()).isEqualTo(1.0);
    assertThat(h.isSilent(999 * MS, 500 * MS)).isFalse();
    assertThat(h.isSilent(1_000 * MS, 500 * MS)).isTrue();
  }

  @Test
  void twoWorkersAreNotAFleet() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.defaults());
    h.sessionOpened();
    h.sessionOpened();
    h.silenceChanged(true);
    h.silenceChanged(true);
    h.tick(0);
    tickEvery(h, 0, 10, 0);
    assertThat(h.multiplier()).isEqualTo(1.0);
  }

  @Test
  void offNeverMoves() {
    LocalHealth h = new LocalHealth(LocalHealth.Config.off());
    h.tick(0);
    tickEvery(h, 0, 10, 5_000);
    assertThat(h.multiplier()).isEqualTo(1.0);
    assertThat(h.config().peerLag().enabled()).isFalse();
    assertThat(h.config().describe()).isEqualTo("local health off");
  }

  @Test
  void refusesSettingsOutsideTheirRules() {
    assertThatThrownBy(() -> LocalHealth.Config.builder().maxScore(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxScore must be from 1 to 8");
    assertThatThrownBy(() -> LocalHealth.Config.builder().maxScore(9)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> LocalHealth.Config.builder().silentShare(0))
        .hasMessageContaining("silentShare must be above 0 and at most 1, got 0.0");
    assertThatThrownBy(() -> LocalHealth.Config.builder().minSessions(1)).hasMessageContaining("minSessions");
    assertThatThrownBy(() -> LocalHealth.Config.builder().tickPeriod(Duration.ZERO)).hasMessageContaining("tickPeriod");
    assertThatThrownBy(() -> LocalHealth.Config.builder().decayAfter(null)).hasMessageContaining("decayAfter");
    assertThatThrownBy(() -> PeerLag.Config.of(Duration.ofMinutes(2), Duration.ofSeconds(1)))
        .hasMessageContaining("maxAllowance");
  }
}

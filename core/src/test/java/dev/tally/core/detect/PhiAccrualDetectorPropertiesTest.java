package dev.tally.core.detect;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

class PhiAccrualDetectorPropertiesTest {
  private static final long MS = 1_000_000L;
  private static final long S = 1_000 * MS;

  @Provide
  Arbitrary<List<Long>> anyIntervalsMillis() {
    return Arbitraries.longs().between(1, 20_000).list().ofMaxSize(300);
  }

  @Provide
  Arbitrary<List<Long>> intervalsWithinTheAcceptablePauseMillis() {
    // From half the interval (a busy link) to the interval plus the whole acceptable pause.
    return Arbitraries.longs().between(500, 2_500).list().ofMinSize(1).ofMaxSize(300);
  }

  @Provide
  Arbitrary<List<Long>> jitteredIntervalsMillis() {
    return Arbitraries.longs().between(800, 1_200).list().ofMaxSize(300);
  }

  @Property(tries = 300)
  void phiNeverFallsAsSilenceGrows(
      @ForAll("anyIntervalsMillis") List<Long> history,
      @ForAll @LongRange(min = 0, max = 100_000) long earlierMillis,
      @ForAll @LongRange(min = 1, max = 10_000_000) long moreMillis,
      @ForAll @IntRange(min = 2, max = 200) int window,
      @ForAll @LongRange(min = 1, max = 1_000) long minSdMillis) {
    PhiAccrualDetector d = oneSecondInterval().maxSampleSize(window)
        .minStdDeviation(Duration.ofMillis(minSdMillis)).build().newDetector(0);
    long last = feed(d, history);
    double earlier = d.suspicion(last + earlierMillis * MS);
    double later = d.suspicion(last + (earlierMillis + moreMillis) * MS);
    assertThat(earlier).isFinite().isGreaterThanOrEqualTo(0);
    assertThat(later).isFinite().isGreaterThanOrEqualTo(earlier);
  }

  @Property(tries = 300)
  void aLiveSenderLateByNoMoreThanTheAcceptablePauseIsNeverDrained(
      @ForAll("intervalsWithinTheAcceptablePauseMillis") List<Long> intervals) {
    PhiAccrualDetector d = oneSecondInterval().build().newDetector(0);
    long t = 0;
    for (long i : intervals) {
      long next = t + i * MS;
      assertThat(d.suspicion(next)).as("phi just as the frame after %d ms arrives", i).isLessThan(d.drainLevel());
      assertThat(d.draining(next)).isFalse();
      d.heartbeat(next);
      t = next;
    }
  }

  @Property(tries = 300)
  void aStopAfterAJitteredStreamIsConvictedWithinTheFixedDetectorsWindow(
      @ForAll("jitteredIntervalsMillis") List<Long> intervals) {
    PhiAccrualDetector d = oneSecondInterval().build().newDetector(0);
    long last = feed(d, intervals);
    // Never before the interval plus the pause (a live sender's allowance)...
    assertThat(d.convicted(last + 2_500 * MS)).isFalse();
    // ...and no later than the fixed 5 s window would: mean <= 1.2 s, sd <= 0.25 s (the seed's).
    assertThat(d.convicted(last + FixedTimeoutDetector.DEFAULT_WINDOW.toNanos())).isTrue();
  }

  @Property(tries = 200)
  void theSampleWindowNeverGrowsPastItsBound(
      @ForAll("anyIntervalsMillis") List<Long> intervals, @ForAll @IntRange(min = 2, max = 50) int window) {
    PhiAccrualDetector d = oneSecondInterval().maxSampleSize(window).build().newDetector(0);
    long t = 0;
    for (long i : intervals) {
      t += i * MS;
      d.heartbeat(t);
      assertThat(d.sampleCount()).isLessThanOrEqualTo(window);
    }
    assertThat(d.sampleCount()).isEqualTo(Math.min(window, intervals.size() + 2));
  }

  private static long feed(PhiAccrualDetector d, List<Long> intervalsMillis) {
    long t = 0;
    for (long i : intervalsMillis) {
      t += i * MS;
      d.heartbeat(t);
    }
    return t;
  }

  /** These cases are worked out for senders heartbeating once a second (the default is 500 ms). */
  private static PhiAccrualDetector.Builder oneSecondInterval() {
    return PhiAccrualDetector.builder().heartbeatInterval(java.time.Duration.ofSeconds(1));
  }
}

package dev.tally.core.detect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

class PhiAccrualDetectorTest {
  private static final long MS = 1_000_000L;
  private static final long S = 1_000 * MS;

  /** The Bowling et al. (2009) logistic approximation's largest absolute error on the normal CDF. */
  private static final double CDF_TOLERANCE = 1.5e-4;

  @Test
  void theReferenceNormalDistributionMatchesPublishedValues() {
    assertThat(NormalReference.cdf(0)).isCloseTo(0.5, within(1e-15));
    assertThat(NormalReference.cdf(1)).isCloseTo(0.8413447460685429, within(1e-13));
    assertThat(NormalReference.upperTail(3)).isCloseTo(1.3498980316300946e-3, within(1e-15));
    assertThat(NormalReference.upperTail(5) / 2.866515718791939e-7).isCloseTo(1, within(1e-10));
    assertThat(NormalReference.upperTail(8) / 6.22096057427178e-16).isCloseTo(1, within(1e-9));
  }

  /**
   * Feeds the given intervals to a detector whose history holds exactly them (the window is their number,
   * so the two seed samples are gone; they are all above the heartbeat interval, so none is floored).
   */
  private static PhiAccrualDetector afterIntervals(long[] intervals, Duration pause, Duration minSd) {
    PhiAccrualDetector d = oneSecondInterval()
        .heartbeatInterval(Duration.ofMillis(100)).maxSampleSize(intervals.length)
        .acceptableHeartbeatPause(pause).minStdDeviation(minSd).threshold(50).drainLevel(1).build()
        .newDetector(0);
    long t = 0;
    for (long i : intervals) {
      t += i;
      d.heartbeat(t);
    }
    return d;
  }

  private static long lastArrival(long[] intervals) {
    return Arrays.stream(intervals).sum();
  }

  @Test
  void phiIsMinusLog10OfTheNormalUpperTailWithinTheLogisticApproximationsError() {
    Random random = new Random(1);
    for (int history = 0; history < 50; history++) {
      long[] intervals = new long[10 + random.nextInt(90)];
      for (int i = 0; i < intervals.length; i++) {
        intervals[i] = 500 * MS + (long) (random.nextDouble() * 1_500 * MS);
      }
      Duration pause = Duration.ofMillis(random.nextInt(3_000));
      Duration minSd = Duration.ofMillis(1 + random.nextInt(300));
      PhiAccrualDetector d = afterIntervals(intervals, pause, minSd);
      double mean = Arrays.stream(intervals).average().orElseThrow();
      double variance = Arrays.stream(intervals).mapToDouble(x -> (x - mean) * (x - mean)).sum() / intervals.length;
      double sd = Math.max(Math.sqrt(variance), minSd.toNanos());
      double meanPlusPause = mean + pause.toNanos();

      for (double y = -6; y <= 8; y += 0.05) {
        long silence = Math.round(meanPlusPause + y * sd);
        if (silence < 0) {
          continue;
        }
        double exactY = (silence - meanPlusPause) / sd;
        double phi = d.suspicion(lastArrival(intervals) + silence);
        // In probability space the approximation is uniformly good...
        assertThat(1 - Math.pow(10, -phi)).as("F(%s)", exactY).isCloseTo(NormalReference.cdf(exactY), within(CDF_TOLERANCE));
        // ...in phi space it is close where phi is small, and errs towards suspicion in the tail.
        double exactPhi = NormalReference.phi(exactY);
        if (Math.abs(exactY) <= 3) {
          assertThat(phi).as("phi at y=%s", exactY).isCloseTo(exactPhi, within(0.05));
        } else if (exactY > 3) {
          assertThat(phi).as("phi at y=%s", exactY).isGreaterThanOrEqualTo(exactPhi);
        }
      }
    }
  }

  @Test
  void phiIsLog10Of2WhenTheSilenceEqualsTheMeanPlusThePause() {
    long[] intervals = {S, S, S, S};
    PhiAccrualDetector d = afterIntervals(intervals, Duration.ofMillis(1500), Duration.ofMillis(100));
    assertThat(d.suspicion(lastArrival(intervals) + 2500 * MS)).isCloseTo(Math.log10(2), within(1e-12));
  }

  @Test
  void phiIsZeroRightAfterAFrame() {
    PhiAccrualDetector d = oneSecondInterval().build().newDetector(0);
    d.heartbeat(S);
    assertThat(d.suspicion(S)).isGreaterThanOrEqualTo(0).isLessThan(1e-10);
  }

  @Test
  void aSteadyStreamThenAStopIsConvictedExactlyAfterTheConfiguredDetectionWindow() {
    PhiAccrualDetector.Config config = oneSecondInterval().build();
    PhiAccrualDetector d = config.newDetector(0);
    long t = 0;
    for (int i = 0; i < 500; i++) {
      t += S;
      d.heartbeat(t);
    }
    long window = config.detectionWindow().toNanos(); // rounded up to whole milliseconds
    assertThat(window).isEqualTo(3_023 * MS); // 1 s + 1.5 s pause + about 5.2 x 100 ms
    assertThat(d.convicted(t + window - MS)).isFalse();
    assertThat(d.convicted(t + window)).isTrue();
    long drain = config.drainWindow().toNanos();
    assertThat(drain).isEqualTo(2_629 * MS); // 1 s + 1.5 s pause + about 1.28 x 100 ms
    assertThat(d.draining(t + drain - MS)).isFalse();
    assertThat(d.draining(t + drain)).isTrue();
    assertThat(drain).isLessThan(window);
  }

  @Test
  void beforeAnySampleTheFirstHeartbeatEstimateDefinesPhi() {
    PhiAccrualDetector d = oneSecondInterval().build().newDetector(7 * S);
    assertThat(d.sampleCount()).isEqualTo(2);
    assertThat(d.meanIntervalNanos()).isCloseTo(1e9, within(1.0));
    assertThat(d.stdDeviationNanos()).isCloseTo(0.25e9, within(1.0));
    assertThat(d.suspicion(7 * S)).isLessThan(1e-10);
    assertThat(d.convicted(7 * S + 2 * S)).isFalse();
    assertThat(d.convicted(7 * S + 10 * S)).isTrue();
  }

  @Test
  void remembersAtMostMaxSampleSizeIntervalsAndForgetsTheOldest() {
    PhiAccrualDetector d = oneSecondInterval().maxSampleSize(100).build().newDetector(0);
    long t = 0;
    for (int i = 0; i < 10_000; i++) {
      t += 3 * S;
      d.heartbeat(t);
      assertThat(d.sampleCount()).isLessThanOrEqualTo(100);
    }
    for (int i = 0; i < 100; i++) {
      t += S;
      d.heartbeat(t);
    }
    assertThat(d.sampleCount()).isEqualTo(100);
    assertThat(d.meanIntervalNanos()).isCloseTo(1e9, within(1e-3)); // every 3 s interval is forgotten
    assertThat(d.stdDeviationNanos()).isCloseTo(0, within(1.0));
  }

  @Test
  void intervalsShorterThanTheHeartbeatIntervalAreRecordedAsTheInterval() {
    PhiAccrualDetector d = oneSecondInterval().maxSampleSize(50).build().newDetector(0);
    long t = 0;
    for (int i = 0; i < 1_000; i++) { // a busy worker: a result every 10 ms
      t += 10 * MS;
      d.heartbeat(t);
    }
    assertThat(d.meanIntervalNanos()).isCloseTo(1e9, within(1e-3));
    // Going quiet after the busy spell, with a 1.5 s pause on top of the interval, is no suspicion.
    assertThat(d.suspicion(t + 2_500 * MS)).isLessThan(d.drainLevel());
  }

  @Test
  void runningSumsStayExactOverMillionsOfFrames() {
    PhiAccrualDetector d = oneSecondInterval().maxSampleSize(100).build().newDetector(0);
    Random random = new Random(3);
    long[] last100 = new long[100];
    long t = 0;
    for (int i = 0; i < 2_000_000; i++) {
      long interval = S + (long) (random.nextDouble() * 2 * S);
      last100[i % 100] = interval;
      t += interval;
      d.heartbeat(t);
    }
    double mean = Arrays.stream(last100).average().orElseThrow();
    double sd = Math.sqrt(Arrays.stream(last100).mapToDouble(x -> (x - mean) * (x - mean)).sum() / 100);
    assertThat(d.meanIntervalNanos()).isCloseTo(mean, within(1e-3));
    assertThat(d.stdDeviationNanos()).isCloseTo(sd, within(1e-3));
  }

  @Test
  void silencesOfHoursGiveAFiniteHugePhiNeverNaNOrInfinity() {
    PhiAccrualDetector d = oneSecondInterval().build().newDetector(0);
    d.heartbeat(S);
    for (long silence : new long[] {3_600 * S, 10 * 3_600 * S, 365L * 24 * 3_600 * S, Long.MAX_VALUE - 2 * S}) {
      double phi = d.suspicion(S + silence);
      assertThat(phi).as("phi after %d ns", silence).isFinite().isGreaterThan(d.convictionLevel());
      assertThat(d.convicted(S + silence)).isTrue();
    }
    // A pathological floor of 1 ns: y would be ~10^18 and y^3 overflow without the clamp.
    PhiAccrualDetector sharp = oneSecondInterval().minStdDeviation(Duration.ofNanos(1))
        .acceptableHeartbeatPause(Duration.ZERO).maxSampleSize(2).build().newDetector(0);
    sharp.heartbeat(S);
    sharp.heartbeat(2 * S);
    sharp.heartbeat(3 * S);
    assertThat(sharp.suspicion(Long.MAX_VALUE)).isFinite().isPositive();
    assertThat(sharp.suspicion(3 * S)).isFinite().isGreaterThanOrEqualTo(0);
  }

  @Test
  void theFormulaItselfIsFiniteAndOrderedAtTheExtremes() {
    double[] ys = {-1e300, -1e10, -40, -1, 0, 1, 40, 1e10, 1e300};
    double previous = -1;
    for (double y : ys) {
      double phi = PhiAccrualDetector.phi(y, 0, 1);
      assertThat(phi).as("phi at y=%s", y).isFinite().isGreaterThanOrEqualTo(0).isGreaterThanOrEqualTo(previous);
      previous = phi;
    }
  }

  @Test
  void aFrameAtOrBeforeThePreviousOneIsIgnored() {
    PhiAccrualDetector d = oneSecondInterval().build().newDetector(5 * S);
    d.heartbeat(5 * S);
    d.heartbeat(4 * S);
    assertThat(d.sampleCount()).isEqualTo(2);
  }

  @Test
  void theBuilderRejectsEachBadArgumentSayingTheRule() {
    assertThatThrownBy(() -> PhiAccrualDetector.builder().threshold(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("threshold must be a finite number above 0, got 0.0");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().threshold(Double.NaN))
        .hasMessage("threshold must be a finite number above 0, got NaN");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().threshold(Double.POSITIVE_INFINITY))
        .hasMessage("threshold must be a finite number above 0, got Infinity");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().drainLevel(-1))
        .hasMessage("drainLevel must be a finite number above 0, got -1.0");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().threshold(4).drainLevel(5).build())
        .hasMessage("drainLevel must be at most the threshold (4.0), got 5.0");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().acceptableHeartbeatPause(Duration.ofMillis(-1)))
        .hasMessage("acceptableHeartbeatPause must be zero or positive, got PT-0.001S");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().minStdDeviation(Duration.ZERO))
        .hasMessage("minStdDeviation must be positive, got PT0S");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().heartbeatInterval(null))
        .hasMessage("heartbeatInterval must be positive, got null");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().heartbeatInterval(Duration.ofDays(365L * 1_000)))
        .hasMessageStartingWith("heartbeatInterval must fit in a long of nanoseconds (about 292 years), got PT");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().maxSampleSize(1))
        .hasMessage("maxSampleSize must be between 2 (a standard deviation needs two samples) and 10000, got 1");
    assertThatThrownBy(() -> PhiAccrualDetector.builder().maxSampleSize(10_001))
        .hasMessage("maxSampleSize must be between 2 (a standard deviation needs two samples) and 10000, got 10001");
  }

  @Test
  void theDefaultsAreTheDocumentedOnes() {
    PhiAccrualDetector.Config c = PhiAccrualDetector.builder().build();
    assertThat(c.threshold()).isEqualTo(PhiAccrualDetector.DEFAULT_THRESHOLD).isEqualTo(8.0);
    assertThat(c.drainLevel()).isEqualTo(PhiAccrualDetector.DEFAULT_DRAIN_LEVEL).isEqualTo(1.0);
    assertThat(c.acceptableHeartbeatPause()).isEqualTo(Duration.ofMillis(1500));
    assertThat(c.minStdDeviation()).isEqualTo(Duration.ofMillis(100));
    assertThat(c.maxSampleSize()).isEqualTo(100);
    assertThat(c.heartbeatInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(c.describe()).isEqualTo("phi-accrual(threshold=8.0, drain at 1.0, acceptable pause=1500ms, "
        + "min sd=100ms, samples=100, interval=500ms; convicts after 2523ms of silence on a steady link)");
  }

  /** These cases are worked out for senders heartbeating once a second (the default is 500 ms). */
  private static PhiAccrualDetector.Builder oneSecondInterval() {
    return PhiAccrualDetector.builder().heartbeatInterval(java.time.Duration.ofSeconds(1));
  }
}

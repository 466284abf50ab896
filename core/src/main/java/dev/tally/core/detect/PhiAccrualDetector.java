package dev.tally.core.detect;

import java.time.Duration;

/**
 * The φ accrual failure detector: suspicion is how improbable the current silence is, given the
 * inter-arrival times this connection has shown so far.
 *
 * <p>Source: N. Hayashibara, X. Défago, R. Yared and T. Katayama, "The φ Accrual Failure Detector",
 * Proc. 23rd IEEE Symposium on Reliable Distributed Systems (SRDS), 2004; in the variant of Akka's and
 * Apache Pekko's {@code PhiAccrualFailureDetector}, which models inter-arrival times with a normal
 * distribution, approximates its CDF by a logistic function, and adds an "acceptable heartbeat pause" to
 * the mean.
 *
 * <p><b>φ in words.</b> Keep the last {@code maxSampleSize} times between frames. From their mean μ and
 * standard deviation σ, ask: if this worker were alive, how likely is a silence at least as long as the
 * one we see now? φ is minus the base-10 logarithm of that probability, so φ = 1 means a 10% chance that
 * a live worker is this late, φ = 2 a 1% chance, φ = 8 one in 10<sup>8</sup>. Suspicion is φ; it is 0
 * right after a frame and rises without bound with silence.
 *
 * <p><b>φ as a formula.</b> With {@code t} the time since the last frame, μ' = μ + {@code
 * acceptableHeartbeatPause}, σ' = max(σ, {@code minStdDeviation}) and y = (t - μ') / σ':
 *
 * <pre>
 *   φ(t) = -log10(1 - F(y)),   F(y) ≈ 1 / (1 + e^(-z)),   z = y (1.5976 + 0.070566 y²)
 * </pre>
 *
 * F is the standard normal CDF in the logistic approximation (Bowling et al., 2009; absolute error
 * below 1.4·10<sup>-4</sup>) that Pekko uses. Its tail is thinner than the normal's, so beyond y ≈ 3 φ
 * grows faster than the exact normal φ (at y = 5: 7.3 against 6.5): the threshold is in this formula's
 * units, which is why it was chosen by measurement. 1 - F(y) = 1 / (1 + e^z), so φ = ln(1 + e^z) / ln 10
 * — the softplus of z — which is computed as {@code z + log1p(e^(-z))} for z > 0 and {@code
 * log1p(e^z)} otherwise: no {@code 1 - F} is ever formed, so φ neither rounds to 0 for small silences nor
 * becomes {@code -log10(0) = Infinity} for silences of hours. y is clamped to ±{@link
 * #MAX_STANDARD_SCORE} so that y³ cannot overflow: φ is finite, never NaN, and never decreases as silence
 * grows.
 *
 * <p><b>One departure from Pekko: samples are floored at the heartbeat interval.</b> Pekko feeds its
 * detector heartbeats only; Tally feeds every frame (DESIGN §4), and a busy worker sends results many
 * times a second. Recorded as they are, those intervals would teach the detector to expect a frame
 * every few milliseconds, and a busy worker that pauses or goes idle would be reaped within
 * {@code acceptableHeartbeatPause} plus a few σ. But a worker only promises a frame every heartbeat
 * interval, so an interval shorter than {@code heartbeatInterval} is recorded as {@code
 * heartbeatInterval}: the history describes how late the promise is kept, which is what silence is
 * judged against. Longer intervals are recorded as they are, so the detector still adapts to a slow
 * network or a starved sender. In {@code tally bench-detectors} the unfloored history (row {@code
 * P8/1.5nf}) falsely reaped 0.05 times an hour on the busy trace (results 100 ms apart in busy spells, GC
 * pauses up to 1.5 s; a live φ of 11.4) and 0.01 with GC pauses alone (a paused sender's catch-up
 * frames are short intervals too); the floored one never did.
 *
 * <p><b>Parameters, defaults, and what goes wrong when each is set badly.</b> The defaults were chosen
 * with {@code tally bench-detectors} (replays of simulated heartbeat traces: steady, ±20% jitter, GC
 * pauses, 1% loss, CPU-starved bursts, busy traffic; each ending in a real stop), aiming at no false
 * reap with GC pauses up to 1.5 s and the lowest detection time that allows.
 *
 * <ul>
 *   <li>{@code threshold} (default {@link #DEFAULT_THRESHOLD}): the φ that convicts. Too low and live
 *       workers are reaped whenever they are a little later than usual; too high and dead ones are
 *       found late. Because σ' is usually the floor on a quiet link, φ is steep: from 8 to 12 moves the
 *       steady-state detection time by only about 0.1 s, so the threshold is not the main lever — the
 *       acceptable pause is.
 *   <li>{@code drainLevel} (default {@link #DEFAULT_DRAIN_LEVEL}): the φ above which the worker gets no
 *       new jobs. Too low and ordinary lateness idles workers; too high (at the threshold) and a dying
 *       worker is handed new jobs until it is reaped.
 *   <li>{@code acceptableHeartbeatPause} (default {@link #DEFAULT_ACCEPTABLE_HEARTBEAT_PAUSE}): added to
 *       the mean, it is the silence beyond the usual interval that costs almost no suspicion — a GC pause,
 *       a stalled TCP retransmit. Too low and every pause longer than a few σ reaps a live worker (with
 *       a 100 ms floor, a 1 s pause is ten σ); too high and each detection is late by that much.
 *   <li>{@code minStdDeviation} (default {@link #DEFAULT_MIN_STD_DEVIATION}): a floor under σ. On a
 *       perfectly regular link σ tends to 0 and φ would jump from 0 to infinity the instant a frame is
 *       late; too low brings that back (any millisecond of lateness beyond the pause reaps), too high
 *       spreads φ so that detection is slow and every level is reached late.
 *   <li>{@code maxSampleSize} (default {@link #DEFAULT_MAX_SAMPLE_SIZE}): how many inter-arrival
 *       times are remembered. Too few and μ and σ swing with every odd interval (one long GC pause
 *       doubles σ, then is forgotten); too many and the detector is slow to adapt to a network that
 *       changed, and holds more memory per connection.
 *   <li>{@code heartbeatInterval} (default {@link #DEFAULT_HEARTBEAT_INTERVAL}): the interval the
 *       workers are told to heartbeat at. It seeds the history before any frame arrives (as Pekko's
 *       {@code first-heartbeat-estimate}: two samples, interval ± a quarter, so μ = interval and σ =
 *       interval / 4) and floors every sample (above). Too low and the seed and the floor make the
 *       detector expect frames the worker never promised; too high and the first seconds of a
 *       connection, and busy periods, are judged too leniently.
 * </ul>
 *
 * <p><b>Why these defaults.</b> From {@code tally bench-detectors} (100 runs of one simulated hour per
 * trace, 500 ms heartbeats, 100 ms floor, 100 samples; {@code --heartbeat-interval 1s} for the
 * comparison):
 *
 * <ul>
 *   <li>The acceptable pause is the lever. At 0.5 s φ falsely reaped live senders on every trace with
 *       pauses (54/h with GC pauses up to 2 s, 23/h up to 1.5 s); at 1 s it still did with 2 s GC pauses
 *       (10.7/h). 1.5 s made no false reap on any trace, the 2 s GC pauses included, and detects a stop
 *       2.37 s after it on average over all traces (4.76 s for the 5 s fixed window). 2 s also makes
 *       none, at +0.5 s on every detection.
 *   <li>The threshold barely matters once the pause is right: at 1.5 s, thresholds 8, 10 and 12 made the
 *       same (no) mistakes and cost +0.07 s and +0.12 s of mean detection time; 8 is the lowest, and
 *       Pekko's default.
 *   <li>The interval: 500 ms rather than 1 s detects sooner (2.37 s against 2.75 s on average, 3.89 s
 *       against 6.44 s at worst) and with more margin: a lost heartbeat or a starved burst hardly moves φ
 *       (peaks 0.00 and 0.01, against 7.30 and 7.33 at 1 s), because the pause is three intervals, not
 *       one and a half.
 *   <li>The margin, honestly: with GC pauses up to 1.5 s (the target) a live sender's φ never passed
 *       0.26; with 2 s GC pauses it reached 6.96, under the threshold but drained 7.3 times an hour.
 *       Where pauses that long are common, use a 2 s pause (no live φ above 0.26 on any trace).
 *   <li>Drain level 1.0: a live sender never reached it with GC pauses up to 1.5 s, on the busy, lossy
 *       or starved traces. A dead worker is drained about 1.9 s after it stops, about 0.5 s before it is
 *       reaped. φ is steep in time because σ' is usually the floor: a drain at half the threshold (4)
 *       would come only about 0.16 s before the reap, hardly a stage at all.
 *   <li>Adaptation cuts both ways: after a starved burst the history is stretched, and a stop was found
 *       up to 3.9 s after it (the fixed window: 5 s at most).
 * </ul>
 *
 * <p>With a steady stream at the interval, the history converges to μ = interval, σ' = floor, and the
 * detector convicts after {@link Config#detectionWindow()} = interval + pause + y<sub>θ</sub>·floor of
 * silence, where y<sub>θ</sub> solves φ = threshold (about 5.2 for 8); that is the detection window the
 * heartbeat interval must fit several times into.
 *
 * <p>Costs: one {@code long} per remembered sample; {@link #heartbeat} and {@link #suspicion} are O(1)
 * (running sums, recomputed exactly once per {@code maxSampleSize} frames so rounding cannot drift).
 *
 * <p>Thread-safety: not thread-safe; one instance per connection, touched only on its event loop.
 */
public final class PhiAccrualDetector implements FailureDetector {
  /** The default φ that convicts. See the class doc for how it was chosen. */
  public static final double DEFAULT_THRESHOLD = 8.0;

  /** The default φ that drains. See the class doc for how it was chosen. */
  public static final double DEFAULT_DRAIN_LEVEL = 1.0;

  /** The default silence beyond the mean interval that costs almost no suspicion. */
  public static final Duration DEFAULT_ACCEPTABLE_HEARTBEAT_PAUSE = Duration.ofMillis(1500);

  /** The default floor under the standard deviation: 100 ms, Pekko's default. */
  public static final Duration DEFAULT_MIN_STD_DEVIATION = Duration.ofMillis(100);

  /**
   * The default number of inter-arrival times remembered: 100, about 50 s of history at the 500 ms
   * interval (Pekko's cluster default is 1000 at its 1 s interval). Enough that one 2 s GC gap moves σ
   * to ~0.15 s rather than doubling it, few enough that a changed network is learned in under two
   * minutes, and 800 bytes per connection.
   */
  public static final int DEFAULT_MAX_SAMPLE_SIZE = 100;

  /**
   * The most samples a detector may remember: 10,000 is 80 KB per connection and almost three hours of
   * history at a 1 s interval; a longer memory no longer adapts to anything.
   */
  public static final int MAX_SAMPLE_SIZE = 10_000;

  /** The default heartbeat interval, {@link DetectorSettings#DEFAULT_HEARTBEAT_INTERVAL}. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL;

  /**
   * The largest standardized silence |y| the formula sees. φ there is about 3·10<sup>16</sup>, far past
   * any threshold, while y³ is 10<sup>18</sup>, far from overflowing a double; silences beyond it (hours
   * against a sub-second σ, or a pathological floor) get that same φ instead of Infinity.
   */
  static final double MAX_STANDARD_SCORE = 1e6;

  private static final double LN_10 = Math.log(10);
  private static final double LOGISTIC_LINEAR = 1.5976;
  private static final double LOGISTIC_CUBIC = 0.070566;

  private final Config config;
  private final long[] samples; // a ring of inter-arrival times, nanoseconds
  private final long shiftNanos; // the sums below are of (sample - shift): small numbers, little rounding
  private int count;
  private int next;
  private int insertionsSinceExactSums;
  private double shiftedSum;
  private double shiftedSumOfSquares;
  private long lastArrivalNanos;

  private PhiAccrualDetector(Config config, long startNanos) {
    this.config = config;
    this.samples = new long[config.maxSampleSize];
    this.shiftNanos = config.heartbeatIntervalNanos;
    this.lastArrivalNanos = startNanos;
    long quarter = config.heartbeatIntervalNanos / 4;
    add(config.heartbeatIntervalNanos - quarter);
    add(config.heartbeatIntervalNanos + quarter);
  }

  /** A builder holding every default. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Records a frame at {@code nowNanos}: the time since the previous frame, floored at the heartbeat
   * interval, joins the history (evicting the oldest once {@code maxSampleSize} are held). A time at or
   * before the previous frame's is ignored.
   */
  @Override
  public void heartbeat(long nowNanos) {
    if (nowNanos <= lastArrivalNanos) {
      return;
    }
    long interval = nowNanos - lastArrivalNanos;
    lastArrivalNanos = nowNanos;
    add(Math.max(interval, config.heartbeatIntervalNanos));
  }

  private void add(long sampleNanos) {
    if (count == samples.length) {
      double evicted = samples[next] - shiftNanos;
      shiftedSum -= evicted;
      shiftedSumOfSquares -= evicted * evicted;
    } else {
      count++;
    }
    samples[next] = sampleNanos;
    next = (next + 1) % samples.length;
    double d = sampleNanos - shiftNanos;
    shiftedSum += d;
    shiftedSumOfSquares += d * d;
    if (++insertionsSinceExactSums >= samples.length) {
      recomputeSums();
    }
  }

  /** Sums afresh from the ring, so that add-then-subtract rounding cannot accumulate over hours. */
  private void recomputeSums() {
    double sum = 0;
    double sumOfSquares = 0;
    for (int i = 0; i < count; i++) {
      double d = samples[i] - shiftNanos;
      sum += d;
      sumOfSquares += d * d;
    }
    shiftedSum = sum;
    shiftedSumOfSquares = sumOfSquares;
    insertionsSinceExactSums = 0;
  }

  /** φ at {@code nowNanos}; see the class doc. Finite and at least 0. */
  @Override
  public double suspicion(long nowNanos) {
    double silence = Math.max(0, nowNanos - lastArrivalNanos);
    double mean = meanIntervalNanos() + config.acceptablePauseNanos;
    double sd = Math.max(stdDeviationNanos(), config.minStdDeviationNanos);
    return phi(silence, mean, sd);
  }

  @Override
  public double convictionLevel() {
    return config.threshold;
  }

  @Override
  public double drainLevel() {
    return config.drainLevel;
  }

  @Override
  public String describe() {
    return config.describe();
  }

  /** The mean of the remembered inter-arrival times, nanoseconds (before the acceptable pause). */
  double meanIntervalNanos() {
    return shiftNanos + shiftedSum / count;
  }

  /** The population standard deviation of the remembered inter-arrival times, nanoseconds (no floor). */
  double stdDeviationNanos() {
    double shiftedMean = shiftedSum / count;
    double variance = shiftedSumOfSquares / count - shiftedMean * shiftedMean;
    return variance > 0 ? Math.sqrt(variance) : 0; // rounding can make a zero variance slightly negative
  }

  /** How many inter-arrival times are remembered: at most {@code maxSampleSize}. */
  int sampleCount() {
    return count;
  }

  /**
   * φ for a silence of {@code silence} against a normal distribution of mean {@code mean} and standard
   * deviation {@code sd} (all in the same unit; {@code sd > 0}), in the logistic approximation, computed
   * as the softplus of z so that it is finite and never NaN. See the class doc.
   */
  static double phi(double silence, double mean, double sd) {
    double y = (silence - mean) / sd;
    y = Math.max(-MAX_STANDARD_SCORE, Math.min(MAX_STANDARD_SCORE, y));
    double z = y * (LOGISTIC_LINEAR + LOGISTIC_CUBIC * y * y);
    // -ln(1 - F) = ln(1 + e^z): for z > 0 factor out e^z so that nothing overflows.
    double minusLnSurvival = z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z));
    return minusLnSurvival / LN_10;
  }

  /** The standardized silence y at which φ reaches {@code level} ({@code level > 0}). */
  static double standardScoreAt(double level) {
    double s = level * LN_10; // solve ln(1 + e^z) = s for z, then z(y) = z for y
    double z = s + Math.log(-Math.expm1(-s));
    double lo = -Math.abs(z) / LOGISTIC_LINEAR - 1;
    double hi = Math.abs(z) / LOGISTIC_LINEAR + 1; // |z(y)| >= 1.5976 |y|, so the root lies within
    for (int i = 0; i < 200 && lo < hi; i++) {
      double mid = (lo + hi) / 2;
      if (mid <= lo || mid >= hi) {
        break;
      }
      if (mid * (LOGISTIC_LINEAR + LOGISTIC_CUBIC * mid * mid) < z) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return (lo + hi) / 2;
  }

  /**
   * The validated, immutable settings of a {@link PhiAccrualDetector}; a factory of detectors. Built
   * by {@link PhiAccrualDetector#builder()}.
   */
  public static final class Config {
    private final double threshold;
    private final double drainLevel;
    private final long acceptablePauseNanos;
    private final long minStdDeviationNanos;
    private final int maxSampleSize;
    private final long heartbeatIntervalNanos;

    private Config(Builder b) {
      this.threshold = b.threshold;
      this.drainLevel = b.drainLevel;
      this.acceptablePauseNanos = b.acceptablePauseNanos;
      this.minStdDeviationNanos = b.minStdDeviationNanos;
      this.maxSampleSize = b.maxSampleSize;
      this.heartbeatIntervalNanos = b.heartbeatIntervalNanos;
    }

    /** A new detector whose clock starts at {@code startNanos}, as if a frame arrived then. */
    public PhiAccrualDetector newDetector(long startNanos) {
      return new PhiAccrualDetector(this, startNanos);
    }

    /** The φ that convicts. */
    public double threshold() {
      return threshold;
    }

    /** The φ that drains. */
    public double drainLevel() {
      return drainLevel;
    }

    /** The silence beyond the mean interval that costs almost no suspicion. */
    public Duration acceptableHeartbeatPause() {
      return Duration.ofNanos(acceptablePauseNanos);
    }

    /** The floor under the standard deviation. */
    public Duration minStdDeviation() {
      return Duration.ofNanos(minStdDeviationNanos);
    }

    /** How many inter-arrival times are remembered. */
    public int maxSampleSize() {
      return maxSampleSize;
    }

    /** The interval the workers heartbeat at: the seed of the history and the floor of every sample. */
    public Duration heartbeatInterval() {
      return Duration.ofNanos(heartbeatIntervalNanos);
    }

    /**
     * The silence that convicts once a steady stream at the heartbeat interval has filled the history
     * (μ = interval, σ' = floor): interval + acceptable pause + y<sub>θ</sub>·floor. Jitter and pauses
     * in the history only lengthen it; this is the shortest it gets, and the one the heartbeat interval
     * must fit several times into. Rounded up to whole milliseconds.
     */
    public Duration detectionWindow() {
      return silenceToReach(threshold);
    }

    /** As {@link #detectionWindow()}, for the drain level. */
    public Duration drainWindow() {
      return silenceToReach(drainLevel);
    }

    /** Rounded up to whole milliseconds, the unit the worker server's settings take. */
    private Duration silenceToReach(double level) {
      double nanos = heartbeatIntervalNanos + acceptablePauseNanos
          + standardScoreAt(level) * minStdDeviationNanos;
      return Duration.ofMillis((long) Math.ceil(Math.max(0, nanos) / 1e6));
    }

    /** For logs, with every setting and the steady-state detection window. */
    public String describe() {
      return "phi-accrual(threshold=" + threshold + ", drain at " + drainLevel + ", acceptable pause="
          + Duration.ofNanos(acceptablePauseNanos).toMillis() + "ms, min sd="
          + Duration.ofNanos(minStdDeviationNanos).toMillis() + "ms, samples=" + maxSampleSize
          + ", interval=" + Duration.ofNanos(heartbeatIntervalNanos).toMillis() + "ms; convicts after "
          + detectionWindow().toMillis() + "ms of silence on a steady link)";
    }

    @Override
    public String toString() {
      return describe();
    }
  }

  /**
   * Builds a {@link Config}; every setter validates its argument and says the rule it broke, and
   * {@link #build()} checks the rule between arguments (drain level at most the threshold).
   */
  public static final class Builder {
    private double threshold = DEFAULT_THRESHOLD;
    private double drainLevel = DEFAULT_DRAIN_LEVEL;
    private long acceptablePauseNanos = DEFAULT_ACCEPTABLE_HEARTBEAT_PAUSE.toNanos();
    private long minStdDeviationNanos = DEFAULT_MIN_STD_DEVIATION.toNanos();
    private int maxSampleSize = DEFAULT_MAX_SAMPLE_SIZE;
    private long heartbeatIntervalNanos = DEFAULT_HEARTBEAT_INTERVAL.toNanos();

    private Builder() {}

    /** @throws IllegalArgumentException if not a finite number above 0 */
    public Builder threshold(double phi) {
      this.threshold = positiveFinite("threshold", phi);
      return this;
    }

    /**
     * @throws IllegalArgumentException if not a finite number above 0 (whether it is at most the
     *     threshold is checked by {@link #build()})
     */
    public Builder drainLevel(double phi) {
      this.drainLevel = positiveFinite("drainLevel", phi);
      return this;
    }

    /** @throws IllegalArgumentException if null or negative, or longer than a long of nanoseconds */
    public Builder acceptableHeartbeatPause(Duration pause) {
      if (pause == null || pause.isNegative()) {
        throw new IllegalArgumentException("acceptableHeartbeatPause must be zero or positive, got " + pause);
      }
      this.acceptablePauseNanos = nanos("acceptableHeartbeatPause", pause);
      return this;
    }

    /** @throws IllegalArgumentException if null, zero or negative, or longer than a long of nanoseconds */
    public Builder minStdDeviation(Duration floor) {
      this.minStdDeviationNanos = nanos("minStdDeviation", positive("minStdDeviation", floor));
      return this;
    }

    /** @throws IllegalArgumentException if below 2 (a deviation needs two samples) or above {@link #MAX_SAMPLE_SIZE} */
    public Builder maxSampleSize(int samples) {
      if (samples < 2 || samples > MAX_SAMPLE_SIZE) {
        throw new IllegalArgumentException("maxSampleSize must be between 2 (a standard deviation needs "
            + "two samples) and " + MAX_SAMPLE_SIZE + ", got " + samples);
      }
      this.maxSampleSize = samples;
      return this;
    }

    /** @throws IllegalArgumentException if null, zero or negative, or longer than a long of nanoseconds */
    public Builder heartbeatInterval(Duration interval) {
      this.heartbeatIntervalNanos = nanos("heartbeatInterval", positive("heartbeatInterval", interval));
      return this;
    }

    /** @throws IllegalArgumentException if the drain level is above the threshold */
    public Config build() {
      if (drainLevel > threshold) {
        throw new IllegalArgumentException(
            "drainLevel must be at most the threshold (" + threshold + "), got " + drainLevel);
      }
      return new Config(this);
    }

    private static double positiveFinite(String name, double value) {
      if (!(value > 0) || Double.isInfinite(value)) {
        throw new IllegalArgumentException(name + " must be a finite number above 0, got " + value);
      }
      return value;
    }

    private static Duration positive(String name, Duration d) {
      if (d == null || d.isZero() || d.isNegative()) {
        throw new IllegalArgumentException(name + " must be positive, got " + d);
      }
      return d;
    }

    private static long nanos(String name, Duration d) {
      try {
        return d.toNanos();
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException(
            name + " must fit in a long of nanoseconds (about 292 years), got " + d, e);
      }
    }
  }
}

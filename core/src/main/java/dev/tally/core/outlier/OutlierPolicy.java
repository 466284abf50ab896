package dev.tally.core.outlier;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * The thresholds of an {@link OutlierDetector}: when a worker that is alive but bad is ejected, for how
 * long, and how much of the fleet may be out at once. Modelled on Envoy's outlier detection
 * (envoyproxy.io, "Outlier detection" architecture overview and {@code config.cluster.v3.OutlierDetection}),
 * with the differences said below.
 *
 * <h2>The three rules</h2>
 *
 * <ol>
 *   <li><b>Consecutive failures.</b> A worker whose last {@link #consecutiveFailures()} attempts all ended
 *       in an infrastructure failure is ejected. Default {@value #DEFAULT_CONSECUTIVE_FAILURES}, as Envoy's
 *       {@code consecutive_5xx}: fewer and one unlucky streak of flaky timeouts ejects a good worker;
 *       more and a worker failing every case in a few milliseconds eats that many more attempts (each
 *       one a retry taken from some case's budget) before it is stopped.
 *   <li><b>Failure rate against the fleet.</b> Over a worker's last {@link #window()} attempts, its
 *       infrastructure-failure rate {@code r} is compared with the pooled rate {@code f} of the
 *       <em>other</em> workers in service; it is ejected when
 *       {@code r > max(f * failureRateFactor, f + failureRateMargin)}. The margin governs a healthy fleet
 *       ({@code f} near 0, where any ratio is noise); the factor governs a fleet that is failing for a
 *       shared reason (a run whose cases time out everywhere), where a worker only twice as bad as
 *       everybody else is not an outlier. Judged only while at least {@link #minWorkers()} workers in
 *       service (the judged one included) each have at least {@link #minAttempts()} attempts in their
 *       windows, so a cold start or a small fleet never ejects on noise.
 *   <li><b>Latency against the run.</b> For each case kind (the caller's choice; a run id is the natural
 *       one, because cases of one run are alike), a worker's median over its last {@link #window()}
 *       successes of that kind is compared with the median of the other in-service workers' successes of
 *       that kind, pooled; it is ejected when it exceeds both {@code latencyFactor} times that median and
 *       that median plus {@link #latencyMinExcess()}. Same minimum counts as rule 2, counted in successes
 *       of the kind.
 * </ol>
 *
 * <p><b>Why "the others" and not Envoy's mean minus stdev.</b> Envoy's success-rate rule ejects hosts
 * below {@code mean - 1.9 * stdev} of all hosts' rates, the outlier included. With {@code n} hosts and a
 * single outlier, that outlier sits exactly {@code sqrt(n - 1)} standard deviations from the mean however
 * bad it is, so with four workers (1.73 &lt; 1.9) it can never be ejected. Tally's fleets are small, so
 * each worker is compared with the rest of the fleet, which the outlier cannot drag along.
 *
 * <h2>Ejection</h2>
 *
 * <p>The {@code k}-th ejection of a worker lasts {@code min(baseEjection * k, maxEjection)}, as Envoy's
 * {@code base_ejection_time} and {@code max_ejection_time} (and with its defaults, 30 s and 300 s): a
 * worker broken for good costs at most one short burst of failed attempts per ejection, while a worker
 * that was only briefly unlucky is back soon. The count of ejections never decays while the worker stays
 * connected; it is forgotten when the worker leaves.
 *
 * <p><b>The share cap:</b> at most {@link #maxEjected(int) max(1, floor(fleetSize * maxEjectedShare))}
 * workers are ejected at once, where the fleet is every connected worker, ejected or not. The floor keeps
 * the share a true upper bound; the "at least one" (as in Envoy, which ejects "if no hosts have been
 * ejected" whatever its percentage) lets a fleet of one or two still stop a worker that fails everything:
 * a job that waits out an ejection loses time, a job that lands on such a worker loses an attempt. A worker
 * that qualifies while the cap is reached stays in service and the refusal is reported. Default share
 * {@value #DEFAULT_MAX_EJECTED_SHARE}: the cap exists for the day the detector itself is wrong (a shared
 * cause looking like many outliers), and on that day half the fleet still works. Envoy's 10% suits
 * hundreds of hosts; in a fleet of four it would be the "at least one" anyway.
 *
 * <h2>Defaults</h2>
 *
 * <ul>
 *   <li>consecutive failures {@value #DEFAULT_CONSECUTIVE_FAILURES};
 *   <li>window {@value #DEFAULT_WINDOW} attempts (per worker; and successes per worker and kind);
 *   <li>minimum attempts {@value #DEFAULT_MIN_ATTEMPTS}, minimum workers {@value #DEFAULT_MIN_WORKERS};
 *   <li>failure-rate factor {@value #DEFAULT_FAILURE_RATE_FACTOR}, margin {@value
 *       #DEFAULT_FAILURE_RATE_MARGIN};
 *   <li>latency factor {@value #DEFAULT_LATENCY_FACTOR}, minimum excess {@value
 *       #DEFAULT_LATENCY_MIN_EXCESS_MILLIS} ms;
 *   <li>base ejection {@value #DEFAULT_BASE_EJECTION_MILLIS} ms, max {@value #DEFAULT_MAX_EJECTION_MILLIS}
 *       ms; ejected share {@value #DEFAULT_MAX_EJECTED_SHARE}.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 */
public final class OutlierPolicy {
  /** Envoy's {@code consecutive_5xx} default; see rule 1 for what goes wrong either side of it. */
  public static final int DEFAULT_CONSECUTIVE_FAILURES = 5;

  /**
   * Attempts (and successes per kind) remembered per worker. Large enough that one failure moves the rate
   * by only 0.05; small enough that a worker that broke a minute ago is judged on how it is now, not on
   * the hour before.
   */
  public static final int DEFAULT_WINDOW = 20;

  /**
   * Attempts a worker needs in its window before its rate counts, for itself and for the fleet. A healthy
   * worker in a fleet failing 5% of attempts crosses the default threshold (0.35) in a given window of 10
   * attempts (4 failures) with a binomial probability of about 0.001, and in a full window of 20 (8
   * failures) with one of about 0.000003; fewer attempts than 10 and the chance climbs quickly (0.02 at 5).
   */
  public static final int DEFAULT_MIN_ATTEMPTS = 10;

  /**
   * Workers with enough attempts needed before rates or latencies are compared: the judged one and at
   * least two others, so "the fleet" is never a single other worker's luck.
   */
  public static final int DEFAULT_MIN_WORKERS = 3;

  /**
   * How many times the fleet's failure rate a worker must exceed. Governs only when the fleet itself fails
   * more than {@code margin / (factor - 1)} = 30% of attempts: then the trouble is shared, and a worker
   * must fail more than twice as often to stand out. At or above 50% the rule cannot fire at all.
   */
  public static final double DEFAULT_FAILURE_RATE_FACTOR = 2.0;

  /**
   * How far (in rate) above the fleet a worker must be. Governs a healthy fleet: with the fleet at 0.02 a
   * worker must fail more than 32% of its attempts. A worker failing every second case is caught here
   * even when its failures never line up {@value #DEFAULT_CONSECUTIVE_FAILURES} in a row.
   */
  public static final double DEFAULT_FAILURE_RATE_MARGIN = 0.3;

  /**
   * How many times the run's median duration a worker's median must exceed. Machines of one fleet differ
   * by up to 2-3x (older CPUs, noisy neighbours) and that is capacity, not failure; 5x is a worker that is
   * swapping, throttled or talking to a sick endpoint.
   */
  public static final double DEFAULT_LATENCY_FACTOR = 5.0;

  /**
   * How many milliseconds above the run's median a worker's median must also be. For cases that take a
   * few milliseconds, 5x is process start-up and scheduler jitter; ejecting a worker to save 20 ms per
   * case would cost far more capacity than it saves.
   */
  public static final long DEFAULT_LATENCY_MIN_EXCESS_MILLIS = 100;

  /** Envoy's {@code base_ejection_time} default: long enough to stop a burst, short enough to forgive. */
  public static final long DEFAULT_BASE_EJECTION_MILLIS = 30_000;

  /** Envoy's {@code max_ejection_time} default: a worker broken for good is retried every 5 minutes. */
  public static final long DEFAULT_MAX_EJECTION_MILLIS = 300_000;

  /** Half the fleet: see "the share cap" above. */
  public static final double DEFAULT_MAX_EJECTED_SHARE = 0.5;

  // Absorbs the binary rounding of fleetSize * share (0.29 * 100 is 28.999999999999996), so that the floor
  // of a product that is an integer in decimal is that integer.
  private static final double SHARE_EPSILON = 1e-9;

  private final int consecutiveFailures;
  private final int window;
  private final int minAttempts;
  private final int minWorkers;
  private final double failureRateFactor;
  private final double failureRateMargin;
  private final double latencyFactor;
  private final Duration latencyMinExcess;
  private final Duration baseEjection;
  private final Duration maxEjection;
  private final double maxEjectedShare;

  private OutlierPolicy(Builder b) {
    this.consecutiveFailures = b.consecutiveFailures;
    this.window = b.window;
    this.minAttempts = b.minAttempts;
    this.minWorkers = b.minWorkers;
    this.failureRateFactor = b.failureRateFactor;
    this.failureRateMargin = b.failureRateMargin;
    this.latencyFactor = b.latencyFactor;
    this.latencyMinExcess = b.latencyMinExcess;
    this.baseEjection = b.baseEjection;
    this.maxEjection = b.maxEjection;
    this.maxEjectedShare = b.maxEjectedShare;
  }

  /** The default policy. */
  public static OutlierPolicy defaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * How long the {@code timesEjected}-th ejection lasts: {@code min(baseEjection * timesEjected,
   * maxEjection)}.
   *
   * @param timesEjected how many times the worker has been ejected, this ejection included; at least 1
   * @return the ejection's length in milliseconds
   * @throws IllegalArgumentException if {@code timesEjected < 1}
   */
  public long ejectionMillis(int timesEjected) {
    if (timesEjected < 1) {
      throw new IllegalArgumentException("timesEjected must be >= 1, got " + timesEjected);
    }
    long base = baseEjection.toMillis();
    long max = maxEjection.toMillis();
    // Compared before multiplying, so no count of ejections can overflow.
    return timesEjected >= max / base ? max : Math.min(base * timesEjected, max);
  }

  /**
   * The most workers that may be ejected at once in a fleet of {@code fleetSize}:
   * {@code max(1, floor(fleetSize * maxEjectedShare))}, and 0 for an empty fleet.
   *
   * @throws IllegalArgumentException if {@code fleetSize < 0}
   */
  public int maxEjected(int fleetSize) {
    if (fleetSize < 0) {
      throw new IllegalArgumentException("fleetSize must be >= 0, got " + fleetSize);
    }
    if (fleetSize == 0) {
      return 0;
    }
    return Math.max(1, (int) Math.floor(fleetSize * maxEjectedShare + SHARE_EPSILON));
  }

  public int consecutiveFailures() {
    return consecutiveFailures;
  }

  public int window() {
    return window;
  }

  public int minAttempts() {
    return minAttempts;
  }

  public int minWorkers() {
    return minWorkers;
  }

  public double failureRateFactor() {
    return failureRateFactor;
  }

  public double failureRateMargin() {
    return failureRateMargin;
  }

  public double latencyFactor() {
    return latencyFactor;
  }

  public Duration latencyMinExcess() {
    return latencyMinExcess;
  }

  public Duration baseEjection() {
    return baseEjection;
  }

  public Duration maxEjection() {
    return maxEjection;
  }

  public double maxEjectedShare() {
    return maxEjectedShare;
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT,
        "outlier-policy(consecutive=%d, window=%d, minAttempts=%d, minWorkers=%d, rate>max(fleet*%.2f, fleet+%.2f),"
            + " latency>max(median*%.2f, median+%dms), ejection=%dms*k<=%dms, share=%.2f)",
        consecutiveFailures, window, minAttempts, minWorkers, failureRateFactor, failureRateMargin,
        latencyFactor, latencyMinExcess.toMillis(), baseEjection.toMillis(), maxEjection.toMillis(),
        maxEjectedShare);
  }

  /** Builds an {@link OutlierPolicy}; every setter validates its argument. Not thread-safe. */
  public static final class Builder {
    private int consecutiveFailures = DEFAULT_CONSECUTIVE_FAILURES;
    private int window = DEFAULT_WINDOW;
    private int minAttempts = DEFAULT_MIN_ATTEMPTS;
    private int minWorkers = DEFAULT_MIN_WORKERS;
    private double failureRateFactor = DEFAULT_FAILURE_RATE_FACTOR;
    private double failureRateMargin = DEFAULT_FAILURE_RATE_MARGIN;
    private double latencyFactor = DEFAULT_LATENCY_FACTOR;
    private Duration latencyMinExcess = Duration.ofMillis(DEFAULT_LATENCY_MIN_EXCESS_MILLIS);
    private Duration baseEjection = Duration.ofMillis(DEFAULT_BASE_EJECTION_MILLIS);
    private Duration maxEjection = Duration.ofMillis(DEFAULT_MAX_EJECTION_MILLIS);
    private double maxEjectedShare = DEFAULT_MAX_EJECTED_SHARE;

    private Builder() {}

    /**
     * Sets how many infrastructure failures in a row eject a worker (rule 1).
     *
     * @throws IllegalArgumentException if {@code n < 1}
     */
    public Builder consecutiveFailures(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("consecutive failures must be >= 1 (one failure is the least that can"
            + " eject), got " + n);
      }
      this.consecutiveFailures = n;
      return this;
    }

    /**
     * Sets how many recent attempts per worker (and successes per worker and kind) are remembered.
     *
     * @throws IllegalArgumentException if {@code attempts < 1}
     */
    public Builder window(int attempts) {
      if (attempts < 1) {
        throw new IllegalArgumentException("window must hold >= 1 attempt, got " + attempts);
      }
      this.window = attempts;
      return this;
    }

    /**
     * Sets how many attempts (or successes of a kind) a worker needs in its window to be judged or to count
     * in the fleet's figure.
     *
     * @throws IllegalArgumentException if {@code attempts < 1}; {@link #build()} also checks it against
     *     the window
     */
    public Builder minAttempts(int attempts) {
      if (attempts < 1) {
        throw new IllegalArgumentException("minimum attempts must be >= 1, got " + attempts);
      }
      this.minAttempts = attempts;
      return this;
    }

    /**
     * Sets how many workers with enough attempts are needed, the judged one included, before rates or
     * latencies are compared.
     *
     * @throws IllegalArgumentException if {@code workers < 2}
     */
    public Builder minWorkers(int workers) {
      if (workers < 2) {
        throw new IllegalArgumentException("minimum workers must be >= 2 (a worker is judged against the others,"
            + " so at least one other is needed), got " + workers);
      }
      this.minWorkers = workers;
      return this;
    }

    /**
     * Sets how many times the fleet's failure rate a worker's rate must exceed (rule 2).
     *
     * @throws IllegalArgumentException if {@code factor} is not a finite number >= 1
     */
    public Builder failureRateFactor(double factor) {
      if (!Double.isFinite(factor) || factor < 1.0) {
        throw new IllegalArgumentException("failure-rate factor must be a finite number >= 1 (a worker is an outlier"
            + " only when it fails more often than the fleet), got " + factor);
      }
      this.failureRateFactor = factor;
      return this;
    }

    /**
     * Sets how far above the fleet's failure rate a worker's rate must be (rule 2).
     *
     * @throws IllegalArgumentException unless {@code 0 < margin < 1}
     */
    public Builder failureRateMargin(double margin) {
      if (!(margin > 0.0 && margin < 1.0)) {
        throw new IllegalArgumentException("failure-rate margin must be > 0 (else one failure in a clean fleet"
            + " ejects) and < 1 (else no rate can exceed it), got " + margin);
      }
      this.failureRateMargin = margin;
      return this;
    }

    /**
     * Sets how many times the run's median a worker's median duration must exceed (rule 3).
     *
     * @throws IllegalArgumentException if {@code factor} is not a finite number > 1
     */
    public Builder latencyFactor(double factor) {
      if (!Double.isFinite(factor) || factor <= 1.0) {
        throw new IllegalArgumentException("latency factor must be a finite number > 1 (at 1 half the fleet is"
            + " slower than its median), got " + factor);
      }
      this.latencyFactor = factor;
      return this;
    }

    /**
     * Sets how far above the run's median a worker's median duration must also be (rule 3).
     *
     * @throws IllegalArgumentException if {@code excess} is negative
     */
    public Builder latencyMinExcess(Duration excess) {
      Objects.requireNonNull(excess, "excess");
      if (excess.isNegative()) {
        throw new IllegalArgumentException("latency minimum excess must be >= 0, got " + excess);
      }
      this.latencyMinExcess = excess;
      return this;
    }

    /**
     * Sets the length of a first ejection.
     *
     * @throws IllegalArgumentException if {@code base} is shorter than one millisecond
     */
    public Builder baseEjection(Duration base) {
      Objects.requireNonNull(base, "base");
      if (base.toMillis() < 1) {
        throw new IllegalArgumentException("base ejection must be >= 1 ms (a shorter one is no ejection), got "
            + base);
      }
      this.baseEjection = base;
      return this;
    }

    /**
     * Sets the longest ejection.
     *
     * @throws IllegalArgumentException if {@code max} is shorter than one millisecond; {@link #build()}
     *     also checks it against the base
     */
    public Builder maxEjection(Duration max) {
      Objects.requireNonNull(max, "max");
      if (max.toMillis() < 1) {
        throw new IllegalArgumentException("max ejection must be >= 1 ms, got " + max);
      }
      this.maxEjection = max;
      return this;
    }

    /**
     * Sets the share of the fleet that may be ejected at once (at least one worker whatever the share).
     *
     * @throws IllegalArgumentException unless {@code 0 < share <= 1}
     */
    public Builder maxEjectedShare(double share) {
      if (!(share > 0.0 && share <= 1.0)) {
        throw new IllegalArgumentException("max ejected share must be > 0 and <= 1 (a share of the fleet), got "
            + share);
      }
      this.maxEjectedShare = share;
      return this;
    }

    /**
     * Builds the policy.
     *
     * @throws IllegalArgumentException if the minimum attempts exceed the window (no worker could ever be
     *     judged), or the max ejection is shorter than the base
     */
    public OutlierPolicy build() {
      if (minAttempts > window) {
        throw new IllegalArgumentException("minimum attempts (" + minAttempts + ") must be <= window (" + window
            + "), or no worker could ever be judged");
      }
      if (maxEjection.toMillis() < baseEjection.toMillis()) {
        throw new IllegalArgumentException("max ejection (" + maxEjection + ") must be >= base ejection ("
            + baseEjection + ")");
      }
      return new OutlierPolicy(this);
    }
  }
}

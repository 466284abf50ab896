package dev.tally.core;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Every rule about what happens to a job whose attempt ended retryably: whether it goes back to the queue
 * or ends {@code failed}, after how long it may be leased again, and whether the attempt counts against
 * the job's limit. One object, so that the scheduler (which computes the backoff) and every store (which
 * decides, inside the transaction that ends the lease, whether the job ends) apply the same rules.
 *
 * <h2>The rules</h2>
 *
 * <ol>
 *   <li><b>Hand-backs are free.</b> A job a worker gave back without starting it ({@link
 *       InfraFailure.Kind#HANDED_BACK}: the worker is draining) goes back at once and its attempt is not
 *       charged: a rolling restart must not use up a case's attempts. So is a rate-limited attempt ({@link
 *       InfraFailure.Kind#RATE_LIMITED}: the endpoint's 429 or 503 is not the case's failure); the run's
 *       governor, not the job's backoff, decides when the run's fleet asks the endpoint again.
 *   <li><b>Poison.</b> A case whose worker died while running it {@link #poisonLimit()} times in a row
 *       (the job's <em>lost streak</em>) ends failed as poison instead of taking the whole fleet down. An
 *       attempt that ran and ended on a live worker (a timeout, a signal, an evaluator crash) resets the
 *       streak; a loss that says nothing about the case (its worker lost while it was only queued there
 *       or not known to run, an expired lease, a coordinator restart) leaves it as it is. 0 turns the
 *       judgement off.
 *   <li><b>Timeouts.</b> A timeout is most often the case's own (a test that hangs hangs everywhere), so a
 *       job that timed out more than its run's {@link AttemptLimits#timeoutRetries()} times ends failed
 *       ("timed out") instead of costing the attempt limit's worth of case timeouts. A worker whose cases
 *       time out where others finish is the outlier detector's business, not this policy's.
 *   <li><b>Attempt limit.</b> A job that has used its run's {@link AttemptLimits#maxAttempts()} ends
 *       failed, with its last failure.
 *   <li>Otherwise the job goes back to the queue, not before its {@linkplain #backoff backoff}, and its
 *       next attempt goes to another worker than the one it just failed on whenever another worker asks
 *       for work ({@link dev.tally.core.store.BatchRules} leases that way).
 * </ol>
 *
 * <p><b>Backoff</b> is exponential with full jitter: the delay before attempt {@code n + 1} is drawn
 * uniformly from {@code [0, min(max, base * 2^(n-1))]} (Brooker, "Exponential Backoff And Jitter", AWS
 * Architecture Blog, 2015). Jitter matters because a dead worker's jobs all fail at once; without it they
 * would land on the same survivors together. Two exceptions go out at once: a hand-back, and a job's first
 * loss with its worker (waiting would only add to the failover time; its later retries are spaced like
 * any other).
 *
 * <p>Defaults: base {@value #DEFAULT_BASE_MILLIS} ms, max {@value #DEFAULT_MAX_MILLIS} ms, poison limit
 * {@value #DEFAULT_POISON_LIMIT}. Too low a base hammers a fleet failing for a shared reason, too high a
 * one slows every redelivery; a poison limit too low condemns a case unlucky enough to share a dying
 * worker twice, too high a one lets a poison case kill that many more workers.
 *
 * <p>Immutable and thread-safe; randomness comes from the caller, so a simulation can seed it.
 */
public final class RedeliveryPolicy {
  /** Default first backoff: short, because most redeliveries follow one worker's death. */
  public static final long DEFAULT_BASE_MILLIS = 100;
  /** Default cap: a job never waits more than this between attempts. */
  public static final long DEFAULT_MAX_MILLIS = 10_000;
  /** Three deaths in a row: one is an accident, two a coincidence, three a pattern. */
  public static final int DEFAULT_POISON_LIMIT = 3;

  private final Duration base;
  private final Duration max;
  private final int poisonLimit;

  private RedeliveryPolicy(Builder b) {
    this.base = b.base;
    this.max = b.max;
    this.poisonLimit = b.poisonLimit;
  }

  /** The default policy. */
  public static RedeliveryPolicy defaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** Where the case was when its worker was lost, as far as the coordinator knows. */
  public enum CaseState {
    /** Running in one of the worker's slots. */
    RUNNING,
    /** Waiting in the worker's queue behind its running cases. */
    QUEUED,
    /** Not known (the lease expired unrenewed, the coordinator restarted, or the attempt ended otherwise). */
    UNKNOWN
  }

  /**
   * A run's limits, kept with the run.
   *
   * @param maxAttempts attempts a job gets before it ends failed; at least 1
   * @param timeoutRetries how many times a job that timed out is tried again before it ends failed; at
   *     least 0
   */
  public record AttemptLimits(int maxAttempts, int timeoutRetries) {
    /** Enough attempts to ride out several worker deaths, few enough to stop a poison case. */
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    /** One more try on another worker: a timeout is most often the case's own. */
    public static final int DEFAULT_TIMEOUT_RETRIES = 1;

    /**
     * @throws IllegalArgumentException if {@code maxAttempts < 1} or {@code timeoutRetries < 0}
     */
    public AttemptLimits {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, got " + maxAttempts);
      }
      if (timeoutRetries < 0) {
        throw new IllegalArgumentException("timeoutRetries must be >= 0, got " + timeoutRetries);
      }
    }

    /** The default limits. */
    public static AttemptLimits defaults() {
      return new AttemptLimits(DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT_RETRIES);
    }
  }

  /**
   * What a job has been through, as its store row says, before the attempt that just ended is judged.
   *
   * @param attempts attempts charged so far, including the one that just ended
   * @param lostStreak attempts in a row that ended with their worker lost while the case ran
   * @param timeouts attempts that ended in a timeout, not counting the one that just ended
   */
  public record JobHistory(int attempts, int lostStreak, int timeouts) {}

  /** How a judged job continues. */
  public enum Ending {
    /** Back to the queue, after its backoff. */
    REQUEUED,
    /** Ended failed: it used its run's attempts. */
    OUT_OF_ATTEMPTS,
    /** Ended failed: it took down {@link #poisonLimit()} workers in a row. */
    POISON,
    /** Ended failed: it timed out more than its run's timeout retries. */
    TIMED_OUT;

    /** Whether the job ends ({@code failed}) rather than going back to the queue. */
    public boolean terminal() {
      return this != REQUEUED;
    }
  }

  /**
   * The judgement of one failed attempt: how the job continues and its history after it.
   *
   * @param ending how the job continues
   * @param history the job's attempts, lost streak and timeouts to store (a hand-back un-charges its attempt)
   * @param failureReason why the job ended failed, for its attempt history; null when it is requeued
   */
  public record Judgement(Ending ending, JobHistory history, String failureReason) {}

  /**
   * Judges an attempt that ended with {@code failure}.
   *
   * @param before the job's history before this judgement (its attempts include the one that ended)
   * @param failure why the attempt ended
   * @param where where the case was when it ended, as far as the coordinator knows
   * @param limits the job's run's limits
   * @return the judgement; never null
   */
  public Judgement judge(JobHistory before, InfraFailure failure, CaseState where, AttemptLimits limits) {
    Objects.requireNonNull(before, "before");
    Objects.requireNonNull(failure, "failure");
    Objects.requireNonNull(where, "where");
    Objects.requireNonNull(limits, "limits");
    InfraFailure.Kind kind = failure.kind();
    if (!chargesAttempt(kind)) {
      JobHistory after = new JobHistory(Math.max(0, before.attempts() - 1), before.lostStreak(), before.timeouts());
      return new Judgement(Ending.REQUEUED, after, null);
    }
    int lostStreak = before.lostStreak();
    if (kind == InfraFailure.Kind.WORKER_LOST && where == CaseState.RUNNING) {
      lostStreak++;
    } else if (kind == InfraFailure.Kind.TIMEOUT || kind == InfraFailure.Kind.SIGNALED
        || kind == InfraFailure.Kind.EVALUATOR_CRASHED) {
      lostStreak = 0; // the case ran and ended without taking its worker down
    }
    int timeouts = before.timeouts() + (kind == InfraFailure.Kind.TIMEOUT ? 1 : 0);
    JobHistory after = new JobHistory(before.attempts(), lostStreak, timeouts);
    String ending = endingName(kind);
    if (poisonLimit > 0 && lostStreak >= poisonLimit) {
      return new Judgement(Ending.POISON, after, "poison: " + lostStreak
          + " attempts in a row ended with their worker lost while the case ran; the last: " + failure.detail());
    }
    if (kind == InfraFailure.Kind.TIMEOUT && timeouts > limits.timeoutRetries()) {
      return new Judgement(Ending.TIMED_OUT, after, "timed out " + times(timeouts) + " (retried at most "
          + times(limits.timeoutRetries()) + "); the last: " + withDetail(ending, failure.detail()));
    }
    if (before.attempts() >= limits.maxAttempts()) {
      return new Judgement(Ending.OUT_OF_ATTEMPTS, after, "out of attempts (" + before.attempts() + " of "
          + limits.maxAttempts() + "); the last ended with " + withDetail(ending, failure.detail()));
    }
    return new Judgement(Ending.REQUEUED, after, null);
  }

  /**
   * The backoff before the job is offered again.
   *
   * @param failedAttempt the attempt that just ended, 1-based
   * @param kind why it ended
   * @param random the random source (seeded in simulation)
   * @return a delay in {@code [0, min(max, base * 2^(failedAttempt-1))]}; zero for a hand-back and for a
   *     first attempt lost with its worker
   * @throws IllegalArgumentException if {@code failedAttempt < 1}
   */
  public Duration backoff(int failedAttempt, InfraFailure.Kind kind, RandomGenerator random) {
    if (failedAttempt < 1) {
      throw new IllegalArgumentException("failedAttempt must be >= 1, got " + failedAttempt);
    }
    if (!chargesAttempt(kind) || (kind == InfraFailure.Kind.WORKER_LOST && failedAttempt == 1)) {
      return Duration.ZERO;
    }
    int shift = Math.min(failedAttempt - 1, 30);
    long ceiling = Math.min(max.toMillis(), base.toMillis() << shift);
    if (ceiling <= 0) {
      return Duration.ZERO;
    }
    return Duration.ofMillis(random.nextLong(ceiling + 1));
  }

  /** Whether an attempt that ended this way counts against the job's attempt limit. */
  public static boolean chargesAttempt(InfraFailure.Kind kind) {
    return kind != InfraFailure.Kind.HANDED_BACK && kind != InfraFailure.Kind.RATE_LIMITED;
  }

  /** An attempt's ending as its history stores it: the failure kind in lower case, e.g. {@code worker_lost}. */
  public static String endingName(InfraFailure.Kind kind) {
    return kind.name().toLowerCase(Locale.ROOT);
  }

  private static String times(int n) {
    return n == 1 ? "1 time" : n + " times";
  }

  private static String withDetail(String ending, String detail) {
    return detail.isEmpty() ? ending : ending + ": " + detail;
  }

  /** The first backoff. */
  public Duration base() {
    return base;
  }

  /** The longest backoff. */
  public Duration max() {
    return max;
  }

  /** Deaths in a row that make a case poison; 0 when the judgement is off. */
  public int poisonLimit() {
    return poisonLimit;
  }

  @Override
  public String toString() {
    return "RedeliveryPolicy[backoff " + base.toMillis() + ".." + max.toMillis() + " ms, poison after " + poisonLimit + "]";
  }

  /** Builds a {@link RedeliveryPolicy}; every setter validates its argument. Not thread-safe. */
  public static final class Builder {
    private Duration base = Duration.ofMillis(DEFAULT_BASE_MILLIS);
    private Duration max = Duration.ofMillis(DEFAULT_MAX_MILLIS);
    private int poisonLimit = DEFAULT_POISON_LIMIT;

    private Builder() {}

    /**
     * Sets the first backoff.
     *
     * @throws IllegalArgumentException if {@code base} is negative
     */
    public Builder backoffBase(Duration base) {
      Objects.requireNonNull(base, "base");
      if (base.isNegative()) {
        throw new IllegalArgumentException("backoff base must be >= 0, got " + base);
      }
      this.base = base;
      return this;
    }

    /**
     * Sets the longest backoff.
     *
     * @throws IllegalArgumentException if {@code max} is negative
     */
    public Builder backoffMax(Duration max) {
      Objects.requireNonNull(max, "max");
      if (max.isNegative()) {
        throw new IllegalArgumentException("backoff max must be >= 0, got " + max);
      }
      this.max = max;
      return this;
    }

    /**
     * Sets how many deaths in a row make a case poison.
     *
     * @throws IllegalArgumentException if {@code limit < 0}
     */
    public Builder poisonLimit(int limit) {
      if (limit < 0) {
        throw new IllegalArgumentException("poison limit must be >= 0 (0 turns it off), got " + limit);
      }
      this.poisonLimit = limit;
      return this;
    }

    /**
     * Builds the policy.
     *
     * @throws IllegalArgumentException if the backoff max is below its base
     */
    public RedeliveryPolicy build() {
      if (max.compareTo(base) < 0) {
        throw new IllegalArgumentException("backoff max (" + max + ") must be >= backoff base (" + base + ")");
      }
      return new RedeliveryPolicy(this);
    }
  }
}

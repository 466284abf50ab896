package dev.tally.core.detect;

import java.util.Locale;
import java.util.Objects;

/**
 * A connection's failure detector judged with the observer's {@link LocalHealth} and the worker's own
 * {@link PeerLag}: a silence of {@code s} is judged as the inner detector would judge a silence of {@code
 * max(0, s - allowance) / multiplier}, where the allowance is the worker's reported lag plus the
 * observer's own ({@link LocalHealth#ownLagAllowanceNanos}). Every level (drain and conviction) of every
 * detector kind is thus reached {@code multiplier} times later, plus the allowance; with a healthy observer
 * and a worker that reported no lag (multiplier 1, allowance 0) it judges exactly as the inner detector.
 *
 * <p>Stretching the silence rather than raising the threshold is what works for all three kinds alike: for
 * {@link FixedTimeoutDetector} and {@link MissedHeartbeatsDetector} the two are the same thing; for {@link
 * PhiAccrualDetector}, whose φ grows steeply with silence, a threshold twice as high would add only a
 * fraction of a second, while the stretched silence doubles its window as it does the others'. This is
 * Lifeguard's scaling of timeouts by the local health multiplier (Dadgar et al., 2017).
 *
 * <p>The bound: a truly dead worker whose socket stays open is convicted after at most {@code
 * window x (1 + maxScore) + maxAllowance + maxOwnAllowance} of silence, where {@code window} is what the
 * inner detector alone would wait ({@link LocalHealth.Config#maxScore()}, the {@link
 * PeerLag.Config#maxAllowance()} of {@link LocalHealth.Config#peerLag()} and of {@link
 * LocalHealth.Config#ownLag()}): 23 + 5 + 10 s with phi's defaults, on a machine starved enough to push
 * every one to its cap; on a healthy one, the detector's own 2.5 s.
 *
 * <p>Thread-safety: not thread-safe, like the detector it wraps; one instance per connection, touched
 * only on its event loop ({@link LocalHealth} itself is shared and thread-safe).
 */
public final class HealthAwareDetector implements FailureDetector {
  private final FailureDetector inner;
  private final LocalHealth health;
  private final PeerLag lag;
  private long lastArrivalNanos;

  /**
   * Wraps {@code inner}, whose clock started at {@code startNanos} (as if a frame arrived then).
   *
   * @throws NullPointerException if any argument is null
   */
  public HealthAwareDetector(FailureDetector inner, LocalHealth health, PeerLag lag, long startNanos) {
    this.inner = Objects.requireNonNull(inner, "inner");
    this.health = Objects.requireNonNull(health, "health");
    this.lag = Objects.requireNonNull(lag, "lag");
    this.lastArrivalNanos = startNanos;
  }

  @Override
  public void heartbeat(long nowNanos) {
    inner.heartbeat(nowNanos);
    if (nowNanos > lastArrivalNanos) {
      lastArrivalNanos = nowNanos;
    }
  }

  /**
   * The worker reported, in a frame that arrived at {@code nowNanos}, that its own timers ran up to
   * {@code lagNanos} late; see {@link PeerLag#report}.
   */
  public void lagReported(long nowNanos, long lagNanos) {
    lag.report(nowNanos, lagNanos);
  }

  /** The inner detector's suspicion at the judged time: see the class doc. */
  @Override
  public double suspicion(long nowNanos) {
    return inner.suspicion(judgedAt(nowNanos));
  }

  /** The inner detector's suspicion with no stretching: what the silence alone says. */
  public double rawSuspicion(long nowNanos) {
    return inner.suspicion(nowNanos);
  }

  /**
   * The time at which the inner detector is asked: the last arrival plus the silence since, less the
   * worker's allowance, divided by the multiplier.
   */
  long judgedAt(long nowNanos) {
    long silence = nowNanos - lastArrivalNanos;
    if (silence <= 0) {
      return nowNanos;
    }
    long forgiven = Math.max(0, silence - allowanceNanos(nowNanos));
    return lastArrivalNanos + (long) (forgiven / health.multiplier());
  }

  /** The multiplier the judgement at {@code nowNanos} uses (the observer's, shared). */
  public double multiplier() {
    return health.multiplier();
  }

  /** The silence forgiven at {@code nowNanos}: the worker's reported lag and the observer's own, in nanoseconds. */
  public long allowanceNanos(long nowNanos) {
    return lag.allowanceNanos(nowNanos) + health.ownLagAllowanceNanos(nowNanos);
  }

  @Override
  public double convictionLevel() {
    return inner.convictionLevel();
  }

  @Override
  public double drainLevel() {
    return inner.drainLevel();
  }

  /** The inner detector's description. */
  @Override
  public String describe() {
    return inner.describe();
  }

  /**
   * The description with the stretching in force at {@code nowNanos}, for the log line of a reap or a
   * drain: "...; local health x2, lag allowance 800 ms".
   */
  public String describe(long nowNanos) {
    double m = health.multiplier();
    long allowance = allowanceNanos(nowNanos);
    if (m == 1 && allowance == 0) {
      return inner.describe();
    }
    return inner.describe() + String.format(Locale.ROOT, "; local health x%.0f, lag allowance %d ms", m,
        allowance / 1_000_000);
  }
}

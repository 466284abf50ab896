package dev.tally.worker;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When a worker tries to reach its coordinator again, what it says about failing to, and when it gives
 * up: the reconnecting duty of the session, with no sockets and no clock (time is passed in as
 * monotonic nanoseconds), so that the simulation can drive it too.
 *
 * <p><b>Retries</b> follow a {@link Backoff} (exponential, full jitter), started over by every Welcome.
 * An attempt fails when the connection cannot be made, or closes (or times out) before a Welcome.
 *
 * <p><b>Logging at a falling rate.</b> A worker pointed at an unreachable or unresolvable address must
 * say so, but not every few seconds for days. Failed attempts are logged at WARN (the CLI shows WARN and
 * up) on the 1st, 2nd, 4th, 8th, ... failure since the last Welcome or loss, and at least once every
 * {@link #MAX_QUIET_WHILE_FAILING}; the others at DEBUG. Each line gives the attempt's number, how long
 * the worker has been without a coordinator, the reason and when it tries next. Once trouble was
 * reported, the next Welcome is reported at WARN too, so that a reader of the warnings sees it end.
 *
 * <p><b>Giving up.</b> With a give-up time, the worker ends ({@link Decision#giveUp()}) at the first
 * failed attempt at or past that long without a Welcome, counted from its start or from the loss of its
 * last session; the retry before that deadline is brought forward to it, so the last attempt is made
 * when the time is up. Without one it retries for as long as it runs.
 *
 * <p>Threading: not thread-safe; one instance belongs to one session, used on its thread.
 */
public final class Reconnector {
  private static final Logger log = LoggerFactory.getLogger(Reconnector.class);

  /**
   * The longest a worker that keeps failing to reach its coordinator stays quiet at WARN. The powers of
   * two alone would leave hours between lines after a day of failures (at the 5 s backoff cap, the
   * 8,192nd failure comes after about 11 hours); five minutes keeps a live sign in any log a person reads,
   * at twelve lines an hour.
   */
  public static final Duration MAX_QUIET_WHILE_FAILING = Duration.ofMinutes(5);

  /**
   * What to do after a failed attempt.
   *
   * @param giveUp true if the worker should stop trying (its give-up time has passed)
   * @param delayNanos when to try again, if not giving up; 0 or more
   * @param message if giving up, why, in one sentence for the user; else empty
   */
  public record Decision(boolean giveUp, long delayNanos, String message) {}

  private final String coordinator;
  private final Backoff backoff;
  private final Duration giveUpAfter;
  private long unwelcomedSinceNanos;
  private int failures;
  private long lastWarnNanos;
  private boolean troubleReported;

  /**
   * @param coordinator the coordinator's address, for the log ({@code host:port})
   * @param backoff the retry delays; this reconnector resets it on each Welcome
   * @param giveUpAfter how long without a Welcome ends the worker, or null for never
   * @throws IllegalArgumentException if {@code giveUpAfter} is zero or negative
   */
  public Reconnector(String coordinator, Backoff backoff, Duration giveUpAfter) {
    this.coordinator = Objects.requireNonNull(coordinator, "coordinator");
    this.backoff = Objects.requireNonNull(backoff, "backoff");
    if (giveUpAfter != null && (giveUpAfter.isZero() || giveUpAfter.isNegative())) {
      throw new IllegalArgumentException("giveUpAfter must be positive (or null for never), got " + giveUpAfter);
    }
    this.giveUpAfter = giveUpAfter;
  }

  /** The worker starts at {@code nowNanos}: the time without a Welcome counts from here. */
  public void started(long nowNanos) {
    unwelcomedSinceNanos = nowNanos;
    failures = 0;
    troubleReported = false;
  }

  /**
   * A welcomed session was lost at {@code nowNanos} (the caller logs the loss at WARN): the time without a
   * Welcome counts from here.
   *
   * @return how long to wait before the first attempt, ns
   */
  public long sessionLost(long nowNanos) {
    unwelcomedSinceNanos = nowNanos;
    failures = 0;
    troubleReported = true;
    return backoff.next().toNanos();
  }

  /**
   * An attempt failed at {@code nowNanos} because of {@code reason}: logs it (at the falling rate) and
   * decides what comes next.
   */
  public Decision attemptFailed(String reason, long nowNanos) {
    failures++;
    long withoutNanos = nowNanos - unwelcomedSinceNanos;
    if (giveUpAfter != null && withoutNanos >= giveUpAfter.toNanos()) {
      String message = "gave up: no Welcome from the coordinator at " + coordinator + " for " + human(withoutNanos)
          + " (give up after " + human(giveUpAfter.toNanos()) + "); " + failures
          + (failures == 1 ? " attempt" : " attempts") + " failed, the last: " + reason;
      return new Decision(true, 0, message);
    }
    long delayNanos = backoff.next().toNanos();
    if (giveUpAfter != null) {
      delayNanos = Math.min(delayNanos, unwelcomedSinceNanos + giveUpAfter.toNanos() - nowNanos);
    }
    boolean warn = Integer.bitCount(failures) == 1
        || nowNanos - lastWarnNanos >= MAX_QUIET_WHILE_FAILING.toNanos();
    String line = "cannot reach coordinator " + coordinator + " (attempt " + failures + ", "
        + human(withoutNanos) + " without one): " + reason + "; next attempt in " + human(delayNanos);
    if (warn) {
      lastWarnNanos = nowNanos;
      troubleReported = true;
      log.warn(line);
    } else {
      log.debug(line);
    }
    return new Decision(false, delayNanos, "");
  }

  /**
   * A Welcome came at {@code nowNanos}: the backoff and the count of failures start over.
   *
   * @return how long the worker was without a coordinator if that was reported at WARN (a failed attempt
   *     or a lost session), so the caller can say it is over; -1 if nothing was reported
   */
  public long welcomed(long nowNanos) {
    backoff.reset();
    long without = troubleReported ? nowNanos - unwelcomedSinceNanos : -1;
    failures = 0;
    troubleReported = false;
    return without;
  }

  /** Failed attempts since the last Welcome, loss or start. */
  public int failures() {
    return failures;
  }

  /** {@code 850 ms}, {@code 4.2 s}, {@code 3 min 20 s}: a duration for a person. */
  static String human(long nanos) {
    long millis = Math.max(0, nanos) / 1_000_000;
    if (millis < 1_000) {
      return millis + " ms";
    }
    if (millis < 60_000) {
      return String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
    }
    long seconds = millis / 1000;
    if (seconds < 3600) {
      return (seconds / 60) + " min " + (seconds % 60) + " s";
    }
    return (seconds / 3600) + " h " + (seconds % 3600 / 60) + " min";
  }
}

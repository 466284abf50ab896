package dev.tally.core.store;

import java.util.Objects;

/**
 * How one worker looked to its coordinator at one moment, for {@code tally status}.
 *
 * @param workerId the worker's stable id
 * @param name the worker's name
 * @param suspicion its failure detector's suspicion in words (e.g. "0.12 of 8.00"), or empty
 * @param acceptingWork false while its suspicion is at or above the drain level
 * @param ejectedUntilMillis epoch ms at which its outlier ejection ends, or 0 if it is not ejected
 * @param ejectionReason why it was last ejected (with the numbers), or null if never
 * @param timesEjected how many times it has been ejected
 * @param inFlight how many jobs it holds
 * @param reportedAtMillis when this was observed, epoch ms
 * @param leftReason null while the worker is connected; once it has left (closed, reaped, said goodbye,
 *     or its coordinator stopped), why
 * @param suspicionLevel the same suspicion as a number on its detector's scale (the drain and conviction
 *     levels are the detector's: {@code FailureDetector}), or NaN when unknown
 * @param slots how many cases it runs at once, or 0 when unknown
 */
public record WorkerStatus(
    String workerId,
    String name,
    String suspicion,
    boolean acceptingWork,
    long ejectedUntilMillis,
    String ejectionReason,
    int timesEjected,
    int inFlight,
    long reportedAtMillis,
    String leftReason,
    double suspicionLevel,
    int slots) {
  public WorkerStatus {
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(name, "name");
    suspicion = suspicion == null ? "" : suspicion;
  }

  /** A status without a numeric suspicion level (NaN): for reports from before the level was kept. */
  public WorkerStatus(String workerId, String name, String suspicion, boolean acceptingWork, long ejectedUntilMillis,
      String ejectionReason, int timesEjected, int inFlight, long reportedAtMillis, String leftReason) {
    this(workerId, name, suspicion, acceptingWork, ejectedUntilMillis, ejectionReason, timesEjected, inFlight,
        reportedAtMillis, leftReason, Double.NaN, 0);
  }

  /** A status without its slots (0: unknown). */
  public WorkerStatus(String workerId, String name, String suspicion, boolean acceptingWork, long ejectedUntilMillis,
      String ejectionReason, int timesEjected, int inFlight, long reportedAtMillis, String leftReason,
      double suspicionLevel) {
    this(workerId, name, suspicion, acceptingWork, ejectedUntilMillis, ejectionReason, timesEjected, inFlight,
        reportedAtMillis, leftReason, suspicionLevel, 0);
  }

  /** Whether the worker was connected when this was observed. */
  public boolean connected() {
    return leftReason == null;
  }

  /** How often a running coordinator reports its workers (and at once when one joins or leaves), in ms. */
  public static final long REPORT_INTERVAL_MILLIS = 2_000;

  /**
   * A worker still connected at its last report, but not reported for this long, is {@link Condition#SILENT}:
   * its coordinator reports every {@link #REPORT_INTERVAL_MILLIS} ms while it runs and marks every worker as
   * left when it stops, so five missed reports mean the coordinator itself is gone (killed) or cannot write.
   */
  public static final long SILENT_AFTER_MILLIS = 5 * REPORT_INTERVAL_MILLIS;

  /** How a worker is, in one word, wherever it is shown ({@link #condition}). */
  public enum Condition {
    /** Connected, and takes new work. */
    LIVE,
    /** Connected, but its suspicion is at the drain level or above: it gets no new work. */
    DRAINED,
    /** Connected, but ejected as an outlier until {@link #ejectedUntilMillis}. */
    EJECTED,
    /** Connected at its last report, but not reported for {@link #SILENT_AFTER_MILLIS}: its coordinator is gone. */
    SILENT,
    /** It left (see {@link #leftReason}). */
    LEFT;

    /** The word: {@code live}, {@code drained}, {@code ejected}, {@code silent} or {@code left}. */
    public String word() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * The worker's condition at {@code nowMillis}: the one rule for {@code tally status}, the API and the
   * dashboard, which had two (the dashboard called a drained worker silent, and status a worker whose
   * coordinator had gone silent; each called the other's live).
   *
   * @param nowMillis epoch ms
   */
  public Condition condition(long nowMillis) {
    if (!connected()) {
      return Condition.LEFT;
    }
    if (nowMillis - reportedAtMillis >= SILENT_AFTER_MILLIS) {
      return Condition.SILENT;
    }
    if (ejectedUntilMillis > nowMillis) {
      return Condition.EJECTED;
    }
    return acceptingWork ? Condition.LIVE : Condition.DRAINED;
  }

  /** This status as of the worker leaving at {@code atMillis} for {@code reason}: nothing in flight. */
  public WorkerStatus left(long atMillis, String reason) {
    return new WorkerStatus(workerId, name, suspicion, acceptingWork, ejectedUntilMillis, ejectionReason, timesEjected, 0,
        atMillis, Objects.requireNonNull(reason, "reason"), suspicionLevel, slots);
  }
}

package dev.tally.core.outlier;

import java.util.Objects;

/**
 * Something the {@link OutlierDetector} did or refused to do, for the log and {@code tally status}.
 *
 * @param type what happened
 * @param workerId the worker it happened to
 * @param rule the rule that found the worker bad; for {@link Type#RETURNED}, the rule of the ejection that
 *     ended
 * @param reason a sentence with the numbers that tripped the rule, e.g. "5 consecutive infrastructure
 *     failures (limit 5)"; for {@link Type#RETURNED}, the reason of the ejection that ended
 * @param atMillis when it happened, on the caller's clock; for {@link Type#RETURNED} the moment the
 *     ejection ran out, which may be earlier than the call that noticed it
 * @param untilMillis for {@link Type#EJECTED}, when the ejection ends; otherwise equal to {@code atMillis}
 * @param timesEjected how many times the worker has been ejected, this ejection included
 */
public record OutlierEvent(
    Type type, String workerId, Rule rule, String reason, long atMillis, long untilMillis, int timesEjected) {

  /** What happened. */
  public enum Type {
    /** The worker was ejected: it gets no new jobs until {@code untilMillis}. */
    EJECTED,
    /** The worker's ejection ran out; it is back in service and judged afresh. */
    RETURNED,
    /**
     * The worker qualified for ejection but the share cap was reached, so it stays in service. Reported
     * once per episode (until the worker is ejected or stops qualifying); every refusal is counted in
     * {@link OutlierDetector#refusedEjections()}.
     */
    EJECTION_REFUSED
  }

  /** The rules of {@link OutlierPolicy}. */
  public enum Rule {
    /** Rule 1: too many infrastructure failures in a row. */
    CONSECUTIVE_FAILURES,
    /** Rule 2: an infrastructure-failure rate far above the rest of the fleet's. */
    FAILURE_RATE,
    /** Rule 3: a median duration far above the rest of the fleet's for the same case kind. */
    LATENCY
  }

  public OutlierEvent {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(rule, "rule");
    Objects.requireNonNull(reason, "reason");
  }

  /** One line for the log, e.g. "worker w3 ejected for 30000 ms (ejection 1, until 31000): 5 consecutive ...". */
  public String describe() {
    return describe(workerId);
  }

  /**
   * The event in words for a log line, naming the worker as {@code workerName} (its name for people; the
   * id is for machines). The ejection's length is given in seconds, not as an instant.
   */
  public String describe(String workerName) {
    switch (type) {
      case EJECTED:
        return "worker " + workerName + " ejected for " + Math.round((untilMillis - atMillis) / 1000.0) + " s (ejection "
            + timesEjected + "): " + reason;
      case RETURNED:
        return "worker " + workerName + " returns to service after ejection " + timesEjected
            + " and is judged afresh (it was ejected for: " + reason + ")";
      case EJECTION_REFUSED:
        return "worker " + workerName + " stays in service although it qualifies for ejection: " + reason;
      default:
        throw new IllegalStateException("unknown event type " + type);
    }
  }
}

package dev.tally.core.store;

/**
 * How long one attempt took, told apart: the whole attempt as the coordinator measured it, and the parts
 * the worker reported (the wait in its queue, the case's own run). Durations, not instants: each is read
 * off a monotonic clock, so a wall clock stepped back cannot make an attempt end before it starts.
 *
 * @param elapsedMillis from the lease to the attempt's end, on the coordinator's monotonic clock, ms; or
 *     {@link #UNKNOWN} (the attempt was leased by an earlier coordinator, or ended without its holder)
 * @param queuedMillis how long the job waited on the worker before its case started, ms; or {@link #UNKNOWN}
 * @param runMillis how long the case ran on the worker, ms; or {@link #UNKNOWN}
 */
public record AttemptTiming(long elapsedMillis, long queuedMillis, long runMillis) {
  /** A part nobody measured. */
  public static final long UNKNOWN = -1;

  /** Nothing measured. */
  public static final AttemptTiming NONE = new AttemptTiming(UNKNOWN, UNKNOWN, UNKNOWN);

  /**
   * @throws IllegalArgumentException if a value is below {@link #UNKNOWN}
   */
  public AttemptTiming {
    if (elapsedMillis < UNKNOWN || queuedMillis < UNKNOWN || runMillis < UNKNOWN) {
      throw new IllegalArgumentException(
          "durations must be >= 0 or UNKNOWN, got " + elapsedMillis + ", " + queuedMillis + ", " + runMillis);
    }
  }

  /** Only the coordinator's measure. */
  public static AttemptTiming elapsed(long elapsedMillis) {
    return new AttemptTiming(elapsedMillis, UNKNOWN, UNKNOWN);
  }
}

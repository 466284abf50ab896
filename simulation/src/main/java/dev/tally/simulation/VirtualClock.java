package dev.tally.simulation;

import dev.tally.core.Ticker;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * Virtual time for one simulated history: wall time ({@link Clock}) for the scheduler and the store, and
 * elapsed time ({@link Ticker}) for the failure detectors, both read from one counter that only the
 * simulation's event loop moves, and only forwards.
 *
 * <p>Thread-safety: none needed; a history runs in one thread.
 */
final class VirtualClock extends Clock implements Ticker {
  /** Wall time at the start of every history, so that traces and stored times are the same for a seed. */
  static final long EPOCH_MILLIS = 1_700_000_000_000L;

  private long elapsedMillis;

  /** Milliseconds since the history began. */
  long elapsedMillis() {
    return elapsedMillis;
  }

  /**
   * Moves time to {@code elapsedMillis}.
   *
   * @throws IllegalArgumentException if that is before now: virtual time never goes back
   */
  void advanceTo(long elapsedMillis) {
    if (elapsedMillis < this.elapsedMillis) {
      throw new IllegalArgumentException("virtual time cannot go back from " + this.elapsedMillis + " to " + elapsedMillis);
    }
    this.elapsedMillis = elapsedMillis;
  }

  @Override
  public long millis() {
    return EPOCH_MILLIS + elapsedMillis;
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(millis());
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    if (!ZoneOffset.UTC.equals(zone)) {
      throw new UnsupportedOperationException("the virtual clock is in UTC only");
    }
    return this;
  }

  @Override
  public long nanos() {
    return elapsedMillis * 1_000_000L;
  }
}

package dev.tally.coordinator.net;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How often the worker port logs the refusals of one remote address (a wrong worker token, plaintext on a
 * TLS port): at most once per {@link #PERIOD}, with the count of those left out since. A worker with a wrong
 * token that a supervisor restarts every second, or a scanner, must not fill the log, and one line a minute
 * still shows an operator who is knocking and how often.
 *
 * <p>Time is passed in (monotonic nanoseconds), so the simulation can drive it. Remembers at most {@link
 * #MAX_ADDRESSES} addresses, the least recently refused forgotten first: a scan from many addresses costs
 * bounded memory, at worst a line more for an address that was forgotten.
 *
 * <p>Thread-safety: safe from any thread (the sessions of one port run on several event loops).
 */
public final class RefusalLog {
  /** The shortest time between two lines about one address. */
  public static final Duration PERIOD = Duration.ofMinutes(1);

  /**
   * Addresses remembered. 4,096 entries of a few dozen bytes each are nothing to keep, and far more than
   * the hosts of any fleet, so that only a scan or a flood makes an address be forgotten.
   */
  public static final int MAX_ADDRESSES = 4_096;

  private record Refusals(long loggedAtNanos, long suppressed) {}

  private final long periodNanos;
  private final Map<String, Refusals> entries = new LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Refusals> eldest) {
      return size() > MAX_ADDRESSES;
    }
  };

  /** A log with the period {@link #PERIOD}. */
  public RefusalLog() {
    this(PERIOD);
  }

  /**
   * A log with another period (tests).
   *
   * @throws IllegalArgumentException if {@code period} is negative
   */
  public RefusalLog(Duration period) {
    if (period.isNegative()) {
      throw new IllegalArgumentException("period must not be negative, got " + period);
    }
    this.periodNanos = period.toNanos();
  }

  /**
   * A refusal of a peer at {@code address} happened at {@code nowNanos}: whether to log it.
   *
   * @param address the peer's address without its port (see {@link #addressOf}), the key
   * @return -1 to leave it out; otherwise log it, and this many refusals of the address were left out since
   *     its last line (0 for the first)
   */
  public synchronized long shouldLog(String address, long nowNanos) {
    Objects.requireNonNull(address, "address");
    Refusals e = entries.get(address);
    if (e != null && nowNanos - e.loggedAtNanos() < periodNanos) {
      entries.put(address, new Refusals(e.loggedAtNanos(), e.suppressed() + 1));
      return -1;
    }
    entries.put(address, new Refusals(nowNanos, 0));
    return e == null ? 0 : e.suppressed();
  }

  /**
   * A peer's address as a key: its text without the port ({@code /10.0.0.5:51234} becomes {@code
   * /10.0.0.5}), so that every connection of one host counts as one address.
   */
  public static String addressOf(String peer) {
    int colon = peer.lastIndexOf(':');
    if (colon > 0 && colon < peer.length() - 1 && peer.substring(colon + 1).chars().allMatch(Character::isDigit)) {
      return peer.substring(0, colon);
    }
    return peer;
  }

  /** How a line says what was left out: empty for none, else "; N more since the last line about it". */
  public static String leftOut(long suppressed) {
    return suppressed <= 0 ? "" : "; " + suppressed + (suppressed == 1 ? " more refusal" : " more refusals")
        + " from this address since the last line about it";
  }
}

package dev.tally.core;

import java.util.Map;

/**
 * A run's limits that hold for its whole fleet, not per worker: how many of its calls may be in flight at
 * once, and how many requests per minute it may make. They are evaluator
 * options of the run (so they travel and are stored with its spec); this class is the one owner of their
 * names in the options map and of what each may be. The coordinator turns them into leases ({@code
 * dev.tally.core.schedule.RunGovernor}): a model run's calls are made only while its case is leased, one
 * at a time per lease, so the lease is the permit.
 *
 * @param maxConcurrency at most this many of the run's jobs leased at once across the fleet, or null
 * @param requestsPerMinute at most this many leases (each one request) per minute, or null
 */
public record FleetLimits(Integer maxConcurrency, Double requestsPerMinute) {

  /** The options map's key of {@link #maxConcurrency}. */
  public static final String MAX_CONCURRENCY = "max-concurrency";
  /** The options map's key of {@link #requestsPerMinute}. */
  public static final String REQUESTS_PER_MINUTE = "requests-per-minute";

  /** No limits. */
  public static final FleetLimits NONE = new FleetLimits(null, null);

  /**
   * The largest concurrency: far above any endpoint's; a bigger number is a typo, and the governor's
   * window arithmetic stays exact below it.
   */
  public static final int MAX_CONCURRENCY_LIMIT = 100_000;

  /** A limit that names an option, for a message or a problem's place. */
  public static final class LimitException extends IllegalArgumentException {
    private final String key;

    LimitException(String key, String message) {
      super(message);
      this.key = key;
    }

    /** The options map's key at fault ({@link #MAX_CONCURRENCY}...). */
    public String key() {
      return key;
    }
  }

  /**
   * @throws LimitException if a limit is out of range: concurrency 1 to {@link #MAX_CONCURRENCY_LIMIT},
   *     the request rate positive and finite
   */
  public FleetLimits {
    if (maxConcurrency != null && (maxConcurrency < 1 || maxConcurrency > MAX_CONCURRENCY_LIMIT)) {
      throw new LimitException(MAX_CONCURRENCY, "--" + MAX_CONCURRENCY + " must be from 1 to " + MAX_CONCURRENCY_LIMIT
          + ", got " + maxConcurrency);
    }
    positive(REQUESTS_PER_MINUTE, requestsPerMinute);
  }

  /** Whether no limit is set: the governor leaves such a run alone. */
  public boolean none() {
    return maxConcurrency == null && requestsPerMinute == null;
  }

  /**
   * The limits among a run's evaluator options (other options are ignored).
   *
   * @throws LimitException naming the option if a value is not a number of its kind or out of range
   */
  public static FleetLimits parse(Map<String, String> options) {
    Long concurrency = whole(options, MAX_CONCURRENCY);
    if (concurrency != null && (concurrency < 1 || concurrency > MAX_CONCURRENCY_LIMIT)) {
      throw new LimitException(MAX_CONCURRENCY, "--" + MAX_CONCURRENCY + " must be from 1 to " + MAX_CONCURRENCY_LIMIT
          + ", got " + concurrency);
    }
    return new FleetLimits(concurrency == null ? null : concurrency.intValue(), number(options, REQUESTS_PER_MINUTE));
  }

  /** The keys this class owns, in the order the command line lists them. */
  public static java.util.List<String> keys() {
    return java.util.List.of(MAX_CONCURRENCY, REQUESTS_PER_MINUTE);
  }

  private static void positive(String key, Double v) {
    if (v != null && !(v > 0 && Double.isFinite(v))) {
      throw new LimitException(key, "--" + key + " must be a positive number, got " + v);
    }
  }

  private static Long whole(Map<String, String> options, String key) {
    String v = options.get(key);
    if (v == null) {
      return null;
    }
    try {
      return Long.parseLong(v.strip());
    } catch (NumberFormatException e) {
      throw new LimitException(key, "--" + key + " must be a whole number, got '" + v + "'");
    }
  }

  private static Double number(Map<String, String> options, String key) {
    String v = options.get(key);
    if (v == null) {
      return null;
    }
    try {
      double d = Double.parseDouble(v.strip());
      positive(key, d);
      return d;
    } catch (NumberFormatException e) {
      throw new LimitException(key, "--" + key + " must be a number, got '" + v + "'");
    }
  }
}

package dev.tally.core;

import java.util.Map;

/**
 * A run's limits that hold for its whole fleet, not per worker: how many of its calls may be in flight at
 * once, how many requests and tokens per minute it may spend, and its caps on tokens and cost in all. They are evaluator
 * options of the run (so they travel and are stored with its spec); this class is the one owner of their
 * names in the options map and of what each may be. The coordinator turns them into leases ({@code
 * dev.tally.core.schedule.RunGovernor}): a model run's calls are made only while its case is leased, one
 * at a time per lease, so the lease is the permit.
 *
 * @param maxConcurrency at most this many of the run's jobs leased at once across the fleet, or null
 * @param requestsPerMinute at most this many leases (each one request) per minute, or null
 * @param tokensPerMinute new leases wait while the tokens the run's responses used have spent this
 *     minute's budget (a bucket refilled at this rate), or null
 * @param maxTokens the run stops leasing once its journalled responses used this many tokens, or null
 * @param maxCostUsd the run stops leasing once its journalled responses cost this much at {@code price},
 *     or null
 * @param price the run's price (the {@link Price#OPTION} option), or null; needed by {@code maxCostUsd}
 */
public record FleetLimits(Integer maxConcurrency, Double requestsPerMinute, Double tokensPerMinute, Long maxTokens,
    Double maxCostUsd, Price price) {

  /** The options map's key of {@link #maxConcurrency}. */
  public static final String MAX_CONCURRENCY = "max-concurrency";
  /** The options map's key of {@link #requestsPerMinute}. */
  public static final String REQUESTS_PER_MINUTE = "requests-per-minute";
  /** The options map's key of {@link #tokensPerMinute}. */
  public static final String TOKENS_PER_MINUTE = "tokens-per-minute";
  /** The options map's key of {@link #maxTokens}. */
  public static final String MAX_TOKENS = "max-tokens";
  /** The options map's key of {@link #maxCostUsd}. */
  public static final String MAX_COST = "max-cost";

  /** No limits. */
  public static final FleetLimits NONE = new FleetLimits(null, null, null, null, null, null);

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

    /**
     * This refusal with its options named by {@code naming} (the API's fields, say) where the message names
     * them as the command line's {@code --options}; {@code naming} takes an options map key ({@link
     * #MAX_TOKENS}, {@link #MAX_COST}, {@link #MAX_CONCURRENCY}, {@link Price#OPTION}) and gives its name.
     * A price's command-line form ({@code --price IN,OUT}) is named whole.
     */
    public String message(java.util.function.UnaryOperator<String> naming) {
      String m = getMessage().replace("--" + Price.OPTION + " IN,OUT", "--" + Price.OPTION);
      for (String k : java.util.List.of(MAX_CONCURRENCY, MAX_TOKENS, MAX_COST, Price.OPTION)) {
        m = m.replace("--" + k, naming.apply(k));
      }
      return m;
    }
  }

  /**
   * @throws LimitException if a limit is out of range: concurrency 1 to {@link #MAX_CONCURRENCY_LIMIT},
   *     the rates and the cost cap positive and finite, the token cap at least 1, a cost cap without a price
   */
  public FleetLimits {
    if (maxConcurrency != null && (maxConcurrency < 1 || maxConcurrency > MAX_CONCURRENCY_LIMIT)) {
      throw new LimitException(MAX_CONCURRENCY, "--" + MAX_CONCURRENCY + " must be from 1 to " + MAX_CONCURRENCY_LIMIT
          + ", got " + maxConcurrency);
    }
    positive(REQUESTS_PER_MINUTE, requestsPerMinute);
    positive(TOKENS_PER_MINUTE, tokensPerMinute);
    positive(MAX_COST, maxCostUsd);
    if (maxTokens != null && maxTokens < 1) {
      throw new LimitException(MAX_TOKENS, "--" + MAX_TOKENS + " must be a whole number >= 1, got " + maxTokens);
    }
    if (maxCostUsd != null && price == null) {
      throw new LimitException(MAX_COST, "--" + MAX_COST + " needs --" + Price.OPTION
          + " (the cost is the tokens used at that price)");
    }
  }

  /** Whether no limit is set: the governor leaves such a run alone. */
  public boolean none() {
    return maxConcurrency == null && requestsPerMinute == null && tokensPerMinute == null && maxTokens == null
        && maxCostUsd == null;
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
    Price price = null;
    if (options.containsKey(Price.OPTION)) {
      try {
        price = Price.parse(options.get(Price.OPTION));
      } catch (IllegalArgumentException e) {
        throw new LimitException(Price.OPTION, e.getMessage());
      }
    }
    return new FleetLimits(concurrency == null ? null : concurrency.intValue(), number(options, REQUESTS_PER_MINUTE),
        number(options, TOKENS_PER_MINUTE), whole(options, MAX_TOKENS), number(options, MAX_COST), price);
  }

  /** The keys this class owns, in the order the command line lists them. */
  public static java.util.List<String> keys() {
    return java.util.List.of(MAX_CONCURRENCY, REQUESTS_PER_MINUTE, TOKENS_PER_MINUTE, MAX_TOKENS, MAX_COST);
  }

  /** The keys of the caps, which {@code tally resume} may raise. */
  public static java.util.List<String> capKeys() {
    return java.util.List.of(MAX_TOKENS, MAX_COST);
  }

  /**
   * Checks new caps for a run: what {@code tally resume --max-tokens/--max-cost} and {@code POST
   * /runs/{id}/resume} check before they write anything.
   *
   * @param options the run's options now
   * @param caps the new caps, by key ({@link #capKeys()})
   * @return the run's limits with the new caps
   * @throws LimitException naming the option if a key is not a cap, or the caps with the run's other options
   *     are refused ({@link #parse}: a cost cap without a price, say)
   */
  public static FleetLimits withCaps(Map<String, String> options, Map<String, String> caps) {
    for (String key : caps.keySet()) {
      if (!capKeys().contains(key)) {
        throw new LimitException(key, "--" + key + " is not a cap; the caps are " + capKeys());
      }
    }
    Map<String, String> merged = new java.util.HashMap<>(options);
    merged.putAll(caps);
    return parse(merged);
  }

  /**
   * What the run's journalled responses cost at its price, in USD, or null without a price.
   *
   * @param counters the run's counters (their token counts)
   */
  public Double costUsd(dev.tally.core.store.RunCounters counters) {
    return price == null ? null : price.costUsd(counters.promptTokens(), counters.completionTokens());
  }

  /**
   * Why the run may lease no more, if one of its caps is reached: the one rule, for the governor that
   * stops its leases and for everything that shows the run as paused.
   *
   * @param counters the run's counters (their token counts)
   * @return a sentence naming the cap and the spend, or empty while under every cap
   */
  public java.util.Optional<String> capReached(dev.tally.core.store.RunCounters counters) {
    return capHit(counters).map(Cap::reason);
  }

  /**
   * A cap that is reached: the option that raises it ({@link #MAX_TOKENS} or {@link #MAX_COST}) and the
   * sentence {@link #capReached} gives, so that whoever says how to go on need not read the sentence.
   *
   * @param option the option's name, without dashes
   * @param reason the sentence naming the cap and the spend
   */
  public record Cap(String option, String reason) {}

  /**
   * The cap that is reached, if one is ({@link #capReached}'s rule, with the option that raises it).
   *
   * @param counters the run's counters (their token counts)
   */
  public java.util.Optional<Cap> capHit(dev.tally.core.store.RunCounters counters) {
    if (maxTokens != null && counters.tokens() >= maxTokens) {
      return java.util.Optional.of(new Cap(MAX_TOKENS, "its token cap is reached: " + counters.tokens()
          + " tokens used, --" + MAX_TOKENS + " " + maxTokens));
    }
    Double cost = costUsd(counters);
    if (maxCostUsd != null && cost != null && cost >= maxCostUsd) {
      return java.util.Optional.of(new Cap(MAX_COST, String.format(java.util.Locale.ROOT,
          "its spend cap is reached: $%.4f spent, --%s %s", cost, MAX_COST,
          java.math.BigDecimal.valueOf(maxCostUsd).stripTrailingZeros().toPlainString())));
    }
    return java.util.Optional.empty();
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

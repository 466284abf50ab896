package dev.tally.core.schedule;

import dev.tally.core.FleetLimits;
import dev.tally.core.store.StoreBatch.LeaseLimit;
import java.util.HashMap;
import java.util.Map;

/**
 * Holds runs with {@link FleetLimits} to them for the whole fleet, by limiting their leases: a model run's
 * calls are made only while its case is leased, one at a time per lease, so the lease is the permit and
 * "at most N requests in flight" is "at most N of the run's jobs leased". Each step it gives the store's
 * batch rule one {@link LeaseLimit} per governed run; the store counts the run's leased jobs exactly.
 *
 * <p><b>Concurrency window (AIMD).</b> A run's window starts at its {@code maxConcurrency} (unbounded
 * without one). An attempt the endpoint rate-limited (HTTP 429 or 503, reported as {@code RATE_LIMITED})
 * halves it, at least to 1 (from the jobs then in flight when the window was unbounded), at most once per
 * {@link #DECREASE_SPACING_MILLIS} or per {@code Retry-After} whichever is longer, since one burst of
 * rejections is one congestion signal; and it pauses the run's new leases until the {@code Retry-After} has
 * passed (or {@link #DEFAULT_PAUSE_MILLIS} without one). Every recorded outcome grows the window by 1/window,
 * about one more per window's worth of successes, back up to {@code maxConcurrency}: additive increase,
 * multiplicative decrease, as TCP's congestion avoidance (Jacobson, "Congestion Avoidance and Control",
 * SIGCOMM 1988; RFC 5681). The fleet backs off together because every worker's permits come from here.
 *
 * <p><b>Request rate.</b> {@code requestsPerMinute} is a token bucket refilled continuously at that rate,
 * holding at most one second's worth (at least 1): a lease takes one token.
 *
 * <p><b>Token rate.</b> {@code tokensPerMinute} is a bucket of tokens refilled at that rate, holding at most
 * one second's worth, that the run's journalled responses draw from as their usage is counted (the run's
 * counters, {@link #spent}); it may go into debt, and while it is not above zero no new lease is made. The
 * tokens of a request are known only once it is answered, so the requests in flight when the budget runs
 * out may overshoot it: at most the window's worth.
 *
 * <p><b>Caps.</b> Once the run's counters reach {@code maxTokens} or {@code maxCostUsd} ({@link
 * FleetLimits#capReached}), no new lease is made: the requests in flight finish and are kept (they are
 * paid for), and the run waits, paused, until its cap is raised ({@code tally resume}).
 *
 * <p>Pure: times come from the caller (the scheduler's clock), no I/O. Not thread-safe: the scheduler's
 * thread only.
 */
final class RunGovernor {
  /** One burst of 429s halves the window once: further decreases wait this long at least. */
  static final long DECREASE_SPACING_MILLIS = 1_000;
  /** How long a run's new leases pause after a 429 or 503 that named no wait. */
  static final long DEFAULT_PAUSE_MILLIS = 1_000;

  private final Map<Long, Governed> runs = new HashMap<>();

  /** One governed run's state. */
  private static final class Governed {
    final FleetLimits limits;
    /** The concurrency window; +infinity while unbounded. */
    double window;
    long pausedUntilMillis;
    long noDecreaseBeforeMillis;
    double requestTokens;
    long refilledAtMillis;
    /** The token-rate bucket's balance; may be negative (debt). */
    double tokenBalance;
    /** The run's counted tokens as last seen, to take the new ones from the bucket. */
    long tokensSeen = -1;
    /** Why the run leases no more (a cap), or null. */
    String capped;
    /** Why the run is paused (fail fast; sticky until a new activation), or null. */
    String paused;

    Governed(FleetLimits limits, long nowMillis) {
      this.limits = limits;
      this.window = limits.maxConcurrency() == null ? Double.POSITIVE_INFINITY : limits.maxConcurrency();
      this.requestTokens = limits.requestsPerMinute() == null ? 0 : burst(limits.requestsPerMinute());
      this.tokenBalance = limits.tokensPerMinute() == null ? 0 : burst(limits.tokensPerMinute());
      this.refilledAtMillis = nowMillis;
    }

    static double burst(double perMinute) {
      return Math.max(1, perMinute / 60);
    }

    void refill(long nowMillis) {
      Double rpm = limits.requestsPerMinute();
      if (rpm != null && nowMillis > refilledAtMillis) {
        requestTokens = Math.min(burst(rpm), requestTokens + (nowMillis - refilledAtMillis) * rpm / 60_000.0);
      }
      Double tpm = limits.tokensPerMinute();
      if (tpm != null && nowMillis > refilledAtMillis) {
        tokenBalance = Math.min(burst(tpm), tokenBalance + (nowMillis - refilledAtMillis) * tpm / 60_000.0);
      }
      refilledAtMillis = Math.max(refilledAtMillis, nowMillis);
    }
  }

  /** Starts governing a run (again: its state starts afresh); a run without limits is left alone. */
  void govern(long runId, FleetLimits limits, long nowMillis) {
    if (limits.none()) {
      runs.remove(runId);
    } else {
      runs.put(runId, new Governed(limits, nowMillis));
    }
  }

  /** Whether any run is governed. */
  boolean any() {
    return !runs.isEmpty();
  }

  /** Whether the run is governed. */
  boolean governs(long runId) {
    return runs.containsKey(runId);
  }

  /** Stops governing a run (it ended). */
  void forget(long runId) {
    runs.remove(runId);
  }

  /** Each governed run's limit for a batch at {@code nowMillis}. */
  Map<Long, LeaseLimit> limits(long nowMillis) {
    Map<Long, LeaseLimit> out = new HashMap<>();
    runs.forEach((runId, g) -> {
      g.refill(nowMillis);
      int maxLeased = Double.isInfinite(g.window) ? Integer.MAX_VALUE : (int) Math.floor(g.window);
      int maxNew = g.capped != null || g.paused != null || nowMillis < g.pausedUntilMillis
          || (g.limits.tokensPerMinute() != null && g.tokenBalance <= 0) ? 0
          : g.limits.requestsPerMinute() == null ? Integer.MAX_VALUE : (int) Math.floor(g.requestTokens);
      out.put(runId, new LeaseLimit(maxLeased, maxNew));
    });
    return out;
  }

  /** The batch leased {@code n} of the run's jobs: each takes a request token. */
  void leased(long runId, int n) {
    Governed g = runs.get(runId);
    if (g != null && g.limits.requestsPerMinute() != null) {
      g.requestTokens = Math.max(0, g.requestTokens - n);
    }
  }

  /** One of the run's attempts ended with an outcome: the window grows by 1/window, up to its cap. */
  void succeeded(long runId) {
    Governed g = runs.get(runId);
    if (g == null || Double.isInfinite(g.window)) {
      return;
    }
    Integer cap = g.limits.maxConcurrency();
    double grown = g.window + 1 / g.window;
    g.window = cap == null ? grown : Math.min(cap, grown);
  }

  /**
   * One of the run's attempts was rate limited: the window halves (once per burst) and new leases pause.
   *
   * @param retryAfterMillis the wait the endpoint asked for, 0 if none
   * @param inFlight the run's jobs in flight now (the window's start when it was unbounded)
   */
  void rateLimited(long runId, long retryAfterMillis, int inFlight, long nowMillis) {
    Governed g = runs.computeIfAbsent(runId, id -> new Governed(FleetLimits.NONE, nowMillis));
    long pause = retryAfterMillis > 0 ? retryAfterMillis : DEFAULT_PAUSE_MILLIS;
    g.pausedUntilMillis = Math.max(g.pausedUntilMillis, nowMillis + pause);
    if (nowMillis >= g.noDecreaseBeforeMillis) {
      double from = Double.isInfinite(g.window) ? Math.max(1, inFlight) : g.window;
      g.window = Math.max(1, from / 2);
      g.noDecreaseBeforeMillis = nowMillis + Math.max(DECREASE_SPACING_MILLIS, pause);
    }
  }

  /**
   * The run's counters as of a commit: the tokens counted since the last call come out of its token
   * bucket, and its caps are checked.
   *
   * @return why the run now leases no more (a cap is reached), or null
   */
  String spent(long runId, dev.tally.core.store.RunCounters counters, long nowMillis) {
    Governed g = runs.get(runId);
    if (g == null) {
      return null;
    }
    long tokens = counters.tokens();
    if (g.tokensSeen >= 0 && tokens > g.tokensSeen && g.limits.tokensPerMinute() != null) {
      g.refill(nowMillis);
      g.tokenBalance -= tokens - g.tokensSeen;
    }
    g.tokensSeen = tokens;
    g.capped = g.limits.capReached(counters).orElse(null);
    return g.capped;
  }

  /** Pauses the run's new leases for good (fail fast), whatever its limits. */
  void pause(long runId, String reason) {
    runs.computeIfAbsent(runId, id -> new Governed(FleetLimits.NONE, 0)).paused = reason;
  }

  /** Why the run leases no more (a cap), or null. */
  String capped(long runId) {
    Governed g = runs.get(runId);
    return g == null ? null : g.capped;
  }

  /** The run's window now (+infinity while unbounded); for tests and status. */
  double window(long runId) {
    Governed g = runs.get(runId);
    return g == null ? Double.POSITIVE_INFINITY : g.window;
  }

  /**
   * When a governed run may lease again though nothing else happens (a pause ends, a request token
   * arrives), or {@link Long#MAX_VALUE}.
   */
  long nextChangeMillis(long nowMillis) {
    long next = Long.MAX_VALUE;
    for (Governed g : runs.values()) {
      if (g.pausedUntilMillis > nowMillis) {
        next = Math.min(next, g.pausedUntilMillis);
      }
      if (g.capped != null || g.paused != null) {
        continue; // only a raised cap or a resume (a new activation) changes it
      }
      Double tpm = g.limits.tokensPerMinute();
      if (tpm != null) {
        g.refill(nowMillis);
        if (g.tokenBalance <= 0) {
          next = Math.min(next, nowMillis + 1 + (long) Math.ceil(-g.tokenBalance * 60_000.0 / tpm));
        }
      }
      Double rpm = g.limits.requestsPerMinute();
      if (rpm != null) {
        g.refill(nowMillis);
        if (g.requestTokens < 1) {
          next = Math.min(next, nowMillis + (long) Math.ceil((1 - g.requestTokens) * 60_000.0 / rpm));
        }
      }
    }
    return next;
  }
}

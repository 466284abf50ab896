package dev.tally.core.store;

/**
 * One page of runs, newest first ({@link Store#runs(RunPage)}).
 *
 * @param beforeRunId only runs with a smaller id ({@link Long#MAX_VALUE} for the first page)
 * @param limit at most this many, 1 to {@link #MAX_LIMIT}
 */
public record RunPage(long beforeRunId, int limit) {
  /** The largest page: enough for a screen or a script, small enough that a read never holds much. */
  public static final int MAX_LIMIT = 1_000;

  /**
   * @throws IllegalArgumentException if the limit is outside 1..{@link #MAX_LIMIT}
   */
  public RunPage {
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException("a page holds 1 to " + MAX_LIMIT + " runs, got " + limit);
    }
  }

  /** The newest {@code limit} runs. */
  public static RunPage first(int limit) {
    return new RunPage(Long.MAX_VALUE, limit);
  }
}

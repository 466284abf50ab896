package dev.tally.core.store;

import dev.tally.core.Verdict;

/**
 * One page of a run's cases in dataset order ({@link Store#cases}), optionally only those with one verdict
 * or in one state.
 *
 * @param verdict only recorded cases with this verdict, or null for any
 * @param state only cases in this state, or null for any
 * @param afterPosition only cases after this dataset position (-1 for the first page)
 * @param limit at most this many, 1 to {@link RunPage#MAX_LIMIT}
 */
public record CaseQuery(Verdict verdict, JobState state, int afterPosition, int limit) {
  /**
   * @throws IllegalArgumentException if the limit is outside 1..{@link RunPage#MAX_LIMIT}, or the position
   *     is below -1
   */
  public CaseQuery {
    if (limit < 1 || limit > RunPage.MAX_LIMIT) {
      throw new IllegalArgumentException("a page holds 1 to " + RunPage.MAX_LIMIT + " cases, got " + limit);
    }
    if (afterPosition < -1) {
      throw new IllegalArgumentException("afterPosition must be >= -1, got " + afterPosition);
    }
  }

  /** The first {@code limit} cases, any verdict and state. */
  public static CaseQuery first(int limit) {
    return new CaseQuery(null, null, -1, limit);
  }

  /** Whether a job passes the filters (for stores that filter in memory). */
  public boolean matches(JobView j) {
    return j.position() > afterPosition && (state == null || j.state() == state)
        && (verdict == null || (j.outcome() != null && j.outcome().verdict() == verdict));
  }
}

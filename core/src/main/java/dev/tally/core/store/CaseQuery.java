package dev.tally.core.store;

import dev.tally.core.Verdict;

/**
 * One page of a run's cases in dataset order ({@link Store#cases}), optionally only those with one verdict,
 * in one state, whose id contains a text, or tried at least so many times.
 *
 * @param verdict only cases with this {@linkplain JobView#reportedVerdict reported verdict} (so {@code
 *     error} takes in the cases out of attempts), or null for any
 * @param state only cases in this state, or null for any
 * @param afterPosition only cases after this dataset position (-1 for the first page)
 * @param limit at most this many, 1 to {@link RunPage#MAX_LIMIT}
 * @param idContains only cases whose id contains this text, ignoring ASCII case, or null for any
 * @param minAttempts only cases with at least this many attempts (0 or 1: any)
 */
public record CaseQuery(Verdict verdict, JobState state, int afterPosition, int limit, String idContains, int minAttempts) {
  /** The longest id search: a case id is at most 1,024 characters ({@code CaseLines#MAX_ID_CHARS}). */
  public static final int MAX_SEARCH_CHARS = 1_024;
  /**
   * @throws IllegalArgumentException if the limit is outside 1..{@link RunPage#MAX_LIMIT}, the position
   *     is below -1, the id search is empty or longer than {@link #MAX_SEARCH_CHARS}, or minAttempts is negative
   */
  public CaseQuery {
    if (limit < 1 || limit > RunPage.MAX_LIMIT) {
      throw new IllegalArgumentException("a page holds 1 to " + RunPage.MAX_LIMIT + " cases, got " + limit);
    }
    if (afterPosition < -1) {
      throw new IllegalArgumentException("afterPosition must be >= -1, got " + afterPosition);
    }
    if (idContains != null && (idContains.isEmpty() || idContains.length() > MAX_SEARCH_CHARS)) {
      throw new IllegalArgumentException("an id search is 1 to " + MAX_SEARCH_CHARS + " characters, got "
          + idContains.length());
    }
    if (minAttempts < 0) {
      throw new IllegalArgumentException("minAttempts must be >= 0, got " + minAttempts);
    }
  }

  /** A page filtered by verdict and state only. */
  public CaseQuery(Verdict verdict, JobState state, int afterPosition, int limit) {
    this(verdict, state, afterPosition, limit, null, 0);
  }

  /** The first {@code limit} cases, any verdict and state. */
  public static CaseQuery first(int limit) {
    return new CaseQuery(null, null, -1, limit);
  }

  /** Whether a job passes the filters (for stores that filter in memory). */
  public boolean matches(JobView j) {
    return j.position() > afterPosition && (state == null || j.state() == state)
        && (verdict == null || verdict.wireName().equals(j.reportedVerdict()))
        && (idContains == null || lowerAscii(j.caseId()).contains(lowerAscii(idContains)))
        && j.attempts() >= minAttempts;
  }

  /** ASCII letters in lower case, the rest as it is: SQLite's {@code lower()} without ICU. */
  public static String lowerAscii(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      b.append(c >= 'A' && c <= 'Z' ? (char) (c + 32) : c);
    }
    return b.toString();
  }
}

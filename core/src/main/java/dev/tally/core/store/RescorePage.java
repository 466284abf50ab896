package dev.tally.core.store;

/**
 * What one page of {@link BatchRules#rescore} did, in its own transaction.
 *
 * @param status whether the page was judged again, or why nothing was changed
 * @param lastPosition the position of the last case the page read, where the next page starts after; the
 *     position it was asked to start after when it read none
 * @param read done cases the page read
 * @param rejudged of those, the cases whose outcome was judged again (the others keep theirs: an evaluator's
 *     own error)
 * @param changed of those, the cases whose stored outcome changed (an outcome judged again as it was stays
 *     as it is)
 * @param verdictsChanged of those, the cases whose verdict changed
 * @param more whether the run may have done cases after {@code lastPosition}
 */
public record RescorePage(Status status, int lastPosition, int read, int rejudged, int changed, int verdictsChanged,
    boolean more) {

  /** Why a page did or did not change the run. */
  public enum Status {
    /** The page's cases were judged again (and the run's scorers recorded, on the first page). */
    RESCORED,
    /** There is no such run. Nothing changed. */
    UNKNOWN_RUN,
    /** The run has not ended, or has a leased job: its outcomes are still being recorded. Nothing changed. */
    NOT_ENDED,
    /**
     * The run's scorers are no longer the ones this rescore recorded on its first page: another rescore
     * began since, and judges every case itself. Nothing changed.
     */
    SUPERSEDED
  }

  /** A page that changed nothing, for {@code status}. */
  static RescorePage refused(Status status, int afterPosition) {
    return new RescorePage(status, afterPosition, 0, 0, 0, 0, false);
  }
}

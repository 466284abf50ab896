package dev.tally.core.store;

/**
 * What a rescore did ({@link Rescoring#rescore}), summed over its pages.
 *
 * @param status {@link RescorePage.Status#RESCORED} when every page was judged; else why the first page
 *     changed nothing, or ({@link RescorePage.Status#SUPERSEDED}) why a later one stopped
 * @param read done cases read
 * @param rejudged of those, the cases judged again (an evaluator's own error keeps its outcome)
 * @param changed of those, the cases whose stored outcome changed
 * @param verdictsChanged of those, the cases whose verdict changed
 */
public record RescoreResult(RescorePage.Status status, long read, long rejudged, long changed, long verdictsChanged) {}

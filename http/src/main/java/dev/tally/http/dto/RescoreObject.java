package dev.tally.http.dto;

/**
 * What {@code POST /api/v1/runs/{id}/rescore} did.
 *
 * @param run the run as it is now: its counters and scorers are the new ones
 * @param rejudged recorded cases judged again
 * @param kept recorded cases that kept their outcome (their evaluator ended them in error: no answer)
 * @param changed of the cases judged again, those whose stored outcome changed (verdict, score or columns)
 * @param verdictsChanged of those, the cases whose verdict changed
 */
public record RescoreObject(RunObject run, long rejudged, long kept, long changed, long verdictsChanged) {}

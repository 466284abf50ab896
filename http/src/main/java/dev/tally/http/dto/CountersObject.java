package dev.tally.http.dto;

/**
 * A run's counters, named as in {@code summary.json}.
 *
 * @param passed cases recorded with verdict pass
 * @param failed cases recorded with verdict fail
 * @param errored cases that ended error: recorded with verdict error, or out of attempts (as in the summary)
 * @param recorded cases with a recorded outcome (passed + failed + recorded errors)
 * @param jobsFailed cases that ran out of attempts (or were poison), never recorded
 * @param cancelled cases that ended because their run was cancelled
 * @param duplicatesSuppressed results that arrived again for a case already recorded
 * @param staleResultsFenced results from the holder of a revoked or superseded lease, refused
 * @param redeliveries attempts that put their case back in the queue
 * @param scored recorded cases whose outcome carries a score
 * @param scoreSum the sum of those scores
 * @param scoreSumOfSquares the sum of their squares (with the two before: the mean score and its spread)
 * @param backups backup attempts started: copies of straggling cases on other workers (speculative
 *     execution); the first attempt to report is recorded, the other abandoned and never counted
 * @param ended cases that will not run again: recorded, out of attempts, or cancelled ({@code
 *     RunCounters#ended}, the one sum; readers do not add the counters themselves)
 * @param judged cases with a verdict: recorded, or out of attempts ({@code RunCounters#judged}): what
 *     accuracy is over, what the progress points count, and what a rate of work is of
 */
public record CountersObject(
    long passed,
    long failed,
    long errored,
    long recorded,
    long jobsFailed,
    long cancelled,
    long duplicatesSuppressed,
    long staleResultsFenced,
    long redeliveries,
    long scored,
    double scoreSum,
    double scoreSumOfSquares,
    long backups,
    long ended,
    long judged) {}

package dev.tally.core.store;

/**
 * The jobs {@link StoreTransaction#requeueErrors} put back in the queue, with what they had counted, so
 * that the run's counters can give it back in the same transaction.
 *
 * @param recordedErrors jobs that were done with verdict {@code error}
 * @param outOfAttempts jobs that were failed (out of attempts, or poison)
 * @param scored of the recorded errors, those with a score
 * @param scoreSum the sum of those scores
 * @param scoreSumOfSquares the sum of their squares
 */
public record RequeuedErrors(long recordedErrors, long outOfAttempts, long scored, double scoreSum, double scoreSumOfSquares) {}

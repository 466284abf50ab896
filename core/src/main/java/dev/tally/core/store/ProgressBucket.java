package dev.tally.core.store;

/**
 * How many of a run's cases ended in one span of time ({@link Store#progress}): the span starts
 * {@code index} spans after the run was created.
 *
 * @param index the span's number, 0 for the first
 * @param passed cases recorded with the verdict pass in it
 * @param failed cases recorded with the verdict fail
 * @param errored cases recorded with the verdict error, and cases that ran out of attempts
 */
public record ProgressBucket(long index, long passed, long failed, long errored) {
  /** Every case that ended in the span. */
  public long ended() {
    return passed + failed + errored;
  }
}

package dev.tally.core.store;

/**
 * A run's counters, as the store keeps them. They advance only inside the transaction that changes a
 * job's state, so they always equal what the jobs table says.
 *
 * @param total jobs in the run
 * @param passed jobs recorded with verdict pass
 * @param failed jobs recorded with verdict fail
 * @param errored jobs recorded with verdict error
 * @param jobsFailed jobs that ended {@code failed}: out of attempts, never recorded
 * @param duplicatesSuppressed results that arrived for a job already recorded under the same token
 * @param staleResultsFenced results that arrived from a holder of a revoked or superseded lease
 * @param redeliveries attempts that ended retryably and put their job back in the queue
 */
public record RunCounters(
    long total,
    long passed,
    long failed,
    long errored,
    long jobsFailed,
    long duplicatesSuppressed,
    long staleResultsFenced,
    long redeliveries) {

  /** Jobs with a recorded outcome: {@code passed + failed + errored}. */
  public long recorded() {
    return passed + failed + errored;
  }

  /** Whether every job has ended: recorded or failed. */
  public boolean finished() {
    return recorded() + jobsFailed == total;
  }
}

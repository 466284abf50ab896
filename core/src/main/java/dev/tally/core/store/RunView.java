package dev.tally.core.store;

import java.util.Objects;

/**
 * A run as read back from the store.
 *
 * @param runId the run's id
 * @param spec what it was submitted with
 * @param finished whether every job has ended
 * @param createdAtMillis wall time of submission, epoch milliseconds
 * @param finishedAtMillis wall time the last job ended, epoch milliseconds, or 0 while running
 * @param counters the run's counters
 */
public record RunView(
    long runId, RunSpec spec, boolean finished, long createdAtMillis, long finishedAtMillis, RunCounters counters) {
  public RunView {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(counters, "counters");
  }
}

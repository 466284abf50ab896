package dev.tally.core.store;

import java.util.Objects;

/**
 * A run as read back from the store.
 *
 * @param runId the run's id
 * @param name the name it was submitted with (empty if none)
 * @param spec what it was submitted with
 * @param state running, finished or cancelled
 * @param createdAtMillis wall time of submission, epoch milliseconds
 * @param finishedAtMillis wall time the run ended (its last job ended, or it was cancelled), epoch
 *     milliseconds, or 0 while running
 * @param counters the run's counters
 */
public record RunView(
    long runId, String name, RunSpec spec, RunState state, long createdAtMillis, long finishedAtMillis,
    RunCounters counters) {
  public RunView {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(counters, "counters");
  }

  /** Whether every job has ended: the run finished or was cancelled. */
  public boolean ended() {
    return state.terminal();
  }
}

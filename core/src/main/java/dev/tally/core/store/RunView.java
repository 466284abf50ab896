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
 * @param pausedReason why the run was paused and leases nothing until it is resumed (its first cases all
 *     failed alike: {@code dev.tally.core.schedule.FailFast}), or null
 */
public record RunView(
    long runId, String name, RunSpec spec, RunState state, long createdAtMillis, long finishedAtMillis,
    RunCounters counters,
    String pausedReason) {
  public RunView {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(counters, "counters");
  }

  /** A run that is not paused. */
  public RunView(long runId, String name, RunSpec spec, RunState state, long createdAtMillis, long finishedAtMillis,
      RunCounters counters) {
    this(runId, name, spec, state, createdAtMillis, finishedAtMillis, counters, null);
  }

  /**
   * Why the run leases nothing now though it has not ended, if it is paused: its stored pause ({@link
   * #pausedReason}), else a cap of its own reached ({@link dev.tally.core.FleetLimits#capReached}). The one
   * rule for everything that shows or waits on a run.
   */
  public java.util.Optional<String> paused() {
    if (ended()) {
      return java.util.Optional.empty();
    }
    if (pausedReason != null) {
      return java.util.Optional.of(pausedReason);
    }
    try {
      return dev.tally.core.FleetLimits.parse(spec.evaluator().options()).capReached(counters);
    } catch (dev.tally.core.FleetLimits.LimitException e) {
      return java.util.Optional.empty(); // checked at submission; a run whose options cannot be read has no caps
    }
  }

  /** Whether every job has ended: the run finished or was cancelled. */
  public boolean ended() {
    return state.terminal();
  }
}

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
    return limits().capReached(counters);
  }

  /** The state a paused run is shown in ({@link #shownState}). */
  public static final String PAUSED = "paused";

  /**
   * The run's state as everything shows it (the API, {@code tally status}, {@code tally runs}, the
   * dashboard): {@value #PAUSED} while {@link #paused} says so, else its state's wire name.
   */
  public String shownState() {
    return paused().isPresent() ? PAUSED : state.wireName();
  }

  /**
   * Whether a state as {@link #shownState} gives it is a terminal one ({@link RunState#terminal}: finished or
   * cancelled), for a reader of the API's {@code state}.
   *
   * @throws IllegalArgumentException if {@code shown} is neither {@value #PAUSED} nor a state's wire name
   */
  public static boolean shownTerminal(String shown) {
    return !PAUSED.equals(shown) && RunState.parse(shown).terminal();
  }

  /**
   * The run's fleet-wide limits, caps and price, from its options ({@link dev.tally.core.FleetLimits#parse});
   * none if they cannot be read (they were checked at submission, so only a store edited by hand has such a
   * run, and showing it matters more than its limits).
   */
  public dev.tally.core.FleetLimits limits() {
    try {
      return dev.tally.core.FleetLimits.parse(spec.evaluator().options());
    } catch (dev.tally.core.FleetLimits.LimitException e) {
      return dev.tally.core.FleetLimits.NONE;
    }
  }

  /**
   * What the run's paid calls used, for a run that pays for its calls (the model evaluator's, or any run
   * whose responses counted tokens); empty for the others. The one rule of when usage is shown.
   */
  public java.util.Optional<RunUsage> usage() {
    if (!spec.evaluator().kind().equals("model") && counters.tokens() == 0) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(new RunUsage(counters.promptTokens(), counters.completionTokens(),
        limits().costUsd(counters)));
  }

  /** Whether every job has ended: the run finished or was cancelled. */
  public boolean ended() {
    return state.terminal();
  }
}

package dev.tally.core.store;

import java.util.Objects;

/**
 * What {@link Store#createRun(NewRun, dev.tally.core.cases.CaseSource, KeyCompletion)} committed.
 *
 * @param run the new run as committed (state running, or finished if it has no case)
 * @param response the response stored with the idempotency key, or null when the run was made without one
 */
public record CreatedRun(RunView run, StoredResponse response) {
  public CreatedRun {
    Objects.requireNonNull(run, "run");
  }
}

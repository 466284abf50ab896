package dev.tally.core.schedule;

import dev.tally.core.store.StoreBatchResult;

/**
 * One of the scheduler's standing duties (leasing, renewing, sweeping, acknowledging, ...): each is a
 * small class of its own, and a scheduler step is a loop over them. A duty adds its requests to the step
 * before the commit, and acts on the store's answer after it; if the commit fails, {@link #settle} is not
 * called, and a duty whose requests must not be lost (reports, claims) offers them again next step.
 *
 * <p>Thread-safety: duties belong to the scheduler's thread.
 */
interface Duty {

  /** Before the commit: adds this duty's requests to the step. */
  void plan(Step step);

  /** After a successful commit: acts on what the store did. */
  default void settle(Step step, StoreBatchResult result) {}
}

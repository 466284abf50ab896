package dev.tally.core.schedule;

import dev.tally.core.JournalEntry;
import dev.tally.core.store.StoreBatchResult;
import java.util.ArrayList;
import java.util.List;

/**
 * The duty that writes the responses workers journal ({@link JournalEntry}) through the step's one
 * transaction, and tells each sender what became of its entry only after the commit: an attempt goes on
 * (scores, reports) only once its response is durable, so that no later attempt pays for it again. An entry
 * whose commit failed stays queued for the next step, as a report does.
 *
 * <p>Thread-safety: the scheduler's thread.
 */
final class Journals implements Duty {
  private final List<Step.PendingJournal> pending = new ArrayList<>();

  /** An entry to commit, and the session to tell (which may have ended: the ack is then dropped). */
  void journal(JournalEntry entry, WorkerHandle sender) {
    pending.add(new Step.PendingJournal(entry, sender));
  }

  @Override
  public void plan(Step step) {
    pending.forEach(step::journal);
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    pending.clear();
    step.journalAcks(result).forEach(WorkerHandle::acknowledgeJournal);
  }
}

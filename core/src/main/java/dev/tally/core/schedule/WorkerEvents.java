package dev.tally.core.schedule;

/**
 * What worker sessions tell the scheduler. Implementations are safe to call from any thread (typically an
 * I/O thread) and never block: they queue the event for the scheduler's own thread.
 *
 * <p>Order: for one handle, events arrive in the order they happened: {@code workerJoined} first,
 * {@code workerLost} last and at most once.
 */
public interface WorkerEvents {

  /** A worker session is ready for work. */
  void workerJoined(WorkerHandle worker);

  /** A worker reported how one attempt ended (possibly an attempt from an earlier session). */
  void attemptEnded(WorkerHandle worker, AttemptReport report);

  /**
   * A worker session ended (clean close, malformed input, or reaped for silence). Every assignment the
   * scheduler made through it and has no report for fails retryably.
   */
  void workerLost(WorkerHandle worker, String reason);

  /**
   * A worker journalled a paid response under one of its leases; the scheduler stores it in its next commit
   * and answers with {@link WorkerHandle#acknowledgeJournal}. A sink that keeps no journal (a test's, a
   * checker with nowhere to pass it) refuses it at once as {@link dev.tally.core.JournalEntry.Status#FENCED},
   * so that the attempt never waits for an answer that cannot come.
   */
  default void responseJournalled(WorkerHandle worker, dev.tally.core.JournalEntry entry) {
    worker.acknowledgeJournal(java.util.List.of(new JournalAck(entry.jobId(), entry.token(), entry.requestDigest(),
        dev.tally.core.JournalEntry.Status.FENCED)));
  }
}

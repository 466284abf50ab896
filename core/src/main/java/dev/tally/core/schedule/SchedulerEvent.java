package dev.tally.core.schedule;

import java.util.Objects;

/**
 * What reaches the scheduler from other threads, queued until its next step. A closed set: each event
 * knows which of the scheduler's handlers it goes to, so the step needs no type tests.
 */
sealed interface SchedulerEvent {

  /** Hands this event to its handler, on the scheduler's thread. */
  void deliverTo(Handler handler);

  /** The scheduler's side: one method per kind of event. */
  interface Handler {
    void joined(WorkerHandle worker);

    void ended(WorkerHandle worker, AttemptReport report);

    void lost(WorkerHandle worker, String reason);

    void journalled(WorkerHandle worker, dev.tally.core.JournalEntry entry);

    void activated(long runId);

    void cancel(long runId, java.util.concurrent.CompletableFuture<dev.tally.core.store.CancelResult> done);
  }

  /** A worker session is ready for work. */
  record Joined(WorkerHandle worker) implements SchedulerEvent {
    public Joined {
      Objects.requireNonNull(worker, "worker");
    }

    @Override
    public void deliverTo(Handler handler) {
      handler.joined(worker);
    }
  }

  /** A worker reported how an attempt ended. */
  record Ended(WorkerHandle worker, AttemptReport report) implements SchedulerEvent {
    public Ended {
      Objects.requireNonNull(worker, "worker");
      Objects.requireNonNull(report, "report");
    }

    @Override
    public void deliverTo(Handler handler) {
      handler.ended(worker, report);
    }
  }

  /** A worker journalled a paid response. */
  record Journalled(WorkerHandle worker, dev.tally.core.JournalEntry entry) implements SchedulerEvent {
    public Journalled {
      Objects.requireNonNull(worker, "worker");
      Objects.requireNonNull(entry, "entry");
    }

    @Override
    public void deliverTo(Handler handler) {
      handler.journalled(worker, entry);
    }
  }

  /** A worker session ended. */
  record Lost(WorkerHandle worker, String reason) implements SchedulerEvent {
    public Lost {
      Objects.requireNonNull(worker, "worker");
    }

    @Override
    public void deliverTo(Handler handler) {
      handler.lost(worker, reason);
    }
  }

  /** A run's jobs may be leased. */
  record Activated(long runId) implements SchedulerEvent {
    @Override
    public void deliverTo(Handler handler) {
      handler.activated(runId);
    }
  }

  /** A run is to be cancelled. */
  record Cancel(long runId, java.util.concurrent.CompletableFuture<dev.tally.core.store.CancelResult> done)
      implements SchedulerEvent {
    public Cancel {
      Objects.requireNonNull(done, "done");
    }

    @Override
    public void deliverTo(Handler handler) {
      handler.cancel(runId, done);
    }
  }
}

package dev.tally.coordinator.net;

import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.schedule.WorkerHandle;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A {@link WorkerEvents} sink that records every event, with its arrival time, in a thread-safe list. */
final class RecordingEvents implements WorkerEvents {
  enum Kind { JOINED, ENDED, LOST }

  /** One event; {@code report} is set for ENDED, {@code reason} for LOST. */
  record Event(Kind kind, WorkerHandle worker, AttemptReport report, String reason, long atNanos) {}

  final List<Event> events = new CopyOnWriteArrayList<>();

  @Override
  public void workerJoined(WorkerHandle worker) {
    events.add(new Event(Kind.JOINED, worker, null, null, System.nanoTime()));
  }

  @Override
  public void attemptEnded(WorkerHandle worker, AttemptReport report) {
    events.add(new Event(Kind.ENDED, worker, report, null, System.nanoTime()));
  }

  /** The journal entries reported, in order. */
  final List<dev.tally.core.JournalEntry> journalled = new CopyOnWriteArrayList<>();

  @Override
  public void responseJournalled(WorkerHandle worker, dev.tally.core.JournalEntry entry) {
    journalled.add(entry);
  }

  @Override
  public void workerLost(WorkerHandle worker, String reason) {
    events.add(new Event(Kind.LOST, worker, null, reason, System.nanoTime()));
  }

  List<Event> of(Kind kind) {
    return events.stream().filter(e -> e.kind() == kind).toList();
  }

  /** The handle that joined with {@code workerId}, most recent first; null if none yet. */
  WorkerHandle joined(String workerId) {
    List<Event> joined = of(Kind.JOINED).stream().filter(e -> e.worker().workerId().equals(workerId)).toList();
    return joined.isEmpty() ? null : joined.get(joined.size() - 1).worker();
  }

  List<Event> lost(WorkerHandle worker) {
    return of(Kind.LOST).stream().filter(e -> e.worker() == worker).toList();
  }

  List<AttemptReport> reports(WorkerHandle worker) {
    return of(Kind.ENDED).stream().filter(e -> e.worker() == worker).map(Event::report).toList();
  }
}

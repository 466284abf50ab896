package dev.tally.coordinator.net.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.InfraFailure;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.schedule.WorkerHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A {@link WorkerEvents} sink that keeps every event in arrival order and checks, over all of them, the
 * contract the scheduler relies on (WorkerEvents' class doc). Thread-safe: called from the I/O threads.
 */
final class EventLog implements WorkerEvents {
  enum Kind { JOINED, ENDED, LOST }

  /** One event, with the thread that reported it and when (System.nanoTime), to diagnose orderings. */
  record Event(Kind kind, WorkerHandle worker, AttemptReport report, String reason, String thread, long atNanos) {
    Event(Kind kind, WorkerHandle worker, AttemptReport report, String reason) {
      this(kind, worker, report, reason, Thread.currentThread().getName(), System.nanoTime());
    }

    @Override
    public String toString() {
      return kind + " " + worker.workerId() + "@" + Integer.toHexString(System.identityHashCode(worker))
          + " [" + thread + " " + atNanos / 1_000 + "us, " + worker + "]"
          + (report != null ? " " + report : "") + (reason != null ? " '" + reason + "'" : "");
    }
  }

  private final List<Event> events = new CopyOnWriteArrayList<>();

  @Override
  public void workerJoined(WorkerHandle worker) {
    events.add(new Event(Kind.JOINED, worker, null, null));
  }

  @Override
  public void attemptEnded(WorkerHandle worker, AttemptReport report) {
    events.add(new Event(Kind.ENDED, worker, report, null));
  }

  /** Journal entries are the scheduler's to answer; the fuzz sink keeps no journal and answers nothing. */
  @Override
  public void responseJournalled(WorkerHandle worker, dev.tally.core.JournalEntry entry) {}

  @Override
  public void workerLost(WorkerHandle worker, String reason) {
    events.add(new Event(Kind.LOST, worker, null, reason));
  }

  int size() {
    return events.size();
  }

  /** Events from index {@code from} on. */
  List<Event> since(int from) {
    List<Event> all = List.copyOf(events);
    return all.subList(Math.min(from, all.size()), all.size());
  }

  /** The events of {@code worker}, in order. */
  List<Event> of(WorkerHandle worker) {
    return events.stream().filter(e -> e.worker() == worker).toList();
  }

  /** The most recent handle that joined as {@code workerId} at or after {@code from}; null if none. */
  WorkerHandle joined(String workerId, int from) {
    WorkerHandle found = null;
    for (Event e : since(from)) {
      if (e.kind() == Kind.JOINED && e.worker().workerId().equals(workerId)) {
        found = e.worker();
      }
    }
    return found;
  }

  boolean lost(WorkerHandle worker) {
    return of(worker).stream().anyMatch(e -> e.kind() == Kind.LOST);
  }

  /**
   * Checks every event so far: each session's events start with its one JOINED and end with at most one
   * LOST, nothing comes after it; every report holds exactly one of outcome and failure, a verdict, a
   * duration of at least 0 and only a failure kind a worker may report; and two sessions of one worker id
   * are never live at once (the superseded one is lost before its successor joins).
   */
  void checkWellFormed() {
    checkWellFormed(0);
  }

  /**
   * As {@link #checkWellFormed()}, but fails only for events from index {@code from} on (the history before
   * it still sets which sessions are live): one violation then fails only the try that caused it, and
   * jqwik can shrink that try's input.
   */
  void checkWellFormed(int from) {
    List<Event> all = List.copyOf(events);
    Map<WorkerHandle, List<Event>> bySession = new IdentityHashMap<>();
    Map<String, WorkerHandle> liveById = new HashMap<>();
    for (int i = 0; i < all.size(); i++) {
      Event e = all.get(i);
      boolean judged = i >= from;
      List<Event> session = bySession.computeIfAbsent(e.worker(), w -> new ArrayList<>());
      if (judged) {
        if (session.isEmpty()) {
          assertThat(e.kind()).as("a session's first event is its JOINED: %s", e).isEqualTo(Kind.JOINED);
        } else {
          assertThat(e.kind()).as("a session joins once: %s after %s", e, session).isNotEqualTo(Kind.JOINED);
        }
        assertThat(session.stream().noneMatch(x -> x.kind() == Kind.LOST))
            .as("an event after the session's LOST: %s after %s", e, session).isTrue();
      }
      session.add(e);
      String id = e.worker().workerId();
      switch (e.kind()) {
        case JOINED -> {
          WorkerHandle live = liveById.putIfAbsent(id, e.worker());
          if (judged && live != null) { // the description is costly: built only on failure
            throw new AssertionError(e + " joined while an earlier session of '" + id + "' (" + live
                + ") was not yet lost; events of '" + id + "' around it:" + around(all, e, 8, 6));
          }
          if (judged) {
            assertThat(e.worker().dispatchWindow()).as("dispatch window of %s", e).isPositive();
            assertThat(e.worker().slots()).as("slots of %s", e).isBetween(1, ReferenceModel.MAX_SLOTS);
          }
        }
        case LOST -> {
          liveById.remove(id, e.worker());
          if (judged) {
            assertThat(e.reason()).as("reason of %s", e).isNotBlank();
          }
        }
        case ENDED -> {
          if (judged) {
            checkReport(e);
          }
        }
      }
    }
  }

  /** The events of {@code e}'s worker id from {@code before} before it to {@code after} after it, one a line. */
  private static String around(List<Event> all, Event e, int before, int after) {
    String id = e.worker().workerId();
    List<Event> of = all.stream().filter(x -> x.worker().workerId().equals(id)).toList();
    int at = of.indexOf(e);
    return "\n  " + String.join("\n  ", of.subList(Math.max(0, at - before), Math.min(of.size(), at + after + 1))
        .stream().map(x -> (x == e ? "> " : "") + x).toList());
  }

  private static void checkReport(Event e) {
    AttemptReport r = e.report();
    assertThat(r).as("report of %s", e).isNotNull();
    assertThat(r.outcome() == null).as("exactly one of outcome and failure: %s", e).isNotEqualTo(r.failure() == null);
    if (r.outcome() != null) {
      assertThat(r.outcome().verdict()).as("verdict of %s", e).isNotNull();
      assertThat(r.outcome().durationMillis()).as("duration of %s", e).isNotNegative();
      assertThat(r.outcome().outputTail()).as("output tail of %s", e).isNotNull();
    } else {
      assertThat(r.failure().kind().reportedByWorkers()).as("a worker may only report its own kinds of failure: %s", e)
          .isTrue();
    }
  }
}

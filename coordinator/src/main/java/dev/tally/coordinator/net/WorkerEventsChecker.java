package dev.tally.coordinator.net;

import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.schedule.WorkerHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A {@link WorkerEvents} decorator that passes every event on unchanged and checks, as they come, the
 * contract the scheduler relies on:
 *
 * <ul>
 *   <li>for one handle, {@code workerJoined} comes first and once, {@code workerLost} last and at most
 *       once: no event before the join, none after the loss;
 *   <li>a worker id has at most one handle that joined and was not yet lost (a session superseded by a
 *       new one of its worker is reported lost before the new one joins).
 * </ul>
 *
 * <p>Each broken rule is kept as one sentence naming the rule, the event and the handle; a simulation or a
 * test reads them with {@link #violations()} or fails with {@link #verify()}. It keeps a small record of
 * every handle it has seen for its whole life, so it belongs in tests and simulations, not in a
 * long-running coordinator.
 *
 * <p>Thread-safety: safe from any thread (the I/O threads of a worker server). Events are checked in the
 * order they take its lock; the events of one handle come from one thread, and a session joins only after
 * its predecessor's loss was reported, so that order is the order they happened in.
 */
public final class WorkerEventsChecker implements WorkerEvents {
  /**
   * At most this many violations are kept word for word; the rest are only counted. One bug usually breaks
   * the contract over and over, and the first few say what it is.
   */
  public static final int MAX_KEPT_VIOLATIONS = 100;

  private enum SessionState { JOINED, LOST }

  private final WorkerEvents delegate;
  private final Map<WorkerHandle, SessionState> sessions = new IdentityHashMap<>();
  private final Map<String, Set<WorkerHandle>> liveByWorkerId = new HashMap<>();
  private final List<String> violations = new ArrayList<>();
  private long violationCount;
  private long eventCount;

  /**
   * Checks the events on their way to {@code delegate}.
   *
   * @throws NullPointerException if {@code delegate} is null
   */
  public WorkerEventsChecker(WorkerEvents delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /** A checker that passes events nowhere: for a test that only wants the verdict. */
  public static WorkerEventsChecker standalone() {
    return new WorkerEventsChecker(new WorkerEvents() {
      @Override
      public void workerJoined(WorkerHandle worker) {}

      @Override
      public void attemptEnded(WorkerHandle worker, AttemptReport report) {}

      @Override
      public void workerLost(WorkerHandle worker, String reason) {}
    });
  }

  @Override
  public void workerJoined(WorkerHandle worker) {
    synchronized (this) {
      long n = ++eventCount;
      SessionState state = sessions.get(worker);
      if (state == SessionState.JOINED) {
        violation("event " + n + ": workerJoined twice for " + worker);
      } else if (state == SessionState.LOST) {
        violation("event " + n + ": workerJoined after workerLost for " + worker);
      } else {
        sessions.put(worker, SessionState.JOINED);
        Set<WorkerHandle> live = liveByWorkerId.computeIfAbsent(worker.workerId(), id -> new LinkedHashSet<>());
        if (!live.isEmpty()) {
          violation("event " + n + ": " + worker + " joined while worker '" + worker.workerId()
              + "' already had a joined session not yet lost: " + live);
        }
        live.add(worker);
      }
    }
    delegate.workerJoined(worker);
  }

  @Override
  public void attemptEnded(WorkerHandle worker, AttemptReport report) {
    synchronized (this) {
      long n = ++eventCount;
      SessionState state = sessions.get(worker);
      if (state == null) {
        violation("event " + n + ": attemptEnded before workerJoined for " + worker + " (" + report + ")");
      } else if (state == SessionState.LOST) {
        violation("event " + n + ": attemptEnded after workerLost for " + worker + " (" + report + ")");
      }
    }
    delegate.attemptEnded(worker, report);
  }

  @Override
  public void responseJournalled(WorkerHandle worker, dev.tally.core.JournalEntry entry) {
    synchronized (this) {
      long n = ++eventCount;
      SessionState state = sessions.get(worker);
      if (state == null) {
        violation("event " + n + ": responseJournalled before workerJoined for " + worker + " (job " + entry.jobId() + ")");
      } else if (state == SessionState.LOST) {
        violation("event " + n + ": responseJournalled after workerLost for " + worker + " (job " + entry.jobId() + ")");
      }
    }
    delegate.responseJournalled(worker, entry);
  }

  @Override
  public void workerLost(WorkerHandle worker, String reason) {
    synchronized (this) {
      long n = ++eventCount;
      SessionState state = sessions.get(worker);
      if (state == null) {
        violation("event " + n + ": workerLost before workerJoined for " + worker + " ('" + reason + "')");
      } else if (state == SessionState.LOST) {
        violation("event " + n + ": workerLost twice for " + worker + " ('" + reason + "')");
      } else {
        sessions.put(worker, SessionState.LOST);
        Set<WorkerHandle> live = liveByWorkerId.get(worker.workerId());
        live.remove(worker);
        if (live.isEmpty()) {
          liveByWorkerId.remove(worker.workerId());
        }
      }
    }
    delegate.workerLost(worker, reason);
  }

  /** The first {@link #MAX_KEPT_VIOLATIONS} violations, in the order they happened; empty if none. */
  public synchronized List<String> violations() {
    return List.copyOf(violations);
  }

  /** How many events broke the contract, kept or not. */
  public synchronized long violationCount() {
    return violationCount;
  }

  /** How many events were checked. */
  public synchronized long eventCount() {
    return eventCount;
  }

  /**
   * Does nothing if every event so far kept the contract.
   *
   * @throws IllegalStateException if any broke it; the message gives the count and the first violations
   */
  public synchronized void verify() {
    if (violationCount > 0) {
      throw new IllegalStateException(violationCount + " of " + eventCount
          + " worker events broke the WorkerEvents contract:\n  " + String.join("\n  ", violations));
    }
  }

  private void violation(String sentence) {
    violationCount++;
    if (violations.size() < MAX_KEPT_VIOLATIONS) {
      violations.add(sentence);
    }
  }
}

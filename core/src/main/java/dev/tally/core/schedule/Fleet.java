package dev.tally.core.schedule;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The worker sessions the scheduler dispatches to, and what each holds: the scheduler's view of who runs
 * what. Touched only by the scheduler's thread.
 */
final class Fleet {
  private final Map<WorkerHandle, Holdings> workers = new LinkedHashMap<>();

  /** One leased attempt out on a worker, with when it was leased on both clocks. */
  record InFlight(long runId, long token, int attempt, long leasedAtMillis, long leasedAtNanos) {
    /** Milliseconds since the lease, on the monotonic clock. */
    long elapsedMillis(long nowNanos) {
      return Math.max(0, (nowNanos - leasedAtNanos) / 1_000_000);
    }
  }

  /**
   * What one session holds, in assignment order: a worker runs its assignments in order, so the first
   * {@code slots} are the ones running on it (the rest are queued behind them).
   */
  static final class Holdings {
    final Map<Long, InFlight> inFlight = new LinkedHashMap<>();
  }

  /** Adds a session (no-op if present) and returns its holdings. */
  Holdings join(WorkerHandle worker) {
    return workers.computeIfAbsent(worker, w -> new Holdings());
  }

  /** Removes a session; returns what it held, or null if it was not here. */
  Holdings leave(WorkerHandle worker) {
    return workers.remove(worker);
  }

  /** The session's holdings, or null if it is not here. */
  Holdings holdings(WorkerHandle worker) {
    return workers.get(worker);
  }

  Set<Map.Entry<WorkerHandle, Holdings>> entries() {
    return workers.entrySet();
  }

  Collection<WorkerHandle> handles() {
    return workers.keySet();
  }

  int size() {
    return workers.size();
  }

  boolean isEmpty() {
    return workers.isEmpty();
  }

  /** Whether another session of the same worker id is here. */
  boolean hasWorkerId(String workerId) {
    for (WorkerHandle w : workers.keySet()) {
      if (w.workerId().equals(workerId)) {
        return true;
      }
    }
    return false;
  }

  /** How many assignments are out. */
  int inFlightCount() {
    int n = 0;
    for (Holdings h : workers.values()) {
      n += h.inFlight.size();
    }
    return n;
  }

  /** The jobs some session holds. */
  Set<Long> heldJobIds() {
    Set<Long> ids = new HashSet<>();
    for (Holdings h : workers.values()) {
      ids.addAll(h.inFlight.keySet());
    }
    return ids;
  }

  /** Whether any session has room in its dispatch window. */
  boolean hasFreeWindow() {
    for (Map.Entry<WorkerHandle, Holdings> e : workers.entrySet()) {
      if (e.getKey().dispatchWindow() > e.getValue().inFlight.size()) {
        return true;
      }
    }
    return false;
  }

  /** The sessions that hold {@code jobId} under {@code token} (at most one, barring a bug). */
  List<WorkerHandle> holdersOf(long jobId, long token) {
    List<WorkerHandle> out = new ArrayList<>(1);
    for (Map.Entry<WorkerHandle, Holdings> e : workers.entrySet()) {
      InFlight f = e.getValue().inFlight.get(jobId);
      if (f != null && f.token() == token) {
        out.add(e.getKey());
      }
    }
    return out;
  }
}

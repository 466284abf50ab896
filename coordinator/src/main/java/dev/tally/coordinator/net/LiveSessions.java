package dev.tally.coordinator.net;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The {@link SessionRegistry} over a concurrent map from worker id to its live session: the worker
 * server's, and the one a simulation can use as well (one thread is a special case of many).
 *
 * <p>Thread-safety: safe from any thread; each method but {@link #namesakes} is one atomic map operation,
 * and that one is a weakly consistent scan (a session that registers meanwhile may be missed: the two
 * workers' next Hello finds it).
 */
public final class LiveSessions implements SessionRegistry {
  private final ConcurrentMap<String, RemoteWorker> liveByWorkerId = new ConcurrentHashMap<>();

  @Override
  public RemoteWorker register(String workerId, RemoteWorker session) {
    RemoteWorker previous = liveByWorkerId.put(workerId, session);
    return previous == session ? null : previous;
  }

  @Override
  public void restore(String workerId, RemoteWorker session, RemoteWorker predecessor) {
    liveByWorkerId.replace(workerId, session, predecessor);
  }

  @Override
  public void unregister(String workerId, RemoteWorker session) {
    liveByWorkerId.remove(workerId, session);
  }

  /** Scans every live session: a Hello is rare next to the frames of a session, and a fleet is thousands at most. */
  @Override
  public List<RemoteWorker> namesakes(String workerId, String name) {
    return liveByWorkerId.entrySet().stream()
        .filter(e -> !e.getKey().equals(workerId) && e.getValue().name().equals(name))
        .map(Map.Entry::getValue)
        .toList();
  }

  /** The live session of {@code workerId}, or null. */
  public RemoteWorker live(String workerId) {
    return liveByWorkerId.get(workerId);
  }

  /** How many workers have a live session. */
  public int size() {
    return liveByWorkerId.size();
  }
}

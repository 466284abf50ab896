package dev.tally.coordinator.net;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The {@link SessionRegistry} over a concurrent map from worker id to its live session: the worker
 * server's, and the one a simulation can use as well (one thread is a special case of many).
 *
 * <p>Thread-safety: safe from any thread; each method is one atomic map operation.
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

  /** The live session of {@code workerId}, or null. */
  public RemoteWorker live(String workerId) {
    return liveByWorkerId.get(workerId);
  }

  /** How many workers have a live session. */
  public int size() {
    return liveByWorkerId.size();
  }
}

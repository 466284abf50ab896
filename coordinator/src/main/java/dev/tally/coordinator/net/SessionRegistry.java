package dev.tally.coordinator.net;

import java.util.List;

/**
 * Which session is a worker's live one, as the {@link ConnectionCore}s of one coordinator share it: a
 * {@code Hello} registers its session, and gets back the one it supersedes. {@link LiveSessions} is the
 * implementation both the worker server and the simulation use; a test or a simulation may wrap it to
 * inject faults.
 *
 * <p>A worker's "live" session is the one a new {@code Hello} of that worker must supersede: the last one
 * registered, until it ends. A session that superseded another but ended before joining gives the entry
 * back to its predecessor ({@link #restore}), which is still live until its own loss is reported.
 *
 * <p>Thread-safety: implementations must be safe to call from any thread, since the sessions of one worker
 * may run on different threads (Netty event loops); every method is atomic and none blocks.
 */
public interface SessionRegistry {

  /**
   * Makes {@code session} the live session of {@code workerId}.
   *
   * @return the session it replaces, or null if there was none (or it was {@code session} itself)
   */
  RemoteWorker register(String workerId, RemoteWorker session);

  /**
   * Gives the entry of {@code workerId} back to {@code predecessor}, if {@code session} (which superseded
   * it but never joined) still holds it; otherwise changes nothing.
   */
  void restore(String workerId, RemoteWorker session, RemoteWorker predecessor);

  /** Removes {@code session} if it is still the live session of {@code workerId}; otherwise changes nothing. */
  void unregister(String workerId, RemoteWorker session);

  /**
   * The live sessions of workers other than {@code workerId} that go by {@code name}: a name should tell
   * workers apart (results and {@code tally status} show workers by name), while ids are what the
   * protocol tells them apart by.
   */
  List<RemoteWorker> namesakes(String workerId, String name);
}

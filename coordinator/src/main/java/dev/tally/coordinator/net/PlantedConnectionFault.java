package dev.tally.coordinator.net;

/**
 * A known bug that a {@link ConnectionCore} can be built with on purpose, to prove that the checks around
 * it (a {@link WorkerEventsChecker}, the simulation's checker) catch real bugs, in the spirit of
 * FoundationDB's BUGGIFY. Production always uses {@link #NONE}; it is a constructor argument, never a
 * global flag, so a planted core and a correct one can run side by side.
 */
public enum PlantedConnectionFault {
  /** No planted bug: the core as it ships. */
  NONE,

  /**
   * A session that has been closed (superseded by a new session of its worker, reaped, refused...) still
   * forwards the {@code Result} frames that reach it as {@code attemptEnded} with its old handle, also
   * after its {@code workerLost}. The correct core ignores every frame once it has decided to close.
   *
   * <p>It shows only when frames reach a closed session: Netty hands over the rest of a read that was
   * already decoded, and a simulated network should deliver what was in flight when the session closed.
   */
  ACCEPT_RESULT_FROM_SUPERSEDED_SESSION,

  /**
   * A session whose {@code Hello} supersedes a live session of the same worker joins at once, before the
   * superseded session is reported lost (it still closes it): for a while the scheduler sees two joined
   * sessions of one worker, and the old one's loss arrives after the new one's first events.
   */
  JOIN_BEFORE_PREDECESSOR_LOST,

  /**
   * A session the core reaps for silence is never reported lost: one close path forgets to tell the
   * scheduler. The scheduler keeps the dead session as connected, renews its leases for ever and never
   * redelivers its jobs, so the run never finishes (I1, I4). Every other way a session ends is reported as
   * it should be.
   */
  REAP_WITHOUT_LOSS,

  /**
   * The core welcomes a Hello whatever worker token it carries, or none: the token check is gone, and a
   * process that is not one of the fleet's joins and is given work.
   */
  ACCEPT_ANY_TOKEN
}

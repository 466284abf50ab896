package dev.tally.core.schedule;

import dev.tally.core.Assignment;
import java.util.List;

/**
 * What the scheduler dispatches through: one worker session, remote (a TCP connection) or local
 * (in-process). The scheduler cannot tell the kinds apart.
 *
 * <p>Every method is non-blocking and safe to call from any thread. Sending to a handle whose session has
 * ended is not an error: the message is dropped, and the session's end reaches the scheduler as
 * {@link WorkerEvents#workerLost}. Reports come back through the {@link WorkerEvents} the handle was
 * created with, never as return values: a result can arrive for an assignment made on an earlier session
 * (a worker's outbox re-sent after a reconnect), and it must be recorded all the same.
 *
 * <p>Identity: two handles are the same worker session only if they are the same object.
 */
public interface WorkerHandle {

  /** The worker's stable id (the same across its reconnects). */
  String workerId();

  /** The worker's name for people and results files. */
  String name();

  /** How many assignments this worker may hold at once (its slots plus a prefetch); at least 1. */
  int dispatchWindow();

  /**
   * Whether the worker may be given new jobs: false while its failure detector's suspicion is at or
   * above the drain level (it keeps and finishes what it has). Safe from any thread.
   */
  default boolean acceptingWork() {
    return true;
  }

  /** The worker's current suspicion in words, for status and logs (e.g. "phi 0.3"); may be empty. */
  default String suspicion() {
    return "";
  }

  /**
   * The worker's current suspicion as a number on its detector's scale ({@link
   * dev.tally.core.detect.FailureDetector#suspicion}), or NaN before the first liveness check.
   */
  default double suspicionLevel() {
    return Double.NaN;
  }

  /** How many cases the worker runs at once; at most {@link #dispatchWindow()}. */
  default int slots() {
    return dispatchWindow();
  }

  /**
   * The leases the worker said it still holds when this session began (after a reconnect, or after the
   * coordinator restarted); empty for a new worker. The scheduler keeps those whose lease is still
   * current (no work is thrown away) and tells the worker to abandon the others.
   */
  default java.util.List<HeldLease> heldAtJoin() {
    return java.util.List.of();
  }

  /**
   * Whether this session ended because the same worker opened a new one (it reconnected while this one
   * still looked alive): its successor's {@link #heldAtJoin} says which of this session's jobs the worker
   * still holds. The scheduler keeps those leases for the successor instead of releasing them. Read once
   * the session's loss is reported.
   */
  default boolean superseded() {
    return false;
  }

  /**
   * Whether the worker said it is shutting down (a graceful drain): jobs it still held when its session
   * ended were stopped by its drain, not by a crash, and say nothing about their cases.
   */
  default boolean shuttingDown() {
    return false;
  }

  /** Sends leased assignments to the worker. */
  void assign(List<Assignment> assignments);

  /** Tells the worker what became of its reports; it drops them from its outbox. */
  void acknowledge(List<Ack> acks);

  /**
   * Tells the worker what became of the responses it journalled; each waiting attempt goes on (or, refused,
   * stops). A handle whose worker journals nothing ignores it.
   */
  default void acknowledgeJournal(List<JournalAck> acks) {}

  /** Tells the worker to stop a job whose lease it no longer holds. */
  void abandon(long jobId, long token, String reason);

  /** Ends the session (the worker may reconnect); {@link WorkerEvents#workerLost} follows. */
  void close(String reason);
}

package dev.tally.worker;

import java.util.List;

/**
 * Where the session core has its cases run: "run this job" one way, "this job ended with this
 * evaluation" ({@link CaseEnd}, through {@link SessionCore#caseEnded}) the other. In a worker process the
 * runner is {@link Slots} (long-lived slot threads); in the deterministic simulation it is a simulated
 * set of slots under virtual time.
 *
 * <p>Contract:
 *
 * <ul>
 *   <li>A started job runs at most once, when one of the runner's slots is free, in start order.
 *   <li>Before a slot starts a case it reserves room in the session's {@link Outbox} ({@link
 *       Outbox#awaitRoom()} or {@link Outbox#tryReserveRoom()}); a case that then reports a {@link CaseEnd}
 *       hands that room to the core, one that does not report gives it back ({@link Outbox#returnRoom()}).
 *       That is what bounds the outbox.
 *   <li>A job {@linkplain #cancel cancelled} or {@linkplain #withdrawQueued withdrawn} is never reported,
 *       however far it got.
 * </ul>
 *
 * <p>Threading: the core calls these methods from its one thread and must not be blocked by them;
 * implementations report {@link CaseEnd}s from wherever their slots run, and the driver hands them to
 * the core's thread.
 */
public interface CaseRunner {
  /**
   * Queues {@code job} to run when a slot is free.
   *
   * @return false if the runner cannot take it (its queue is full); nothing was queued
   */
  boolean start(AssignedJob job);

  /**
   * Stops the attempt {@code key} if it is still queued (it will never start) or running (it is
   * cancelled: an exec case's process tree is killed); either way it is never reported.
   *
   * @param reason why, for the evaluator and the logs
   * @return true if this call stopped it, false if the runner no longer had it (it already ended and its
   *     {@link CaseEnd} is on its way, or it was never started here)
   */
  boolean cancel(JobKey key, String reason);

  /**
   * Takes back every queued job no slot has started yet, in queue order: they will never start nor be
   * reported. Running jobs are left alone.
   *
   * @return the withdrawn attempts
   */
  List<JobKey> withdrawQueued();
}

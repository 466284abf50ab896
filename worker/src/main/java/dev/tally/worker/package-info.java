/**
 * The worker process's side of Tally: {@link dev.tally.worker.WorkerSession} (hello, heartbeats,
 * reconnect, outbox) and the slot threads that run cases.
 *
 * <p>Threading in one picture: one I/O thread (the session's Netty event loop) owns the connection, the
 * heartbeat timer, the run configurations and the outbox; {@code slots} long-lived slot threads run the
 * evaluators. The two sides meet only through thread-safe hand-offs (the assignment queue one way, a
 * ready-results queue drained on the event loop the other way), so a busy slot can never delay a
 * heartbeat. The evaluators themselves live in {@link dev.tally.worker.eval}.
 */
package dev.tally.worker;

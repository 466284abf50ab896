/**
 * The worker process's side of Tally, split by duty:
 *
 * <ul>
 *   <li>{@link dev.tally.worker.SessionCore}: the protocol at the worker as a state machine (Hello,
 *       Welcome, Assign, results, acks, Abandon, Drain, heartbeats, judging the coordinator's silence,
 *       graceful drain), with no sockets, threads or clocks; it acts through a {@link
 *       dev.tally.worker.SessionPort} and a {@link dev.tally.worker.CaseRunner}, so the deterministic
 *       simulation can drive it as the Netty driver does;
 *   <li>{@link dev.tally.worker.WorkerSession}: the Netty driver of that core, for a worker process;
 *   <li>{@link dev.tally.worker.Outbox}: results until acknowledged, with the bound that holds slots back;
 *   <li>{@link dev.tally.worker.Reconnector} and {@link dev.tally.worker.Backoff}: when to try the
 *       coordinator again, what to log meanwhile, when to give up;
 *   <li>{@code Slots}: the long-lived slot threads that run cases; {@link dev.tally.worker.LocalWorker},
 *       a worker inside the coordinator's process.
 * </ul>
 *
 * <p>Threading in one picture: one I/O thread (the session's Netty event loop) owns the core, hence the
 * connection, the timers, the run configurations, the held jobs and the outbox's entries; {@code slots}
 * long-lived slot threads run the evaluators. The two sides meet only through thread-safe hand-offs (the
 * slots' queue one way, a queue of finished cases drained on the event loop the other way, and the
 * outbox's semaphore of room), so a busy slot can never delay a heartbeat. The evaluators themselves live
 * in {@link dev.tally.worker.eval}.
 */
package dev.tally.worker;

/**
 * The coordinator: the {@link dev.tally.coordinator.Coordinator} that ties the store, the scheduler and
 * the worker server together, and the {@link dev.tally.coordinator.SchedulerLoop} thread that steps the
 * scheduler. The network side (frame handling, the per-socket connection actor, {@code RemoteWorker})
 * is in {@code dev.tally.coordinator.net}.
 */
package dev.tally.coordinator;

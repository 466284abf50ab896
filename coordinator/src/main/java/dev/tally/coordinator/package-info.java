/**
 * The coordinator: {@link dev.tally.coordinator.CoordinatorBuilder}, which assembles a running
 * {@link dev.tally.coordinator.Coordinator} (store, scheduler loop, worker server) and holds the
 * product's defaults; the {@link dev.tally.coordinator.SchedulerLoop} thread that steps the scheduler;
 * {@link dev.tally.coordinator.RunResumption}, which run a coordinator resumes after an earlier one died;
 * and {@link dev.tally.coordinator.CoordinatorLock}, one coordinator per store. The network side (frame
 * handling, the per-socket connection actor, {@code RemoteWorker}) is in {@code dev.tally.coordinator.net}.
 */
package dev.tally.coordinator;

/**
 * Scheduling: the {@link dev.tally.core.schedule.Scheduler} that leases jobs to workers and puts failed
 * attempts back, the {@link dev.tally.core.schedule.WorkerHandle} it dispatches through, and the
 * {@link dev.tally.core.schedule.RetryPolicy} that spaces redeliveries.
 */
package dev.tally.core.schedule;

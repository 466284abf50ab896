/**
 * Scheduling: the {@link dev.tally.core.schedule.Scheduler} that leases jobs to workers and puts failed
 * attempts back, and the {@link dev.tally.core.schedule.WorkerHandle} it dispatches through. A step is a
 * loop over the scheduler's duties, each a class of its own: {@code RestartGrace}, {@code
 * ExpiredLeaseSweep}, {@code OverdueAttempts}, {@code Reports}, {@code LeaseOffers}, {@code
 * LeaseRenewals}, {@code OutlierWatch}, {@code WorkerStatusReports}. What happens to a released job is
 * {@link dev.tally.core.RedeliveryPolicy}'s to decide.
 */
package dev.tally.core.schedule;

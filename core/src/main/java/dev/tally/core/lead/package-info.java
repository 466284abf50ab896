/**
 * Coordinators that take over from each other: the store's leader row ({@link dev.tally.core.lead.LeaderRow}),
 * the lease rule each coordinator follows ({@link dev.tally.core.lead.LeaderLease}: take the lead, renew,
 * stand by, step down), and where a leader says it can be reached ({@link dev.tally.core.lead.LeaderAddress}).
 * The store refuses a write whose leader epoch is not the row's ({@link
 * dev.tally.core.store.StaleEpochException}). No I/O: the coordinator's {@code Leadership} drives it.
 */
package dev.tally.core.lead;

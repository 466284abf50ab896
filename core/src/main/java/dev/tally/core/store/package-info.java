/**
 * The store port: the source of truth for runs, jobs, leases and outcomes.
 *
 * <p>{@link dev.tally.core.store.Store} is the role; SQLite (and later PostgreSQL) implementations live in
 * the {@code tally-store} module and pass one shared contract test suite. Everything a scheduler step
 * changes goes through {@link dev.tally.core.store.Store#apply} as one batch in one transaction: that is
 * Tally's group commit.
 */
package dev.tally.core.store;

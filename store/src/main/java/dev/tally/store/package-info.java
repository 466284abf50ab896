/**
 * Implementations of the store port ({@link dev.tally.core.store.Store}).
 *
 * <p>{@link dev.tally.store.SqliteStore} is the embedded default: one SQLite file in WAL mode, one write
 * connection that applies each scheduler step as one transaction (Tally's group commit), a small pool of read
 * connections for status and the API. Its schema is the Flyway migrations under
 * {@code db/migration/sqlite}. The work is {@link dev.tally.store.JdbcStore}'s, in SQL written once; what
 * SQLite does its own way is {@code SqliteDialect}'s. The shared contract test suite,
 * {@code StoreContractTest}, ships in this module's test jar so every other store implementation can run it.
 */
package dev.tally.store;

/**
 * Secrets as values: {@link dev.tally.core.security.Secret}, a token that never prints its value and is
 * compared in constant time. Loading one (from a file or the environment) is the coordinator module's
 * {@code Secrets}; this package does no I/O.
 */
package dev.tally.core.security;

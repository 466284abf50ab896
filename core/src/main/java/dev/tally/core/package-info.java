/**
 * Tally's core: the values every part shares (cases, outcomes, assignments), the store port, the
 * scheduler, the failure detectors and the retry policy.
 *
 * <p>Nothing in this module does I/O or reads a clock of its own: time comes in through
 * {@link java.time.Clock} and {@link dev.tally.core.Ticker}, so that a deterministic simulation can
 * drive the same code with virtual time.
 */
package dev.tally.core;

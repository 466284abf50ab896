/**
 * Proof, not product: {@code tally simulate}, the command-line driver of the deterministic simulation
 * (module {@code simulation}): many seeds, one seed replayed with its trace, or a planted fault.
 */
package dev.tally.cli.simulate;

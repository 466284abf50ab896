/**
 * Proof, not product: {@code tally chaos} runs real coordinator and worker processes, kills and freezes
 * them with real signals, and checks the invariants on what the store recorded.
 */
package dev.tally.cli.chaos;

/**
 * The product's command line: {@code tally run}, {@code resume}, {@code worker} and {@code status}, and
 * what they share (dataset reading, local worker processes, the results and summary files). Commands
 * parse arguments and print; the product's defaults and rules live in the modules they call.
 *
 * <p>The proving tools sit in sub-packages of their own: {@link dev.tally.cli.chaos} (real-process
 * fault injection), {@link dev.tally.cli.bench} (throughput, failover and detector benchmarks) and
 * {@link dev.tally.cli.simulate} (the deterministic simulation's driver).
 */
package dev.tally.cli;

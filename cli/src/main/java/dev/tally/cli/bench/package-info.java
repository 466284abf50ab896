/**
 * Proof, not product: the benchmarks ({@code tally bench} for throughput, {@code bench-failover} for
 * detection and redelivery with real processes, {@code bench-detectors} for the failure detectors on
 * replayed heartbeat traces). Each prints the machine, its settings and its command with its figures.
 */
package dev.tally.cli.bench;

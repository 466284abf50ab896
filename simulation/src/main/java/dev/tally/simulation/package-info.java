/**
 * Deterministic simulation: the real scheduler, failure detectors, outlier detector, lease and fencing
 * logic and recording semantics, driven in one thread under virtual time by simulated workers and a
 * simulated network, every choice drawn from one seeded random source.
 */
package dev.tally.simulation;

/**
 * Deterministic simulation: the real scheduler, failure detectors, outlier detector, lease and fencing
 * logic and recording semantics, driven in one thread under virtual time by simulated workers and a
 * simulated network, every choice drawn from one seeded random source (TigerBeetle's VOPR and
 * FoundationDB's simulator are the models).
 *
 * <ul>
 *   <li>{@link dev.tally.simulation.Simulation}: one history for one seed, with faults at named sites
 *       ({@link dev.tally.simulation.FaultKind}); same seed, same trace, byte for byte.
 *   <li>{@link dev.tally.simulation.InMemoryStore}: the store port in memory, with SQLite's semantics (it
 *       passes the shared contract suite), durable across a simulated coordinator crash.
 *   <li>{@link dev.tally.simulation.Checker}: invariants I1–I5 from the store and from the workers' own
 *       {@link dev.tally.simulation.WorkerLog}, and the leader rule from the {@link
 *       dev.tally.simulation.EpochLedger} of coordinators ({@link dev.tally.simulation.SimCoordinator}) that
 *       take over from each other.
 *   <li>{@link dev.tally.simulation.SimulationRunner}: one seed or many; {@code tally simulate} wraps it.
 *   <li>{@link dev.tally.simulation.PlantedFault}: known bugs to plant, proving the checker catches them.
 * </ul>
 */
package dev.tally.simulation;

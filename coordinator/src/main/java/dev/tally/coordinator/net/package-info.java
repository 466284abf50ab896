/**
 * The coordinator's worker port. The connection actor comes in two parts: its decision core, {@link
 * dev.tally.coordinator.net.ConnectionCore} (one worker session's states and transitions, with no Netty,
 * no threads and no clock, so that the simulation drives the same code), and {@code WorkerConnection}, the
 * thin Netty driver that feeds it a socket's events and carries out its decisions through a {@link
 * dev.tally.coordinator.net.ConnectionPort}. {@link dev.tally.coordinator.net.WorkerServer} accepts the
 * sockets and keeps each worker's live session ({@link dev.tally.coordinator.net.LiveSessions}, a {@link
 * dev.tally.coordinator.net.SessionRegistry}); {@link dev.tally.coordinator.net.RemoteWorker} is the
 * {@link dev.tally.core.schedule.WorkerHandle} the scheduler dispatches through.
 *
 * <p>Netty-free, for the simulation and unit tests: {@code ConnectionCore}, {@code ConnectionPort}, {@code
 * SessionRegistry}, {@code LiveSessions}, {@code RemoteWorker}, {@code PlantedConnectionFault} and {@code
 * WorkerEventsChecker}. Netty: {@code WorkerServer} (its {@code Settings} excepted) and {@code
 * WorkerConnection}. {@link dev.tally.protocol.mapping.WireMapping} converts core values to and from their
 * protobuf forms.
 */
package dev.tally.coordinator.net;

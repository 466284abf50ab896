/**
 * The coordinator's worker port: {@link dev.tally.coordinator.net.WorkerServer} accepts sockets, one
 * {@code WorkerConnection} (the connection actor) per socket runs the protocol on its event loop, and
 * {@link dev.tally.coordinator.net.RemoteWorker} is the {@link dev.tally.core.schedule.WorkerHandle} the
 * scheduler dispatches through. {@link dev.tally.protocol.mapping.WireMapping} converts core values to
 * and from their protobuf forms.
 */
package dev.tally.coordinator.net;

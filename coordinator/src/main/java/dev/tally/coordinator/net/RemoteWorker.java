package dev.tally.coordinator.net;

import dev.tally.core.Assignment;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.HeldLease;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.protocol.Abandon;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.mapping.WireMapping;
import dev.tally.protocol.ResultAck;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The {@link WorkerHandle} of one remote worker session: what the scheduler dispatches through. Each call
 * builds its frames on the caller's thread, then hops to the connection's event loop (or runs there
 * directly when already on it) to write them, with one flush per call: a batch of assignments costs one
 * system call, not one per assignment.
 *
 * <p>Sending after the session ended is not an error: the frames are dropped, and the session's end
 * reaches the scheduler as {@link dev.tally.core.schedule.WorkerEvents#workerLost}. No method blocks or
 * throws for the state of the connection.
 *
 * <p>Thread-safety: every method is safe from any thread. Identity: one instance per session, so two
 * sessions of the same worker (before and after a reconnect) are different handles with the same
 * {@link #workerId()}.
 */
public final class RemoteWorker implements WorkerHandle {
  private final WorkerConnection connection;
  private final String workerId;
  private final String name;
  private final int dispatchWindow;
  private final List<HeldLease> heldAtJoin;
  private final int slots;
  // Written by the connection's reaper check on its event loop, read by the scheduler's thread.
  private volatile boolean draining;
  private volatile String suspicion = "";

  RemoteWorker(WorkerConnection connection, String workerId, String name, int slots, int dispatchWindow, List<HeldLease> heldAtJoin) {
    this.connection = connection;
    this.slots = slots;
    this.workerId = workerId;
    this.name = name;
    this.dispatchWindow = dispatchWindow;
    this.heldAtJoin = List.copyOf(heldAtJoin);
  }

  /** False while the connection's failure detector is at or above its drain level. */
  @Override
  public boolean acceptingWork() {
    return !draining;
  }

  @Override
  public String suspicion() {
    return suspicion;
  }

  /** Called by the connection's liveness check, on its event loop. */
  void suspicion(double level, boolean draining, String description) {
    this.draining = draining;
    this.suspicion = description;
  }

  /** The worker's slots, from its Hello. */
  @Override
  public int slots() {
    return slots;
  }

  /** The jobs the worker's Hello said it holds (running, or with a result in its outbox). */
  @Override
  public List<HeldLease> heldAtJoin() {
    return heldAtJoin;
  }

  @Override
  public String workerId() {
    return workerId;
  }

  @Override
  public String name() {
    return name;
  }

  /** The worker's slots from its Hello plus the server's prefetch (by default, twice its slots). */
  @Override
  public int dispatchWindow() {
    return dispatchWindow;
  }

  /**
   * Sends each assignment as an Assign frame, preceded by a RunConfig the first time this session sees
   * its run, and flushes once.
   */
  @Override
  public void assign(List<Assignment> assignments) {
    if (assignments.isEmpty()) {
      return;
    }
    List<Assignment> copy = List.copyOf(assignments); // the caller may reuse its list once we return
    List<Envelope> frames = new ArrayList<>(copy.size());
    for (Assignment a : copy) {
      frames.add(Envelope.newBuilder().setAssign(WireMapping.toWire(a)).build());
    }
    connection.onLoop(() -> connection.writeAssignments(copy, frames));
  }

  /** Sends one ResultAck frame holding every entry. */
  @Override
  public void acknowledge(List<Ack> acks) {
    if (acks.isEmpty()) {
      return;
    }
    ResultAck.Builder b = ResultAck.newBuilder();
    for (Ack ack : acks) {
      b.addEntries(WireMapping.toWire(ack));
    }
    Envelope frame = Envelope.newBuilder().setResultAck(b).build();
    connection.onLoop(() -> connection.writeAndFlush(frame));
  }

  @Override
  public void abandon(long jobId, long token, String reason) {
    Envelope frame = Envelope.newBuilder()
        .setAbandon(Abandon.newBuilder().setJobId(jobId).setToken(token).setReason(Objects.toString(reason, "")))
        .build();
    connection.onLoop(() -> connection.writeAndFlush(frame));
  }

  /** Sends Goodbye with the reason and closes; workerLost follows with "closed by coordinator: reason". */
  @Override
  public void close(String reason) {
    connection.closeFromAnyThread("closed by coordinator: " + reason);
  }

  @Override
  public String toString() {
    return "RemoteWorker[" + workerId + " '" + name + "' at " + connection.remoteAddress() + "]";
  }
}

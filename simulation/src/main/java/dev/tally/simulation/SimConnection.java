package dev.tally.simulation;

import dev.tally.core.Assignment;
import dev.tally.core.detect.FailureDetector;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.HeldLease;
import dev.tally.core.schedule.WorkerHandle;
import java.util.List;

/**
 * One simulated worker session: the link between a {@link SimWorker} and the coordinator, and the
 * coordinator's connection actor for it. It is the {@link WorkerHandle} the scheduler dispatches through
 * (one object per session, as {@code RemoteWorker} is), and it holds that session's failure detector.
 *
 * <p>The link is two FIFO pipes (as TCP is): a frame is delivered after a latency drawn from the seed,
 * never before a frame sent earlier on the same pipe. A cut drops what is in flight both ways and
 * everything sent after it. Sends to an ended session are dropped, never errors, as the {@link
 * WorkerHandle} contract says.
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class SimConnection implements WorkerHandle {
  final Simulation sim;
  final SimWorker worker;
  final long number;
  final List<HeldLease> held;

  // ---- the coordinator's side (the connection actor) ----
  /** The coordinator incarnation that accepted this session; -1 until accepted. */
  int epoch = -1;
  boolean accepted;
  boolean coordinatorClosed;
  boolean lostReported;
  FailureDetector detector;
  long lastFrameMillis;
  boolean draining;

  // ---- the wire ----
  /** Cut: every frame in flight or sent from now on is lost, both ways. */
  boolean cut;
  /** The next ack the coordinator sends cuts the link instead of arriving (a commit whose ack is lost). */
  boolean cutAtNextAck;
  /** Frames toward the workers are discarded (the coordinator died and its kernel reset the socket). */
  boolean resetTowardWorker;
  /** Frames toward the coordinator are held until this virtual time (a network stall), then burst. */
  long stallUntilMillis;
  long lastToCoordinatorMillis;
  long lastToWorkerMillis;

  SimConnection(Simulation sim, SimWorker worker, long number, List<HeldLease> held) {
    this.sim = sim;
    this.worker = worker;
    this.number = number;
    this.held = List.copyOf(held);
  }

  /** Whether the coordinator currently running still has this session open. */
  boolean openAtCoordinator() {
    return accepted && !coordinatorClosed && sim.coordinatorUp() && epoch == sim.coordinatorEpoch();
  }

  @Override
  public String workerId() {
    return worker.id;
  }

  @Override
  public String name() {
    return worker.name;
  }

  /** Slots plus a prefetch of as many again, the worker server's default. */
  @Override
  public int dispatchWindow() {
    return 2 * worker.slots;
  }

  @Override
  public int slots() {
    return worker.slots;
  }

  @Override
  public boolean acceptingWork() {
    return !draining;
  }

  @Override
  public String suspicion() {
    return detector == null ? "" : String.format(java.util.Locale.ROOT, "%.2f of %.2f",
        detector.suspicion(sim.nanos()), detector.convictionLevel());
  }

  @Override
  public List<HeldLease> heldAtJoin() {
    return held;
  }

  @Override
  public void assign(List<Assignment> assignments) {
    List<Assignment> copy = List.copyOf(assignments);
    sim.toWorker(this, () -> worker.onAssign(this, copy));
  }

  @Override
  public void acknowledge(List<Ack> acks) {
    if (cutAtNextAck && !cut) {
      cutAtNextAck = false;
      sim.cut(this, "cut right after a commit; its " + acks.size() + " acks are lost");
      return;
    }
    List<Ack> copy = List.copyOf(acks);
    sim.toWorker(this, () -> worker.onAcks(this, copy));
  }

  @Override
  public void abandon(long jobId, long token, String reason) {
    sim.toWorker(this, () -> worker.onAbandon(jobId, token, reason));
  }

  @Override
  public void close(String reason) {
    sim.closeAtCoordinator(this, "closed by coordinator: " + reason, true);
  }

  @Override
  public String toString() {
    return worker.name + "/s" + number;
  }
}

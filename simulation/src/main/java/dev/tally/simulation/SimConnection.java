package dev.tally.simulation;

import dev.tally.coordinator.net.ConnectionCore;
import dev.tally.coordinator.net.ConnectionPort;
import dev.tally.protocol.Envelope;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * One simulated TCP connection between a {@link SimWorker} and the coordinator: the wire, and at the
 * coordinator's end the real {@link ConnectionCore} (the connection actor's decisions: Hello, supersede,
 * join, results, drain, liveness, heartbeats, close and loss) driven through this connection's {@link
 * ConnectionPort}, exactly as {@code WorkerConnection} drives it over Netty.
 *
 * <p>The wire is two FIFO pipes (as TCP is): a frame is delivered after a latency drawn from the seed, never
 * before a frame sent earlier on the same pipe. A cut drops what is in flight both ways and everything sent
 * after it; each end finds out on its own, or not at all. A close at one end reaches the other after what
 * was already sent (a FIN); the closing end's driver reports its own end a moment later, as a Netty
 * channel's close completes on a later turn of its loop.
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class SimConnection {
  final Simulation sim;
  final SimWorker worker;
  final long number;

  // ---- the wire ----
  /** Cut: every frame in flight or sent from now on is lost, both ways. */
  boolean cut;
  /** The next ack the coordinator sends cuts the link instead of arriving (a commit whose ack is lost). */
  boolean cutAtNextAck;
  /** Frames toward the worker are discarded (the coordinator died and its kernel reset the socket). */
  boolean resetTowardWorker;
  /** Frames toward the coordinator are held until this virtual time (a network stall), then burst. */
  long stallUntilMillis;
  long lastToCoordinatorMillis;
  long lastToWorkerMillis;

  // ---- the worker's end ----
  private final List<Envelope> fromWorker = new ArrayList<>();
  private boolean closedAtWorker;

  // ---- the coordinator's end ----
  /** The coordinator process the worker dialled (the one on the address it tried). */
  SimCoordinator coordinator;
  /** Its core, once that coordinator accepted the connection. */
  ConnectionCore core;
  private final CoordinatorEnd port = new CoordinatorEnd();
  private final List<Envelope> toWorker = new ArrayList<>();
  private boolean closedAtCoordinator;
  /** The coordinator's driver reported the end to the core (onInactive): nothing reaches the core after. */
  private boolean inactive;
  private boolean readingPaused;
  private final ArrayDeque<Envelope> unread = new ArrayDeque<>();

  SimConnection(Simulation sim, SimWorker worker, long number) {
    this.sim = sim;
    this.worker = worker;
    this.number = number;
  }

  /** The port the coordinator's core is built with. */
  ConnectionPort port() {
    return port;
  }

  /** Whether its coordinator has this connection open (accepted, not ended, the process still there). */
  boolean openAtCoordinator() {
    return core != null && !inactive && coordinator.alive;
  }

  /** Runs {@code action} as the coordinator process at this connection's far end (later, if it is frozen). */
  void atCoordinator(Runnable action) {
    if (coordinator != null) {
      coordinator.local(action);
    }
  }

  // ---- worker -> coordinator ----

  void fromWorker(Envelope frame) {
    if (!closedAtWorker) {
      fromWorker.add(frame);
    }
  }

  /** The worker flushed: each frame is on its way, after those before it. */
  void flushFromWorker() {
    if (fromWorker.isEmpty()) {
      return;
    }
    List<Envelope> frames = List.copyOf(fromWorker);
    fromWorker.clear();
    if (cut) {
      return;
    }
    long at = sim.toCoordinatorArrival(this);
    sim.events().at(at, () -> atCoordinator(() -> {
      for (Envelope f : frames) {
        arriveAtCoordinator(f);
      }
    }));
  }

  private void arriveAtCoordinator(Envelope frame) {
    if (cut || !openAtCoordinator() || sim.stopped()) {
      return;
    }
    if (readingPaused) {
      unread.add(frame);
      return;
    }
    core.onFrame(frame, sim.nanos());
  }

  /** The worker closed its end: the coordinator reads the close after what was already sent. */
  void closeAtWorker(boolean afterWrites) {
    if (closedAtWorker) {
      return;
    }
    if (afterWrites) {
      flushFromWorker();
    }
    fromWorker.clear();
    closedAtWorker = true;
    if (cut) {
      return;
    }
    long at = sim.toCoordinatorArrival(this);
    sim.events().at(at, () -> atCoordinator(() -> {
      if (!cut && openAtCoordinator()) {
        sim.endAtCoordinator(this, false);
      }
    }));
  }

  // ---- coordinator -> worker ----

  private void deliverToWorker(List<Envelope> frames) {
    if (cut || resetTowardWorker) {
      return;
    }
    long at = Math.max(sim.now() + sim.latency(worker), lastToWorkerMillis);
    lastToWorkerMillis = at;
    sim.events().at(at, () -> {
      if (!cut && !resetTowardWorker && !closedAtWorker) {
        worker.local(() -> {
          for (Envelope f : frames) {
            worker.received(this, f);
          }
        });
      }
    });
  }

  /** The worker reads an end of the connection (FIN or reset) after what was already sent to it. */
  void endTowardWorker(String reason) {
    if (cut || closedAtWorker) {
      return;
    }
    long at = Math.max(sim.now() + sim.latency(worker), lastToWorkerMillis);
    lastToWorkerMillis = at;
    sim.events().at(at, () -> {
      if (!cut && !closedAtWorker) {
        worker.local(() -> worker.disconnected(this, reason));
      }
    });
  }

  /** The coordinator's driver reports the connection's end to the core, a moment after the close. */
  void reportInactive() {
    if (inactive || core == null) {
      return;
    }
    if (!coordinator.alive) {
      return; // that coordinator is gone: nothing of it runs any more
    }
    ConnectionCore c = core;
    unread.clear();
    c.onInactive(false);
    inactive = true;
  }

  /** The coordinator that accepted this connection died: its end is gone without a word. */
  void coordinatorDied() {
    inactive = true;
    unread.clear();
  }

  /** The link is cut: what is in flight is lost, both ways, and nothing more passes. */
  void cutLink() {
    cut = true;
  }

  boolean closedAtCoordinator() {
    return closedAtCoordinator;
  }

  /** The coordinator's end as {@link ConnectionPort}: what the core asks, carried out on the wire. */
  private final class CoordinatorEnd implements ConnectionPort {
    @Override
    public void write(Envelope frame) {
      if (!closedAtCoordinator) {
        toWorker.add(frame);
      }
    }

    @Override
    public void flush() {
      if (toWorker.isEmpty()) {
        return;
      }
      List<Envelope> frames = List.copyOf(toWorker);
      toWorker.clear();
      if (cutAtNextAck && !cut && frames.stream().anyMatch(Envelope::hasResultAck)) {
        cutAtNextAck = false;
        sim.cut(SimConnection.this, "cut right after a commit; its acks are lost");
        return;
      }
      deliverToWorker(frames);
    }

    @Override
    public boolean isOpen() {
      return !closedAtCoordinator && !inactive;
    }

    @Override
    public void close() {
      if (closedAtCoordinator) {
        return;
      }
      closedAtCoordinator = true;
      toWorker.clear();
      endTowardWorker("connection closed by the coordinator");
      sim.events().at(sim.now(), () -> atCoordinator(() -> sim.endAtCoordinator(SimConnection.this, false)));
    }

    @Override
    public void pauseReading() {
      readingPaused = true;
    }

    @Override
    public void resumeReading() {
      readingPaused = false;
      if (!unread.isEmpty()) {
        sim.events().at(sim.now(), () -> atCoordinator(() -> {
          while (!readingPaused && !unread.isEmpty() && openAtCoordinator()) {
            core.onFrame(unread.poll(), sim.nanos());
          }
        }));
      }
    }

    @Override
    public void awaitPredecessor(CompletionStage<Void> predecessorEnded) {
      predecessorEnded.whenComplete((ignored, error) -> sim.events().at(sim.now(), () -> atCoordinator(() -> {
        if (openAtCoordinator()) {
          core.onPredecessorEnded(sim.nanos());
        }
      })));
    }
  }

  @Override
  public String toString() {
    return worker.name + "/s" + number;
  }
}

package dev.tally.coordinator.net;

import dev.tally.core.Assignment;
import dev.tally.core.Ticker;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.HeldLease;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.protocol.Abandon;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.ResultAck;
import dev.tally.protocol.mapping.WireMapping;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The {@link WorkerHandle} of one remote worker session: what the scheduler dispatches through, made by
 * the session's {@link ConnectionCore} when it accepts the worker's Hello. Each call copies its arguments
 * on the caller's thread, then hops to the session's owner thread (or runs there directly when already on
 * it), where the assignments and acknowledgements are encoded, and hands them to the core, with one flush
 * per call: a batch of assignments costs one system call, not one per assignment.
 *
 * <p>Sending after the session ended is not an error: the frames are dropped, and the session's end
 * reaches the scheduler as {@link dev.tally.core.schedule.WorkerEvents#workerLost}. No method blocks or
 * throws for the state of the connection.
 *
 * <p>{@link #acceptingWork()} is false while the connection's failure detector is at or above its drain
 * level, and for the rest of the session once the worker said {@code Drain} (it is shutting down).
 *
 * <p>Thread-safety: every method is safe from any thread. Identity: one instance per session, so two
 * sessions of the same worker (before and after a reconnect) are different handles with the same
 * {@link #workerId()}.
 */
public final class RemoteWorker implements WorkerHandle {
  private final ConnectionCore core;
  private final Executor owner;
  private final Ticker ticker;
  private final String workerId;
  private final String name;
  private final int dispatchWindow;
  private final List<HeldLease> heldAtJoin;
  private final int slots;
  // Written by the core on the owner thread, read by the scheduler's thread.
  private volatile boolean suspected;
  private volatile boolean workerDraining;
  /** Closed because its worker opened a new session: set before the close, read after its loss. */
  private volatile boolean superseded;
  /** The detector's level at the last liveness check, and its conviction level; NaN before the first check. */
  private volatile double suspicionLevel = Double.NaN;
  private volatile double convictionLevel = Double.NaN;

  RemoteWorker(ConnectionCore core, Executor owner, Ticker ticker, String workerId, String name, int slots,
      int dispatchWindow, List<HeldLease> heldAtJoin) {
    this.core = core;
    this.owner = owner;
    this.ticker = ticker;
    this.slots = slots;
    this.workerId = workerId;
    this.name = name;
    this.dispatchWindow = dispatchWindow;
    this.heldAtJoin = List.copyOf(heldAtJoin);
  }

  /**
   * False while the connection's failure detector is at or above its drain level, and from the worker's
   * {@code Drain} on.
   */
  @Override
  public boolean acceptingWork() {
    return !suspected && !workerDraining;
  }

  @Override
  public double suspicionLevel() {
    return suspicionLevel;
  }

  /**
   * The suspicion in words, e.g. {@code "0.42 of 8.00"}; empty before the first liveness check. Formatted
   * here, when someone reads it (a status report every few seconds), not at every check (ten a second per
   * worker).
   */
  @Override
  public String suspicion() {
    double level = suspicionLevel;
    return Double.isNaN(level) ? "" : twoDecimals(level) + " of " + twoDecimals(convictionLevel);
  }

  /**
   * {@code x} rounded to hundredths, half up, with two decimals ({@code 0.42}): the suspicion as people
   * read it in a status report. Arithmetic rather than {@link java.util.Formatter} or {@link
   * java.math.BigDecimal}: it is formatted for every worker at every status report, and the simulation runs
   * thousands of those a second. (It can differ from {@code %.2f} in the last digit for a value whose
   * binary form lies a hair below a half; a suspicion is no such number of record.)
   */
  static String twoDecimals(double x) {
    if (!Double.isFinite(x) || Math.abs(x) >= 1e15) {
      return String.format(java.util.Locale.ROOT, "%.2f", x);
    }
    long hundredths = (long) Math.floor(Math.abs(x) * 100 + 0.5);
    long cents = hundredths % 100;
    String sign = Math.copySign(1.0, x) < 0 ? "-" : "";
    return sign + hundredths / 100 + (cents < 10 ? ".0" : ".") + cents;
  }

  /** Whether the worker said {@code Drain} on this session: it is shutting down and takes no new work. */
  public boolean workerDraining() {
    return workerDraining;
  }

  @Override
  public boolean shuttingDown() {
    return workerDraining;
  }

  @Override
  public boolean superseded() {
    return superseded;
  }

  /** Closes this session because its worker opened a new one (from any thread); see {@link #superseded()}. */
  void supersede() {
    superseded = true;
    closeFromAnyThread("superseded by a new session");
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
   * its run, and flushes once. The frames are built on the connection's event loop, not on the caller's
   * (the scheduler's) thread: the scheduler is the one thread every lease and record goes through, so
   * encoding there would cap the whole fleet's throughput.
   */
  @Override
  public void assign(List<Assignment> assignments) {
    onLoop(assignments, copy -> {
      List<Envelope> frames = new ArrayList<>(copy.size());
      for (Assignment a : copy) {
        frames.add(Envelope.newBuilder().setAssign(WireMapping.toWire(a)).build());
      }
      core.writeAssignments(copy, frames, ticker.nanos());
    });
  }

  /** Sends one ResultAck frame holding every entry, built on the connection's event loop (see {@link #assign}). */
  @Override
  public void acknowledge(List<Ack> acks) {
    onLoop(acks, copy -> {
      ResultAck.Builder b = ResultAck.newBuilder();
      for (Ack ack : copy) {
        b.addEntries(WireMapping.toWire(ack));
      }
      core.send(Envelope.newBuilder().setResultAck(b).build(), ticker.nanos());
    });
  }

  /** Sends one JournalAck frame per entry, flushed once, built on the connection's event loop (see {@link #assign}). */
  @Override
  public void acknowledgeJournal(List<dev.tally.core.schedule.JournalAck> acks) {
    onLoop(acks, copy -> {
      List<Envelope> frames = new ArrayList<>(copy.size());
      for (dev.tally.core.schedule.JournalAck ack : copy) {
        frames.add(Envelope.newBuilder().setJournalAck(WireMapping.toWire(ack)).build());
      }
      core.sendAll(frames, ticker.nanos());
    });
  }

  /**
   * Runs {@code send} on the session's owner thread with a copy of {@code items} (the caller may reuse its
   * list once this returns); nothing if there are none. The encoding in {@code send} thus happens there,
   * not on the caller's (the scheduler's) thread.
   */
  private <T> void onLoop(List<T> items, java.util.function.Consumer<List<T>> send) {
    if (items.isEmpty()) {
      return;
    }
    List<T> copy = List.copyOf(items);
    owner.execute(() -> send.accept(copy));
  }

  @Override
  public void abandon(long jobId, long token, String reason) {
    Envelope frame = Envelope.newBuilder()
        .setAbandon(Abandon.newBuilder().setJobId(jobId).setToken(token).setReason(Objects.toString(reason, "")))
        .build();
    owner.execute(() -> core.send(frame, ticker.nanos()));
  }

  /** Sends Goodbye with the reason and closes; workerLost follows with "closed by coordinator: reason". */
  @Override
  public void close(String reason) {
    closeFromAnyThread("closed by coordinator: " + reason);
  }

  @Override
  public String toString() {
    return "RemoteWorker[" + workerId + " '" + name + "' at " + core.peer() + "]";
  }

  // ---- for the cores (same package) ----

  /** Closes the session with exactly {@code reason} (a Goodbye first), from any thread. */
  void closeFromAnyThread(String reason) {
    owner.execute(() -> core.close(reason));
  }

  /** Completes once the session has ended: see {@link ConnectionCore}. */
  CompletableFuture<Void> ended() {
    return core.ended();
  }

  /** The peer's address, for logs. */
  String peer() {
    return core.peer();
  }

  /** The liveness check's verdict, on the owner thread: draining or not, and the levels behind it. */
  void suspicion(boolean suspected, double level, double conviction) {
    this.suspected = suspected;
    this.convictionLevel = conviction;
    this.suspicionLevel = level;
  }

  /** Marks the worker draining for the rest of the session; returns false if it already was. Owner thread. */
  boolean markWorkerDraining() {
    if (workerDraining) {
      return false;
    }
    workerDraining = true;
    return true;
  }
}

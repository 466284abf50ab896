package dev.tally.worker;

import dev.tally.core.Assignment;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Ticker;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import dev.tally.worker.eval.EvaluatorFactory;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiFunction;

/**
 * A worker inside the coordinator's own process: the same evaluators and slot threads as a worker
 * process, reporting straight to the scheduler's {@link WorkerEvents} instead of over a socket. The
 * scheduler cannot tell it from a remote worker.
 *
 * <p>There is no outbox: a report is handed to the scheduler in memory and cannot be lost on the way, so
 * {@link #acknowledge} has nothing to clear. A local worker dies only with its process, and then the
 * coordinator dies with it; its leases are released when the coordinator starts again.
 *
 * <p>Thread-safety: every method is safe from any thread.
 */
public final class LocalWorker implements WorkerHandle {
  private final String workerId = UUID.randomUUID().toString();
  private final String name;
  private final int dispatchWindow;
  private final int slotCount;
  private final WorkerEvents events;
  private final BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory;
  private final Ticker ticker;
  private final Map<Long, HeldJob.RunSetup> runs = new ConcurrentHashMap<>();
  private final Map<HeldJob.Key, HeldJob> held = new ConcurrentHashMap<>();
  private final Slots slots;
  private final AtomicBoolean closed = new AtomicBoolean();

  private LocalWorker(String name, int slotCount, int prefetch, WorkerEvents events,
      BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory, Ticker ticker) {
    this.name = name;
    this.dispatchWindow = slotCount + prefetch;
    this.slotCount = slotCount;
    this.events = events;
    this.evaluatorFactory = evaluatorFactory;
    this.ticker = ticker;
    // The queue holds at most the dispatch window (the scheduler sends no more), plus room for nothing else.
    this.slots = new Slots(slotCount, dispatchWindow, "tally-local-" + name + "-slot-", () -> {}, this::runJob);
  }

  /**
   * Starts a local worker with the built-in evaluators and joins it to {@code events}.
   *
   * @param name the worker's name in results and status
   * @param slots cases run at once; at least 1
   * @param prefetch assignments held beyond the slots; at least 0
   * @param events the scheduler to report to
   * @throws IllegalArgumentException if {@code slots < 1} or {@code prefetch < 0}
   */
  public static LocalWorker start(String name, int slots, int prefetch, WorkerEvents events) {
    return start(name, slots, prefetch, events, EvaluatorFactory::create, Ticker.system());
  }

  /**
   * Starts a local worker with the given evaluators and ticker (for tests and simulation).
   *
   * @throws IllegalArgumentException if {@code slots < 1} or {@code prefetch < 0}
   */
  public static LocalWorker start(String name, int slots, int prefetch, WorkerEvents events,
      BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory, Ticker ticker) {
    Objects.requireNonNull(name, "name");
    if (slots < 1) {
      throw new IllegalArgumentException("slots must be >= 1, got " + slots);
    }
    if (prefetch < 0) {
      throw new IllegalArgumentException("prefetch must be >= 0, got " + prefetch);
    }
    LocalWorker worker = new LocalWorker(name, slots, prefetch, Objects.requireNonNull(events), evaluatorFactory, ticker);
    worker.slots.start();
    events.workerJoined(worker);
    return worker;
  }

  @Override
  public String workerId() {
    return workerId;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int dispatchWindow() {
    return dispatchWindow;
  }

  @Override
  public int slots() {
    return slotCount;
  }

  @Override
  public void assign(List<Assignment> assignments) {
    if (closed.get()) {
      return; // the workerLost that close() reported releases these
    }
    for (Assignment a : assignments) {
      HeldJob.Key key = new HeldJob.Key(a.jobId(), a.token());
      HeldJob.RunSetup setup = runs.computeIfAbsent(a.runId(), runId -> setup(runId, a.evaluator()));
      if (setup.problem() != null) {
        report(key, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "bad evaluator for run " + a.runId() + ": " + setup.problem(), 0));
        continue;
      }
      HeldJob job = new HeldJob(key, a.runId(), a.caseId(), a.caseJson(), setup);
      held.put(key, job);
      if (!slots.offer(job)) {
        held.remove(key);
        report(key, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "local worker queue full: more than the dispatch window was assigned", 0));
      }
    }
  }

  private HeldJob.RunSetup setup(long runId, EvaluatorSpec spec) {
    try {
      return new HeldJob.RunSetup(runId, evaluatorFactory.apply(spec.kind(), spec.options()), spec.caseTimeout(), null);
    } catch (RuntimeException e) {
      return new HeldJob.RunSetup(runId, null, spec.caseTimeout(), e.getMessage());
    }
  }

  private void runJob(HeldJob job) {
    try {
      Evaluation evaluation = job.run(ticker);
      if (evaluation != null && job.state.compareAndSet(HeldJob.State.RUNNING, HeldJob.State.DONE) && !closed.get()) {
        report(job.key, evaluation);
      }
    } finally {
      held.remove(job.key, job);
    }
  }

  private void report(HeldJob.Key key, Evaluation evaluation) {
    AttemptReport report =
        evaluation instanceof Evaluation.Finished finished
            ? AttemptReport.of(key.jobId(), key.token(), finished.outcome())
            : AttemptReport.failed(key.jobId(), key.token(), ((Evaluation.Failed) evaluation).failure());
    events.attemptEnded(this, report);
  }

  @Override
  public void acknowledge(List<Ack> acks) {
    // Nothing to clear: reports were handed over in memory (see the class comment).
  }

  @Override
  public void abandon(long jobId, long token, String reason) {
    HeldJob job = held.get(new HeldJob.Key(jobId, token));
    if (job != null && job.abandon("abandoned by the coordinator: " + reason)) {
      held.remove(job.key, job);
      slots.remove(job);
    }
  }

  /** Stops the slots (cancelling running cases) and reports this worker lost; idempotent. */
  @Override
  public void close(String reason) {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    held.values().forEach(job -> job.abandon("local worker closing: " + reason));
    slots.shutdown(5_000);
    events.workerLost(this, reason);
  }
}

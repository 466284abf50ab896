package dev.tally.worker;

import dev.tally.core.Assignment;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.JournalEntry;
import dev.tally.core.Ticker;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.JournalAck;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.worker.eval.CaseAttempt;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import dev.tally.worker.eval.EvaluatorFactory;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
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
  /** How long {@link #close} waits for the slot threads to end after cancelling their cases. */
  private static final long CLOSE_TIMEOUT_MILLIS = 5_000;

  private final String workerId = UUID.randomUUID().toString();
  private final String name;
  private final int dispatchWindow;
  private final int slotCount;
  private final WorkerEvents events;
  private final BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory;
  private final Ticker ticker;
  /** The coordinator's store, whose identity goes into each case's idempotency key. */
  private final String storeId;
  private final Map<Long, RunSetup> runs = new ConcurrentHashMap<>();
  private final Slots slots;
  private final AtomicBoolean closed = new AtomicBoolean();
  /** The slots waiting for the scheduler's answer to a journal entry. */
  private final Map<JournalWait, CompletableFuture<JournalEntry.Status>> journalWaits = new ConcurrentHashMap<>();

  private LocalWorker(String name, int slotCount, int prefetch, WorkerEvents events, String storeId,
      BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory, Ticker ticker) {
    this.name = name;
    this.storeId = storeId;
    this.dispatchWindow = slotCount + prefetch;
    this.slotCount = slotCount;
    this.events = events;
    this.evaluatorFactory = evaluatorFactory;
    this.ticker = ticker;
    // The queue holds at most the dispatch window (the scheduler sends no more). Reports go to the
    // scheduler in memory and cannot pile up, so no outbox room bounds them.
    this.slots = new Slots(slotCount, dispatchWindow, "tally-local-" + name + "-slot-", Slots.Room.UNBOUNDED, ticker,
        this::caseEnded, this::journal);
  }

  /**
   * Starts a local worker with the built-in evaluators and joins it to {@code events}.
   *
   * @param name the worker's name in results and status
   * @param slots cases run at once; at least 1
   * @param prefetch assignments held beyond the slots; at least 0
   * @param events the scheduler to report to
   * @param storeId the identity of the scheduler's store ({@code Store.storeId()}): it goes into each case's
   *     idempotency key, which must be the one a remote worker computes for the same case
   * @throws IllegalArgumentException if {@code slots < 1} or {@code prefetch < 0}
   */
  public static LocalWorker start(String name, int slots, int prefetch, WorkerEvents events, String storeId) {
    return start(name, slots, prefetch, events, storeId, EvaluatorFactory::create, Ticker.system());
  }

  /**
   * Starts a local worker with the given evaluators and ticker (for tests and simulation).
   *
   * @throws IllegalArgumentException if {@code slots < 1} or {@code prefetch < 0}
   */
  public static LocalWorker start(String name, int slots, int prefetch, WorkerEvents events, String storeId,
      BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory, Ticker ticker) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(storeId, "storeId");
    if (slots < 1) {
      throw new IllegalArgumentException("slots must be >= 1, got " + slots);
    }
    if (prefetch < 0) {
      throw new IllegalArgumentException("prefetch must be >= 0, got " + prefetch);
    }
    LocalWorker worker = new LocalWorker(name, slots, prefetch, Objects.requireNonNull(events), storeId, evaluatorFactory, ticker);
    worker.slots.startThreads();
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
      JobKey key = new JobKey(a.jobId(), a.token());
      RunSetup setup = runs.computeIfAbsent(a.runId(), runId -> setup(runId, a.evaluator()));
      if (!setup.usable()) {
        report(key, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "bad evaluator for run " + a.runId() + ": " + setup.problem(), 0));
        continue;
      }
      CaseAttempt attempt = CaseAttempt.of(storeId, a.runId(), a.jobId(), a.caseId(), a.attempt(), a.token());
      AssignedJob job = new AssignedJob(key, attempt, a.caseJson(), setup, ticker.nanos(), a.journal());
      if (!slots.start(job)) {
        report(key, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "local worker queue full: more than the dispatch window was assigned", 0));
      }
    }
  }

  private RunSetup setup(long runId, EvaluatorSpec spec) {
    try {
      Evaluator evaluator = evaluatorFactory.apply(spec.kind(), spec.options());
      return RunSetup.usable(runId, evaluator, spec.caseTimeout());
    } catch (RuntimeException e) {
      return RunSetup.unusable(runId, spec.caseTimeout(), String.valueOf(e.getMessage()));
    }
  }

  /** On a slot thread: a case ran to an evaluation (a cancelled one is never reported). */
  private void caseEnded(CaseEnd end) {
    if (!closed.get()) {
      report(end.key(), end.evaluation());
    }
  }

  private void report(JobKey key, Evaluation evaluation) {
    AttemptReport report =
        evaluation instanceof Evaluation.Finished finished
            ? AttemptReport.of(key.jobId(), key.token(), finished.outcome())
            : AttemptReport.failed(key.jobId(), key.token(), ((Evaluation.Failed) evaluation).failure());
    events.attemptEnded(this, report);
  }

  /** On a slot thread: a case journals a response; the scheduler answers through {@link #acknowledgeJournal}. */
  private void journal(JournalEntry entry, CompletableFuture<JournalEntry.Status> answer) {
    if (closed.get()) {
      answer.completeExceptionally(new IllegalStateException("the local worker is closing"));
      return;
    }
    JournalWait wait = new JournalWait(entry.jobId(), entry.token(), entry.requestDigest());
    journalWaits.put(wait, answer);
    answer.whenComplete((status, error) -> journalWaits.remove(wait, answer));
    events.responseJournalled(this, entry);
  }

  @Override
  public void acknowledgeJournal(List<JournalAck> acks) {
    for (JournalAck ack : acks) {
      CompletableFuture<JournalEntry.Status> answer =
          journalWaits.remove(new JournalWait(ack.jobId(), ack.token(), ack.requestDigest()));
      if (answer != null) {
        answer.complete(ack.status());
      }
    }
  }

  /** Which entry an answer is for. */
  private record JournalWait(long jobId, long token, String requestDigest) {}

  @Override
  public void acknowledge(List<Ack> acks) {
    // Nothing to clear: reports were handed over in memory (see the class comment).
  }

  @Override
  public void abandon(long jobId, long token, String reason) {
    slots.cancel(new JobKey(jobId, token), "abandoned by the coordinator: " + reason);
  }

  /** Stops the slots (cancelling running cases) and reports this worker lost; idempotent. */
  @Override
  public void close(String reason) {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    slots.shutdown(CLOSE_TIMEOUT_MILLIS, "local worker closing: " + reason);
    journalWaits.values().forEach(a -> a.completeExceptionally(new IllegalStateException("the local worker closed")));
    events.workerLost(this, reason);
  }
}

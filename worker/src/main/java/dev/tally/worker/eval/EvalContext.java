package dev.tally.worker.eval;

import dev.tally.core.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Everything an {@link Evaluator} knows about one attempt: the case, its time budget, and a cancellation
 * hook through which an Abandon (or the worker closing) stops it.
 *
 * <p>Threading: the evaluator reads the context on its slot thread; {@link #cancel} may be called from any
 * thread (the session's event loop for an Abandon), at most once taking effect. Callbacks registered
 * with {@link #onCancel} run on the cancelling thread, so they must be quick and must not block (killing
 * a process is fine; waiting for it is not).
 */
public final class EvalContext {
  private final CaseAttempt attempt;
  private final String caseJson;
  private final Duration timeout;
  private final Ticker ticker;
  private final long startNanos;
  private final CountDownLatch cancelled = new CountDownLatch(1);
  private final List<Runnable> cancelCallbacks = new ArrayList<>();
  private String cancelReason;
  private volatile ResponseJournal journal = ResponseJournal.NONE;

  /**
   * Starts the clock of an attempt outside any run (tools and tests): run, job and token 0, attempt 1, and
   * the idempotency key of the case in an unnamed store.
   *
   * @param caseId the case's {@code id}
   * @param caseJson the case's whole JSON object, as text
   * @param timeout the attempt's wall-clock budget; positive
   * @param ticker elapsed time for {@link #elapsedMillis()}
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public EvalContext(String caseId, String caseJson, Duration timeout, Ticker ticker) {
    this(CaseAttempt.of("", 0, 0, Objects.requireNonNull(caseId, "caseId"), 1, 0), caseJson, timeout, ticker);
  }

  /**
   * Starts the attempt's clock now.
   *
   * @param attempt which attempt of which case of which run
   * @param caseJson the case's whole JSON object, as text
   * @param timeout the attempt's wall-clock budget; positive
   * @param ticker elapsed time for {@link #elapsedMillis()}
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public EvalContext(CaseAttempt attempt, String caseJson, Duration timeout, Ticker ticker) {
    this.attempt = Objects.requireNonNull(attempt, "attempt");
    this.caseJson = Objects.requireNonNull(caseJson, "caseJson");
    this.timeout = Objects.requireNonNull(timeout, "timeout");
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must be positive, got " + timeout);
    }
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.startNanos = ticker.nanos();
  }

  /** The case's {@code id}. */
  public String caseId() {
    return attempt.caseId();
  }

  /** Which attempt this is, with the case's idempotency key: what an evaluator hands on to its effects. */
  public CaseAttempt attempt() {
    return attempt;
  }

  /** The case's whole JSON object, as sent by the coordinator. */
  public String caseJson() {
    return caseJson;
  }

  /** The attempt's wall-clock budget; past it an evaluator gives up and reports a timeout. */
  public Duration timeout() {
    return timeout;
  }

  /** Milliseconds since this context was created (when the slot started the case). */
  public long elapsedMillis() {
    return TimeUnit.NANOSECONDS.toMillis(ticker.nanos() - startNanos);
  }

  /** The journal of this case's paid responses ({@link ResponseJournal#NONE} outside a run that keeps one). */
  public ResponseJournal journal() {
    return journal;
  }

  /**
   * Gives the attempt the journal its worker keeps for it; called by the worker before the evaluator starts.
   *
   * @return this context
   */
  public EvalContext withJournal(ResponseJournal journal) {
    this.journal = Objects.requireNonNull(journal, "journal");
    return this;
  }

  /** The ticker this context measures with, for evaluators that keep their own deadlines. */
  public Ticker ticker() {
    return ticker;
  }

  /** True once {@link #cancel} was called. */
  public boolean cancelled() {
    return cancelled.getCount() == 0;
  }

  /** Why the attempt was cancelled, or null if it was not. */
  public synchronized String cancelReason() {
    return cancelReason;
  }

  /**
   * Waits until the attempt is cancelled or {@code max} has passed.
   *
   * @return true if cancelled
   * @throws InterruptedException if the waiting thread is interrupted
   */
  public boolean awaitCancellation(Duration max) throws InterruptedException {
    return cancelled.await(max.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * Registers a callback run when the attempt is cancelled; runs it at once if it already was.
   *
   * @return a handle that unregisters the callback (call it once the resource it stops is gone)
   */
  public Runnable onCancel(Runnable callback) {
    Objects.requireNonNull(callback, "callback");
    synchronized (this) {
      if (!cancelled()) {
        cancelCallbacks.add(callback);
        return () -> {
          synchronized (this) {
            cancelCallbacks.remove(callback);
          }
        };
      }
    }
    callback.run();
    return () -> {};
  }

  /**
   * Cancels the attempt: runs every registered callback (on this thread) and wakes {@link
   * #awaitCancellation} waiters. Later calls do nothing.
   *
   * @param reason why, for the log and the evaluator's report
   */
  public void cancel(String reason) {
    List<Runnable> toRun;
    synchronized (this) {
      if (cancelled()) {
        return;
      }
      cancelReason = reason;
      cancelled.countDown();
      toRun = List.copyOf(cancelCallbacks);
      cancelCallbacks.clear();
    }
    for (Runnable r : toRun) {
      r.run();
    }
  }
}

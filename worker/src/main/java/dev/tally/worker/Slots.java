package dev.tally.worker;

import dev.tally.core.InfraFailure;
import dev.tally.core.Ticker;
import dev.tally.worker.eval.EvalContext;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.ServeEvaluator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's slots: a fixed set of long-lived threads taking jobs from one bounded queue and running
 * their cases; the {@link CaseRunner} of a worker process and of an in-process {@link LocalWorker}.
 *
 * <p>Why hand-made threads and not a {@code ThreadPoolExecutor}: an exec case runs under {@code setpriv
 * --pdeathsig} (its supervisor kills the case's process group on that signal, see {@code ExecEvaluator}),
 * and the kernel sends that signal when the <em>thread</em> that forked the case exits, not the process. A
 * slot thread must therefore live as long as the worker: it never times out, and a task that throws does
 * not end it (an executor would replace the thread, killing nothing today but inviting the bug
 * tomorrow). The threads end only in {@link #shutdown}.
 *
 * <p>Each job's task moves {@code QUEUED -> RUNNING -> DONE}, or to {@code CANCELLED} from either of the
 * first two; every move is a compare-and-set, so a cancel or withdrawal (the session's thread) and the
 * slot starting or finishing the case (a slot thread) race safely: exactly one wins, and only a task
 * that reaches {@code DONE} is reported.
 *
 * <p>Threading: {@link #start}, {@link #cancel} and {@link #withdrawQueued} are safe from any thread and
 * never block; each slot thread runs one case at a time and reports it, on that slot thread, to the
 * consumer given at construction.
 */
final class Slots implements CaseRunner {
  private static final Logger log = LoggerFactory.getLogger(Slots.class);

  /** Room for one more result, reserved before a slot starts a case (see {@link Outbox}). */
  interface Room {
    /** Room without a bound, for a worker whose reports cannot pile up (an in-process worker). */
    Room UNBOUNDED = new Room() {
      @Override
      public boolean await() {
        return true;
      }

      @Override
      public void giveBack() {}
    };

    /** Blocks until there is room and reserves it; false if no more cases should start. */
    boolean await() throws InterruptedException;

    /** Gives back room reserved for a case that produced no result. */
    void giveBack();

    /** The room of {@code outbox}. */
    static Room of(Outbox outbox) {
      return new Room() {
        @Override
        public boolean await() throws InterruptedException {
          return outbox.awaitRoom();
        }

        @Override
        public void giveBack() {
          outbox.returnRoom();
        }
      };
    }
  }

  private enum State {
    QUEUED,
    RUNNING,
    DONE,
    CANCELLED
  }

  /** One job's run: its state and, once running, the context through which it is cancelled. */
  private static final class Task {
    final AssignedJob job;
    final AtomicReference<State> state = new AtomicReference<>(State.QUEUED);
    /** Set by the slot thread before the task becomes RUNNING; read by a cancel after it saw RUNNING. */
    volatile EvalContext context;

    Task(AssignedJob job) {
      this.job = job;
    }

    boolean cancel(String reason) {
      if (state.compareAndSet(State.QUEUED, State.CANCELLED)) {
        return true;
      }
      if (state.compareAndSet(State.RUNNING, State.CANCELLED)) {
        context.cancel(reason);
        return true;
      }
      return false;
    }
  }

  private final BlockingQueue<Task> queue;
  private final Map<JobKey, Task> tasks = new ConcurrentHashMap<>();
  private final List<Thread> threads = new ArrayList<>();
  private final Room room;
  private final Ticker ticker;
  private final Consumer<CaseEnd> onEnd;
  private final AttemptJournal.Sink journal;
  private volatile boolean stopping;

  /**
   * @param slots how many cases run at once; at least 1
   * @param queueLimit how many jobs may wait for a slot; at least 1
   * @param threadNamePrefix the slot threads' names, followed by their index
   * @param room reserved before each case starts
   * @param ticker the clock of {@link CaseEnd#startedNanos()} and of each case's elapsed time
   * @param onEnd receives each case that ran to an evaluation, on its slot thread; must not block
   * @param journal where each case's journal entries go (its context's {@link AttemptJournal})
   */
  Slots(int slots, int queueLimit, String threadNamePrefix, Room room, Ticker ticker, Consumer<CaseEnd> onEnd,
      AttemptJournal.Sink journal) {
    this.journal = java.util.Objects.requireNonNull(journal, "journal");
    this.queue = new ArrayBlockingQueue<>(queueLimit);
    this.room = room;
    this.ticker = ticker;
    this.onEnd = onEnd;
    for (int i = 0; i < slots; i++) {
      Thread t = new Thread(this::loop, threadNamePrefix + i);
      // Daemon: the owner's close ends them; a forgotten close must not keep the JVM alive.
      t.setDaemon(true);
      threads.add(t);
    }
  }

  /** Starts the slot threads; once. */
  void startThreads() {
    threads.forEach(Thread::start);
  }

  @Override
  public boolean start(AssignedJob job) {
    Task task = new Task(job);
    if (stopping || tasks.putIfAbsent(job.key(), task) != null) {
      return false;
    }
    if (!queue.offer(task)) {
      tasks.remove(job.key(), task);
      return false;
    }
    return true;
  }

  @Override
  public boolean cancel(JobKey key, String reason) {
    Task task = tasks.get(key);
    if (task == null || !task.cancel(reason)) {
      return false;
    }
    queue.remove(task); // a no-op for a running one
    tasks.remove(key, task);
    return true;
  }

  @Override
  public List<JobKey> withdrawQueued() {
    List<JobKey> withdrawn = new ArrayList<>();
    for (Task task : queue) { // the queue's iterator is weakly consistent, in queue order
      if (task.state.compareAndSet(State.QUEUED, State.CANCELLED)) {
        queue.remove(task);
        tasks.remove(task.job.key(), task);
        withdrawn.add(task.job.key());
      }
    }
    return withdrawn;
  }

  /** Jobs waiting for a slot. */
  int queued() {
    return queue.size();
  }

  private void loop() {
    try {
      loopUntilStopped();
    } finally {
      ServeEvaluator.closeForCurrentSlot(); // a served command does not outlive its slot
    }
  }

  private void loopUntilStopped() {
    while (!stopping) {
      try {
        if (!room.await()) {
          return; // closed: no more cases
        }
      } catch (InterruptedException e) {
        continue; // shutdown() interrupts; the loop condition decides
      }
      Task task;
      try {
        task = queue.take();
      } catch (InterruptedException e) {
        room.giveBack();
        continue;
      }
      try {
        run(task);
      } catch (Throwable t) {
        // run() reports evaluator failures itself; anything here is a bug. Keep the thread alive.
        log.error("slot failed on {} (a bug): {}", task.job.key(), t.toString(), t);
      }
      Thread.interrupted(); // never carry an interrupt into the next case
    }
  }

  private void run(Task task) {
    AssignedJob job = task.job;
    long startedNanos = ticker.nanos();
    EvalContext ctx = new EvalContext(job.attempt(), job.caseJson(), job.setup().caseTimeout(), ticker);
    ctx.withJournal(new AttemptJournal(job, ctx, journal));
    task.context = ctx;
    if (!task.state.compareAndSet(State.QUEUED, State.RUNNING)) {
      tasks.remove(job.key(), task); // cancelled or withdrawn while queued
      room.giveBack();
      return;
    }
    Evaluation evaluation = evaluate(job, ctx);
    tasks.remove(job.key(), task);
    if (task.state.compareAndSet(State.RUNNING, State.DONE)) {
      onEnd.accept(new CaseEnd(job.key(), evaluation, startedNanos)); // the reserved room goes with it
    } else {
      room.giveBack(); // cancelled while running: not reported
    }
  }

  /** Runs the case; an evaluator that throws or returns nothing is a retryable {@code EVALUATOR_CRASHED}. */
  private static Evaluation evaluate(AssignedJob job, EvalContext ctx) {
    try {
      Evaluation evaluation = job.setup().evaluator().evaluate(ctx);
      return evaluation != null
          ? evaluation
          : Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "the evaluator returned nothing", ctx.elapsedMillis());
    } catch (RuntimeException | StackOverflowError | LinkageError e) {
      log.warn("evaluator crashed on {}: {}", job.key(), e.toString(), e);
      return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, e.toString(), ctx.elapsedMillis());
    }
  }

  /**
   * Cancels every queued and running job (none is reported), stops the slot threads and waits up to
   * {@code timeoutMillis} for them to end. Idempotent.
   */
  void shutdown(long timeoutMillis, String reason) {
    stopping = true;
    for (Task task : tasks.values()) {
      task.cancel(reason);
    }
    queue.clear();
    tasks.clear();
    threads.forEach(Thread::interrupt);
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    for (Thread t : threads) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        break;
      }
      try {
        t.join(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
  }
}

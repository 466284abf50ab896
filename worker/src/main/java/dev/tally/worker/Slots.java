package dev.tally.worker;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's slots: a fixed set of long-lived threads taking assignments from one bounded queue.
 *
 * <p>Why hand-made threads and not a {@code ThreadPoolExecutor}: an exec case runs under {@code setpriv
 * --pdeathsig} (its supervisor kills the case's process group on that signal, see {@code ExecEvaluator}),
 * and the kernel sends that signal when the <em>thread</em> that forked the case exits, not the process. A slot thread must therefore live as long as the worker: it never times out, and a task
 * that throws does not end it (an executor would replace the thread, killing nothing today but inviting
 * the bug tomorrow). The threads end only in {@link #shutdown}.
 *
 * <p>Threading: {@link #offer} and {@link #remove} may be called from any thread (the session's event
 * loop); each slot thread runs one job at a time through the runner.
 */
final class Slots {
  private static final Logger log = LoggerFactory.getLogger(Slots.class);

  /** Blocks a slot before it takes its next job, while the outbox is full (backpressure). */
  interface Gate {
    void awaitOpen() throws InterruptedException;
  }

  private final BlockingQueue<HeldJob> queue;
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean stopping;

  Slots(int slots, int queueLimit, String threadNamePrefix, Gate gate, Consumer<HeldJob> runner) {
    this.queue = new ArrayBlockingQueue<>(queueLimit);
    for (int i = 0; i < slots; i++) {
      Thread t = new Thread(() -> loop(gate, runner), threadNamePrefix + i);
      // Daemon: the session's close() ends them; a forgotten close must not keep the JVM alive.
      t.setDaemon(true);
      threads.add(t);
    }
  }

  void start() {
    threads.forEach(Thread::start);
  }

  /** Queues a job; false if the queue is at its limit (the caller treats that as a protocol violation). */
  boolean offer(HeldJob job) {
    return queue.offer(job);
  }

  /** Drops a queued job (after an Abandon); a slot that already took it skips it by its state. */
  void remove(HeldJob job) {
    queue.remove(job);
  }

  int queued() {
    return queue.size();
  }

  private void loop(Gate gate, Consumer<HeldJob> runner) {
    while (!stopping) {
      HeldJob job;
      try {
        gate.awaitOpen();
        job = queue.take();
      } catch (InterruptedException e) {
        continue; // shutdown() interrupts; the loop condition decides
      }
      try {
        runner.accept(job);
      } catch (Throwable t) {
        // The runner reports evaluator failures itself; anything here is a bug. Keep the thread alive.
        log.error("slot runner failed on job {} (a bug): {}", job.key, t.toString(), t);
      }
      Thread.interrupted(); // never carry an interrupt into the next case
    }
  }

  /** Stops the slot threads and waits up to {@code timeoutMillis} for them to end; queued jobs are dropped. */
  List<HeldJob> shutdown(long timeoutMillis) {
    stopping = true;
    List<HeldJob> dropped = new ArrayList<>();
    queue.drainTo(dropped);
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
    return dropped;
  }
}

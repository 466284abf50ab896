package dev.tally.coordinator;

import dev.tally.core.schedule.Scheduler;
import java.time.Clock;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that drives a {@link Scheduler}: it steps whenever events are queued or a backoff ends, and
 * parks otherwise. Stepping on its own thread keeps the store's commits off the I/O threads: a Netty event
 * loop only queues an event and unparks this thread.
 *
 * <p>Thread-safety: {@link #wake()} and {@link #close()} are safe from any thread; the scheduler is
 * touched only by this loop's thread once {@link #start} has been called.
 */
public final class SchedulerLoop implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SchedulerLoop.class);

  /** The longest park without a step: a safety net so that a lost wake-up costs at most this much. */
  private static final long MAX_PARK_MILLIS = 200;

  private final Clock clock;
  private final Thread thread;
  private volatile Scheduler scheduler;
  private volatile boolean running = true;
  private volatile Throwable failure;
  private volatile Runnable onFailure = () -> {};

  /** Creates a stopped loop; {@link #start} gives it the scheduler (which needs {@link #wake} first). */
  public SchedulerLoop(Clock clock) {
    this.clock = clock;
    this.thread = new Thread(this::run, "tally-scheduler");
    this.thread.setDaemon(true);
  }

  /**
   * Starts stepping {@code scheduler} on the loop's thread.
   *
   * @param onFailure called once, on the loop's thread, if the scheduler throws (the loop then stops)
   * @throws IllegalStateException if already started
   */
  public void start(Scheduler scheduler, Runnable onFailure) {
    if (this.scheduler != null) {
      throw new IllegalStateException("scheduler loop already started");
    }
    this.scheduler = scheduler;
    this.onFailure = onFailure;
    thread.start();
  }

  /** Asks for a step soon. Cheap: called once per event. */
  public void wake() {
    LockSupport.unpark(thread);
  }

  /** The exception that stopped the loop, or null while it runs or after a clean close. */
  public Throwable failure() {
    return failure;
  }

  private void run() {
    try {
      while (running) {
        long dueMillis = scheduler.step();
        if (!running || scheduler.hasQueuedEvents()) {
          continue;
        }
        long waitMillis = Math.min(MAX_PARK_MILLIS, dueMillis - clock.millis());
        if (waitMillis > 0) {
          LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(waitMillis));
        }
      }
      scheduler.stopping();
    } catch (RuntimeException | Error e) {
      failure = e;
      if (e instanceof dev.tally.core.store.StaleEpochException) {
        // Another coordinator leads: the scheduler said so in words, and the coordinator steps down; no trace helps.
        log.error("scheduler loop stopped: {}", e.getMessage());
      } else {
        log.error("scheduler loop stopped", e);
      }
      onFailure.run();
    }
  }

  /** Stops the loop and waits (up to 10 s) for its thread to end. */
  @Override
  public void close() {
    stop(false);
  }

  /**
   * Stops the loop now, interrupting a step that waits (a commit waiting for a store that does not answer,
   * up to its reconnect patience): for a coordinator that stepped down, whose commits the store refuses
   * anyway. Waits up to 10 s for the loop's thread to end.
   */
  public void abort() {
    stop(true);
  }

  private void stop(boolean interrupt) {
    running = false;
    if (interrupt && Thread.currentThread() != thread) {
      thread.interrupt();
    }
    LockSupport.unpark(thread);
    if (thread.isAlive() && Thread.currentThread() != thread) {
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}

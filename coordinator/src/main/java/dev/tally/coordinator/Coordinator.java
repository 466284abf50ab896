package dev.tally.coordinator;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.Ticker;
import dev.tally.core.schedule.Scheduler;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.Store;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * An embedded coordinator: the scheduler on its own thread, stepping against a {@link Store}, and a
 * {@link WorkerServer} that accepts worker sessions and reports them to the scheduler.
 *
 * <p>Use: {@link #start}, then {@link #submit} runs created in the store; close when done. Closing does
 * not close the store (the caller opened it).
 *
 * <p>Thread-safety: all methods are safe from any thread.
 */
public final class Coordinator implements AutoCloseable {
  private final Scheduler scheduler;
  private final SchedulerLoop loop;
  private final WorkerServer server;

  private Coordinator(Scheduler scheduler, SchedulerLoop loop, WorkerServer server) {
    this.scheduler = scheduler;
    this.loop = loop;
    this.server = server;
  }

  /**
   * Starts a coordinator listening for workers on {@code listen}.
   *
   * @param store the store (already migrated); the coordinator does not close it
   * @param listen the address to bind; port 0 picks a free port
   * @param serverSettings heartbeat, detection and frame settings of the worker port
   * @param redelivery what happens to a job whose attempt failed retryably
   * @param schedulerSettings lease duration and store-failure limits
   * @throws IllegalArgumentException if a setting is invalid
   * @throws java.io.UncheckedIOException if the address cannot be bound
   */
  public static Coordinator start(
      Store store,
      InetSocketAddress listen,
      WorkerServer.Settings serverSettings,
      RedeliveryPolicy redelivery,
      Scheduler.Settings schedulerSettings) {
    Objects.requireNonNull(store, "store");
    Clock clock = Clock.systemUTC();
    SchedulerLoop loop = new SchedulerLoop(clock);
    Scheduler scheduler = Scheduler.builder(store, clock, Ticker.system(), new SplittableRandom())
        .redelivery(redelivery).settings(schedulerSettings).wakeup(loop::wake).build();
    WorkerServer server = WorkerServer.start(listen, serverSettings, scheduler, store.storeId());
    loop.start(scheduler, server::close);
    return new Coordinator(scheduler, loop, server);
  }

  /** The port the worker server is bound to. */
  public int port() {
    return server.port();
  }

  /** The scheduler, e.g. to attach in-process workers through its {@link dev.tally.core.schedule.WorkerEvents}. */
  public Scheduler scheduler() {
    return scheduler;
  }

  /**
   * Starts running a run already created in the store.
   *
   * @return a future completed with the run's final counters when every job has ended, or exceptionally
   *     if the scheduler gives up on the store
   */
  public CompletableFuture<RunCounters> submit(long runId) {
    return scheduler.activate(runId);
  }

  /** The run's counters as of the last committed step, or null before the scheduler has seen it. */
  public RunCounters progress(long runId) {
    return scheduler.counters(runId);
  }

  /** How many workers the scheduler had as of its last step. */
  public int connectedWorkers() {
    return scheduler.connectedWorkers();
  }

  /** The exception that stopped the scheduler, or null. */
  public Throwable failure() {
    return loop.failure();
  }

  /** Stops accepting workers, closes their sessions, and stops the scheduler. */
  @Override
  public void close() {
    server.close();
    loop.close();
  }
}

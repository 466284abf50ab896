package dev.tally.coordinator;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.coordinator.security.TlsIdentity;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.schedule.Scheduler;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.Store;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Clock;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * An embedded coordinator: the scheduler on its own thread, stepping against a {@link Store}, and a
 * {@link WorkerServer} that accepts worker sessions and reports them to the scheduler.
 *
 * <p>Use: {@link #builder()} (which holds the product's defaults) and {@link CoordinatorBuilder#start()},
 * then {@link #submit} runs created in the store ({@link #resumption()} finds or creates them); close
 * when done. Closing closes the store and releases its lock only if the builder opened them ({@link
 * CoordinatorBuilder#storeFile}).
 *
 * <p>Thread-safety: all methods are safe from any thread.
 */
public final class Coordinator implements AutoCloseable {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Coordinator.class);
  private final Scheduler scheduler;
  private final SchedulerLoop loop;
  /** The worker port: bound when this coordinator takes the lead, null before. */
  private volatile WorkerServer server;
  /** Binds the worker port for a leader of the given epoch (the epoch goes out in Welcome). */
  private final ServerStarter serverStarter;
  /** The worker port's address as configured (its port 0 until bound). */
  private final java.net.InetSocketAddress listen;
  private final WorkerServer.Settings baseServerSettings;
  /** The leader lease's driver. */
  private final Leadership leadership;
  /** Whether this coordinator opened its store file (and so releases earlier requests' key holds on leading). */
  private final boolean releaseHoldsOnLead;
  private volatile boolean leading;
  /** Why this coordinator stepped down, or null while it has not. */
  private volatile String steppedDown;
  /** What to do once leading: {@link #whenLeading}. Guarded by this. */
  private final java.util.List<Runnable> onLead = new java.util.ArrayList<>();
  /** The HTTP API's base URL, advertised in the leader row, or null. */
  private volatile String advertisedApi;
  private final Store store;
  private final RunResumption resumption;
  private final DetectorSettings detectorSettings;
  /** The store, if this coordinator opened it (and so closes it); else null. */
  private final Store ownedStore;
  /** The store's lock, if this coordinator took it; else null. */
  private final CoordinatorLock lock;
  /** When this coordinator started ({@link System#nanoTime()}), for {@link #wallMillis}. */
  private final long startedNanos = System.nanoTime();
  /** For each run that finished while this coordinator worked on it: how long after its start, in ns. */
  private final Map<Long, Long> finishedAfterNanos = new ConcurrentHashMap<>();
  /** The futures {@link #submit} gave that have not completed: a step-down fails them. */
  private final java.util.Set<CompletableFuture<RunCounters>> waiting = ConcurrentHashMap.newKeySet();
  /** Told of each run's end: {@link #onRunEnded}. */
  private final java.util.List<java.util.function.LongConsumer> runEndListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
  /** The listeners' TLS identity, or null for plaintext. */
  private final TlsIdentity tls;

  /** Wall time for the store's writes made outside the scheduler (a rescore's counters). */
  private final Clock clock;

  private final java.time.Duration idempotencyTtl;
  private final java.time.Duration keyHold;

  /** Binds the worker port for a leader. */
  @FunctionalInterface
  interface ServerStarter {
    WorkerServer start(long epoch) throws CoordinatorBuilder.StartException;
  }

  Coordinator(Scheduler scheduler, SchedulerLoop loop, ServerStarter serverStarter, java.net.InetSocketAddress listen,
      WorkerServer.Settings baseServerSettings, Store store, Clock clock,
      boolean ephemeralPort, DetectorSettings detectorSettings, Store ownedStore, CoordinatorLock lock, TlsIdentity tls,
      java.time.Duration idempotencyTtl, java.time.Duration keyHold, Leadership leadership, boolean releaseHoldsOnLead) {
    this.idempotencyTtl = idempotencyTtl;
    this.keyHold = keyHold;
    this.scheduler = scheduler;
    this.loop = loop;
    this.serverStarter = serverStarter;
    this.listen = listen;
    this.baseServerSettings = baseServerSettings;
    this.leadership = leadership;
    this.releaseHoldsOnLead = releaseHoldsOnLead;
    this.store = store;
    // A coordinator on a port picked at random cannot be found by any worker of an earlier one: see
    // RunResumption#takeOver.
    this.resumption = new RunResumption(store, clock, !ephemeralPort, scheduler.redelivery());
    this.clock = clock;
    this.detectorSettings = detectorSettings;
    this.ownedStore = ownedStore;
    this.lock = lock;
    this.tls = tls;
  }

  /** A builder holding the product's defaults; see {@link CoordinatorBuilder}. */
  public static CoordinatorBuilder builder() {
    return new CoordinatorBuilder();
  }

  /** The port the worker server is bound to; before this coordinator leads, the port it will listen on. */
  public int port() {
    WorkerServer s = server;
    return s != null ? s.port() : listen.getPort();
  }

  /**
   * The address the worker server is bound to (the port is the one picked when asked for port 0); before
   * this coordinator leads, the address it will listen on.
   */
  public java.net.InetSocketAddress address() {
    WorkerServer s = server;
    return s != null ? s.address() : listen;
  }

  // ---- leading and standing by ------------------------------------------------------------------

  /**
   * Whether this coordinator leads its store: it schedules, its worker port is open, and its store writes
   * carry its epoch. A standby ({@link CoordinatorBuilder#standby}) serves reads only until it takes the lead.
   */
  public boolean leading() {
    return leading && steppedDown == null;
  }

  /** The epoch this coordinator leads under, or 0 if it does not lead. */
  public long epoch() {
    return leading() ? leadership.epoch() : 0;
  }

  /** The store's leader row as this coordinator last saw it: who leads, and where (for a standby's hints). */
  public dev.tally.core.lead.LeaderRow leader() {
    return leadership.lastSeen();
  }

  /** Why this coordinator stepped down (another took the lead, or it could not renew), if it did. */
  public java.util.Optional<String> steppedDown() {
    return java.util.Optional.ofNullable(steppedDown);
  }

  /**
   * The failure a run's future got, or gets, when this coordinator stepped down: a {@link
   * dev.tally.core.store.StoreException} naming why; empty if it has not stepped down. For a caller whose run
   * failed with a refused write first (a refusal says only that this coordinator does not lead).
   */
  public java.util.Optional<dev.tally.core.store.StoreException> stepDownFailure() {
    return steppedDown().map(Coordinator::deposed);
  }

  /**
   * Runs {@code action} once this coordinator leads: now, on this thread, if it already does; else on the
   * leadership's thread when it takes the lead (after its worker port is open and its scheduler runs).
   * What a server does to resume the store's unfinished runs, whichever way it came to lead.
   */
  public void whenLeading(Runnable action) {
    synchronized (this) {
      if (!leading) {
        onLead.add(action);
        return;
      }
    }
    action.run();
  }

  /** Sets the HTTP API's base URL this coordinator advertises in the leader row while it leads. */
  public void advertiseApi(String url) {
    this.advertisedApi = url;
    if (leadership != null) {
      leadership.lookNow(); // the row says it at once, not at the next renewal
    }
  }

  /** Where this coordinator says it can be reached: its worker port and its API. */
  dev.tally.core.lead.LeaderAddress advertised() {
    java.net.InetSocketAddress a = address();
    String host = a.getAddress() != null && a.getAddress().isAnyLocalAddress() ? localHostName() : a.getHostString();
    String workers = a.getPort() == 0 ? null : host + ":" + a.getPort();
    return new dev.tally.core.lead.LeaderAddress(workers, advertisedApi);
  }

  /** This machine's name, for a worker port bound to every address. */
  private static String localHostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      return "localhost";
    }
  }

  /**
   * Throws unless this coordinator leads: a write asked of a standby (or of a leader that stepped down).
   *
   * @throws dev.tally.core.store.StaleEpochException naming the store's leader
   */
  private void requireLeading() {
    if (!leading()) {
      dev.tally.core.lead.LeaderRow row = leadership.lastSeen();
      throw new dev.tally.core.store.StaleEpochException(
          steppedDown != null ? leadership.epoch() : Store.NOT_LEADING, row.epoch(), row.address());
    }
  }

  /**
   * Takes the lead, under {@code epoch} (the store's writes already carry it): binds the worker port,
   * releases the key holds of requests of earlier coordinators, starts the scheduler, then runs what
   * {@link #whenLeading} queued.
   *
   * @throws CoordinatorBuilder.StartException if the worker port cannot be bound
   */
  void lead(long epoch) throws CoordinatorBuilder.StartException {
    server = serverStarter.start(epoch);
    if (releaseHoldsOnLead) {
      int released = store.releaseHeldKeys();
      if (released > 0) {
        log.info("released {} idempotency keys held by requests of an earlier coordinator", released);
      }
    }
    WorkerServer bound = server;
    loop.start(scheduler, () -> {
      bound.close();
      if (loop.failure() instanceof dev.tally.core.store.StaleEpochException stale) {
        stepDown("the store refused a commit: " + stale.getMessage());
      }
    });
    java.util.List<Runnable> queued;
    synchronized (this) {
      leading = true;
      queued = new java.util.ArrayList<>(onLead);
      onLead.clear();
    }
    queued.forEach(Runnable::run);
  }

  /** The leadership's listener: a standby that wins leads; a leader that loses steps down. */
  Leadership.Listener leadershipListener() {
    return new Leadership.Listener() {
      @Override
      public void lead(long epoch) {
        try {
          Coordinator.this.lead(epoch);
        } catch (CoordinatorBuilder.StartException | RuntimeException e) {
          log.error("took the lead under epoch {} but could not start leading: {}", epoch, e.getMessage(), e);
          stepDown("could not start leading: " + e.getMessage());
        }
      }

      @Override
      public void stepDown(String why) {
        Coordinator.this.stepDown(why);
      }
    };
  }

  /**
   * Steps down: leases nothing more, closes every worker connection (the workers go to the next address they
   * know, keeping their results for the new leader), stops the scheduler, and fails every run future {@link
   * #submit} gave that has not completed (a {@link dev.tally.core.store.StoreException} naming {@code why}).
   * Its store already refuses its writes. Final: the process that runs it exits ({@code tally server} with code 1), since what it holds in
   * memory (sessions, the scheduler's view) is the old epoch's; started again, it stands by.
   */
  void stepDown(String why) {
    if (steppedDown != null) {
      return;
    }
    steppedDown = why;
    store.writeAs(Store.NOT_LEADING);
    log.error("stepped down: {}; leasing nothing more and closing every worker connection", why);
    // The scheduler fails its runs' futures only for a commit the store refused; a step-down decided by the
    // leadership (another epoch seen, or its patience spent) stops it without one, and nothing else would.
    // Failed first: whoever waits on a run hears of it now, not after the closing below.
    dev.tally.core.store.StoreException deposed = deposed(why);
    waiting.forEach(f -> f.completeExceptionally(deposed));
    leadership.close();
    WorkerServer s = server;
    if (s != null) {
      s.close();
    }
    loop.abort(); // a commit waiting for an unreachable store would hold the loop up to its patience
  }

  /** The TLS identity its listeners speak with, if it was given one ({@link CoordinatorBuilder#tls}). */
  public java.util.Optional<TlsIdentity> tls() {
    return java.util.Optional.ofNullable(tls);
  }

  /** The store this coordinator records into. */
  public Store store() {
    return store;
  }

  /** Which run to work on, and taking over one an earlier coordinator left unfinished, on this store. */
  public RunResumption resumption() {
    return resumption;
  }

  /** The failure detector the worker port judges workers with. */
  public DetectorSettings detectorSettings() {
    return detectorSettings;
  }

  /**
   * The coordinator's own health as failure detection uses it: the multiplier that stretches every
   * worker's detector, and what raised it ({@link dev.tally.core.detect.LocalHealth}). Safe from any
   * thread.
   */
  public dev.tally.core.detect.LocalHealth.Snapshot localHealth() {
    return server.localHealth();
  }

  /** How long a completed idempotency key is kept ({@link CoordinatorBuilder#idempotencyTtl}). */
  public java.time.Duration idempotencyTtl() {
    return idempotencyTtl;
  }

  /** How long a request in progress holds its idempotency key between renewals ({@link CoordinatorBuilder#keyHold}). */
  public java.time.Duration keyHold() {
    return keyHold;
  }

  /** The worker port's settings. */
  public WorkerServer.Settings serverSettings() {
    WorkerServer s = server;
    return s != null ? s.settings() : baseServerSettings;
  }

  /** The scheduler, e.g. to attach in-process workers through its {@link dev.tally.core.schedule.WorkerEvents}. */
  public Scheduler scheduler() {
    return scheduler;
  }

  /**
   * Starts running a run already created in the store.
   *
   * @return a future completed with the run's final counters when every job has ended, or exceptionally
   *     (with the store's {@link dev.tally.core.store.StoreException}) if the scheduler gives up on the store
   */
  public CompletableFuture<RunCounters> submit(long runId) {
    return submit(runId, startedNanos);
  }

  /**
   * Starts running a run created while this coordinator was already serving others (a server's
   * submission): as {@link #submit(long)}, but its {@link #wallMillis} counts from now, not from this
   * coordinator's start (a server's uptime says nothing of one run).
   *
   * @return as {@link #submit(long)}
   */
  public CompletableFuture<RunCounters> submitNew(long runId) {
    return submit(runId, System.nanoTime());
  }

  /**
   * Goes on with a paused run: sets its raised caps ({@code caps}: {@link dev.tally.core.FleetLimits#capKeys()}
   * options, checked by the caller with {@link dev.tally.core.FleetLimits#withCaps}), clears a stored pause
   * (fail fast), and serves the run again, which reads its spec afresh: what {@code POST
   * /api/v1/runs/{id}/resume} does.
   *
   * @return the run as it is now, or empty if there is no such run
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public java.util.Optional<dev.tally.core.store.RunView> resume(long runId, java.util.Map<String, String> caps) {
    requireLeading();
    if (!caps.isEmpty() && !store.putRunOptions(runId, caps)) {
      return java.util.Optional.empty();
    }
    if (!store.unpause(runId)) {
      return java.util.Optional.empty();
    }
    java.util.Optional<dev.tally.core.store.RunView> run = store.run(runId);
    if (run.isPresent() && !run.get().ended()) {
      submitNew(runId);
    }
    return run;
  }

  /**
   * Runs an ended run's errored cases again ({@link dev.tally.core.store.Store#retryErrors}) and, if any
   * were put back in the queue, serves the run again: what a server does for {@code POST
   * /api/v1/runs/{id}/retry-errors}.
   *
   * @return what the store did
   * @throws dev.tally.core.store.StoreException if the store fails; nothing is changed
   */
  public dev.tally.core.store.RetryResult retryErrors(long runId) {
    requireLeading();
    dev.tally.core.store.RetryResult r = store.retryErrors(runId, System.currentTimeMillis());
    if (r.status() == dev.tally.core.store.RetryResult.Status.RETRIED) {
      submitNew(runId);
    }
    return r;
  }

  /**
   * Judges an ended run's recorded outcomes again with new scorers, calling no evaluator ({@link
   * dev.tally.core.store.Rescoring#rescore}: a page of cases per store transaction, between the scheduler's
   * commits): what {@code tally rescore} and {@code POST /api/v1/runs/{id}/rescore} do. Runs on the caller's
   * thread; the scheduler is not involved, since an ended run has nothing leased.
   *
   * @return what was judged again and how many verdicts changed, or why nothing was
   * @throws dev.tally.core.store.StoreException if the store fails; the pages committed before stay (the same
   *     rescore again finishes the run)
   */
  public dev.tally.core.store.RescoreResult rescore(long runId, dev.tally.core.score.Judge judge) {
    requireLeading();
    return dev.tally.core.store.Rescoring.rescore(store, runId, judge, clock);
  }

  private CompletableFuture<RunCounters> submit(long runId, long beganNanos) {
    requireLeading();
    CompletableFuture<RunCounters> done = scheduler.activate(runId);
    // A run activated again after its end (retry-errors) gets the future of that end back, done already: its
    // listeners are not told of an end that is not this one's.
    if (!done.isDone()) {
      done.thenRun(() -> tellRunEnded(runId));
    }
    done.thenRun(() -> finishedAfterNanos.putIfAbsent(runId, System.nanoTime() - beganNanos));
    waiting.add(done);
    done.whenComplete((counters, failure) -> waiting.remove(done));
    if (steppedDown != null) {
      done.completeExceptionally(deposed(steppedDown)); // stepped down meanwhile: the scheduler is stopping
    }
    return done;
  }

  /**
   * Registers {@code listener}, called with a run's id when a run this coordinator serves ends (every job
   * ended, the end committed), on the thread that completes the run (the scheduler's): it must return at
   * once. What it throws is logged and does not reach the scheduler. Not called for the second end of a run
   * whose errors were retried (the scheduler keeps one completion per run, done at its first end). Safe from
   * any thread.
   *
   * @param listener takes the id of the run that ended
   * @throws NullPointerException if {@code listener} is null
   */
  public void onRunEnded(java.util.function.LongConsumer listener) {
    runEndListeners.add(java.util.Objects.requireNonNull(listener, "listener"));
  }

  private void tellRunEnded(long runId) {
    for (java.util.function.LongConsumer listener : runEndListeners) {
      try {
        listener.accept(runId);
      } catch (RuntimeException e) {
        log.warn("a listener of run {}'s end failed: {}", runId, e.toString());
      }
    }
  }

  /** What a run's future fails with when this coordinator steps down before the run ends. */
  private static dev.tally.core.store.StoreException deposed(String why) {
    return new dev.tally.core.store.StoreException("this coordinator gave up its lead of the store: " + why);
  }

  /**
   * This coordinator's part of a finished run, as {@code summary.json}'s {@code wallMillis} counts it: from
   * this coordinator's start (or, for a run given by {@link #submitNew}, from its submission) to the run's
   * end, in milliseconds.
   *
   * @return the time, or empty if the run did not finish while this coordinator worked on it (it is
   *     running, or an earlier coordinator finished it)
   */
  public OptionalLong wallMillis(long runId) {
    Long nanos = finishedAfterNanos.get(runId);
    return nanos == null ? OptionalLong.empty() : OptionalLong.of(TimeUnit.NANOSECONDS.toMillis(nanos));
  }

  /**
   * Takes over and submits every run of the store that has not ended, oldest first ({@link
   * RunResumption#takeOverUnfinished}): what a server does at start, so that after a {@code kill -9} every
   * unfinished run finishes.
   *
   * @return each run taken over; {@link #submit}'s futures are reached through {@link
   *     dev.tally.core.schedule.Scheduler#completion}
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public java.util.List<RunResumption.TakeOver> resumeUnfinishedRuns() {
    requireLeading();
    java.util.List<RunResumption.TakeOver> taken = resumption.takeOverUnfinished();
    for (RunResumption.TakeOver t : taken) {
      submit(t.run().runId()); // its part counts from this coordinator's start, as tally resume's does
    }
    return taken;
  }

  /**
   * Cancels a run of this coordinator's store ({@link Scheduler#cancel}): in the scheduler's next commit,
   * whether the run is being served or not; the holders of its leases are told to abandon them.
   *
   * @return what the cancel did, once committed
   */
  public CompletableFuture<dev.tally.core.store.CancelResult> cancel(long runId) {
    requireLeading();
    return scheduler.cancel(runId);
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

  /**
   * Starts a graceful stop: the scheduler leases nothing more, while the results of what is in flight are
   * still recorded and acked. Wait for {@link #inFlight()} to reach 0 (or a deadline), then {@link #close()}.
   */
  public void stopLeasing() {
    scheduler.stopLeasing();
  }

  /** How many assignments are out on workers, as of the scheduler's last step. */
  public int inFlight() {
    return scheduler.inFlight();
  }

  /**
   * Stops the scheduler, for a coordinator whose process is being stopped before its runs finish: it
   * leases, records and releases nothing more, and records every connected worker as left because the
   * coordinator stopped. Workers that end after this are not reported lost and their jobs stay leased, as
   * after a {@code kill -9}, for the next coordinator on the store to take over ({@link RunResumption}).
   * The worker port and the store stay open until {@link #close()}. Idempotent; waits for the scheduler's
   * last step (up to 10 s).
   */
  public void stopScheduling() {
    loop.close();
  }

  /**
   * Stops accepting workers, closes their sessions, stops the scheduler, gives up the lead (a standby may
   * lead at once), then closes the store and releases its lock if this coordinator opened them. The lead
   * is given up only after the scheduler's last step, and renewed until then: the last step still writes
   * (the workers' statuses as they left), and a lead given up first made it a standby's write, refused.
   *
   * @throws UncheckedIOException if the store's lock cannot be released (the operating system releases
   *     it when the process ends)
   */
  @Override
  public void close() {
    try {
      WorkerServer s = server;
      if (s != null) {
        s.close();
      }
      loop.close();
      if (leading()) {
        leadership.release(); // a standby leads at its next look, not a whole lease later
      }
      leadership.close();
    } finally {
      try {
        if (ownedStore != null) {
          ownedStore.close();
        }
      } finally {
        if (lock != null) {
          try {
            lock.close();
          } catch (IOException e) {
            throw new UncheckedIOException("cannot release the coordinator lock of the store", e);
          }
        }
      }
    }
  }
}

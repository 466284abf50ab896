package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.CaseState;
import dev.tally.core.Ticker;
import dev.tally.core.outlier.OutlierDetector;
import dev.tally.core.outlier.OutlierPolicy;
import dev.tally.core.schedule.Fleet.Holdings;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leases jobs to workers, records what they report, and puts retryably failed attempts back.
 *
 * <p><b>How it runs.</b> Worker sessions report through the {@link WorkerEvents} methods, from any thread;
 * those only queue a {@link SchedulerEvent} and call the wake-up hook. A driver thread calls {@link
 * #step()}: one step takes every queued event, lets each of its duties add requests to one {@link
 * StoreBatch}, applies the batch in <em>one</em> store transaction, and only then lets the duties act on
 * the answer (acks, assignments, abandons). While a step's commit runs, new reports queue up and the next
 * step takes them all: that is the group commit, and under load one commit carries many evals.
 *
 * <p><b>Duties</b>, each a class of its own, in the order they plan and settle:
 * {@link RestartGrace} (leases an earlier coordinator left), {@link ExpiredLeaseSweep}, {@link
 * OverdueAttempts}, {@link Successions} (a reconnecting worker's jobs kept for its new session), {@link
 * Journals} (paid responses journalled, acked after the commit), {@link Reports} (records and releases, acked after the commit), {@link LeaseOffers},
 * {@link LeaseRenewals} (and reconnecting workers' claims), {@link OutlierWatch} and {@link
 * WorkerStatusReports}.
 *
 * <p><b>Guarantees.</b> An ack leaves only after its outcome is committed (I5). An assignment leaves only
 * after its lease and fencing token are committed (I3). Every assignment made through a session that ends
 * before reporting is released retryably when the session's {@link WorkerEvents#workerLost} is stepped,
 * so nothing is lost (I1); the store's fencing and duplicate checks make late and repeated reports
 * harmless (I2). What happens to a released job is the {@link RedeliveryPolicy}'s to decide.
 *
 * <p><b>Time and randomness</b> come from the builder: a {@link Clock} for wall time (leases, backoff,
 * history), a {@link Ticker} for durations (deadlines, attempt times), a {@link RandomGenerator} for
 * jitter. The scheduler does no I/O besides the {@link Store} and {@link WorkerHandle} ports, so a
 * simulation can drive it step by step.
 *
 * <p>Thread-safety: the {@link WorkerEvents} methods, {@link #counters}, {@link #completion}, {@link
 * #activate}, {@link #cancel}, {@link #hasQueuedEvents}, {@link #connectedWorkers}, {@link #stopLeasing} and
 * {@link #inFlight} are safe from any thread. {@link
 * #step()}, {@link #stopping()} and {@link #inFlightCount()} must be called from one thread at a time.
 */
public final class Scheduler implements WorkerEvents {
  private static final Logger log = LoggerFactory.getLogger(Scheduler.class);

  private final Store store;
  private final Clock clock;
  private final Ticker ticker;
  /** The fleet-wide limits of the runs that have them (the lease is the permit). */
  private final RunGovernor governor = new RunGovernor();
  /** Judges each run's first cases (fail fast). */
  private final FailFast failFast = new FailFast();
  /** Runs to pause in the next batch, with why. */
  private final Map<Long, String> pausesToStore = new java.util.LinkedHashMap<>();
  private final RandomGenerator random;
  private final RedeliveryPolicy redelivery;
  private final Settings settings;
  private final Runnable wakeup;

  private final Queue<SchedulerEvent> inbox = new ConcurrentLinkedQueue<>();
  private final Fleet fleet = new Fleet();
  private final Runs runs;
  private final Reports reports = new Reports();
  private final Journals journals = new Journals();
  private final LeaseOffers offers;
  private final LeaseRenewals renewals;
  private final RestartGrace grace;
  private final OutlierWatch outliers;
  private final WorkerStatusReports statuses;
  private final Successions successions;
  private final Cancels cancels;
  private final Speculations speculations;
  private final Observers observer;
  private final List<Duty> duties;
  private final EventHandler handler = new EventHandler();

  private volatile int connectedWorkers;
  /** Assignments out on workers after the last step, for other threads. */
  private volatile int inFlightAfterStep;
  private int consecutiveStoreFailures;
  /** The current step's times, for the event handlers. */
  private long nowMillis;
  private long nowNanos;

  private Scheduler(Builder b) {
    this.store = b.store;
    this.clock = b.clock;
    this.ticker = b.ticker;
    this.random = b.random;
    this.redelivery = b.redelivery;
    this.settings = b.settings;
    this.wakeup = b.wakeup;
    this.observer = new Observers(b.observers);
    this.runs = new Runs(store, observer);
    this.outliers = new OutlierWatch(b.outliers, runs, observer);
    this.cancels = new Cancels(fleet);
    this.offers = new LeaseOffers(fleet, runs, outliers, settings.leaseDuration(), governor);
    this.renewals = new LeaseRenewals(fleet, settings.leaseDuration());
    this.successions = new Successions(reports, redelivery, random);
    this.grace = new RestartGrace(fleet, runs, renewals, successions);
    ExpiredLeaseSweep sweep = new ExpiredLeaseSweep(fleet, runs, grace);
    OverdueAttempts overdue = new OverdueAttempts(fleet, runs, reports, redelivery, random);
    this.statuses = new WorkerStatusReports(store, fleet, outliers, grace, settings.leaseDuration(), observer);
    // Plan order matters where one duty reads another's decision: the sweep decides whether this step
    // sweeps, overdue attempts run with it and add releases that the reports duty then puts in the batch.
    this.speculations = new Speculations(fleet, runs, offers, outliers, governor, b.speculation, settings.leaseDuration(), new RunDurations());
    // Speculation plans after the offers: it copies only when they found nothing to lease.
    this.duties = List.of(grace, sweep, overdue, successions, journals, reports, cancels, offers, speculations, renewals,
        outliers, statuses, new KeyPurge(store));
  }

  /**
   * A builder for a scheduler on {@code store}, with its sources of time and randomness (required: the
   * simulation replays a history only if none of them is the system's by accident).
   *
   * @param store the source of truth
   * @param clock wall time for leases, backoff and attempt history
   * @param ticker monotonic time for deadlines and attempt durations
   * @param random randomness for backoff jitter
   */
  public static Builder builder(Store store, Clock clock, Ticker ticker, RandomGenerator random) {
    return new Builder(store, clock, ticker, random);
  }

  /**
   * Limits and durations of a scheduler.
   *
   * @param leaseDuration how long a lease lasts unless renewed (stored as the lease's expiry). The leases
   *     of connected workers are renewed every third of it; after a coordinator restart, a lease whose
   *     holder does not come back within it is swept back to pending. Too short, and a slow store or a
   *     long restart expires leases that live workers hold (their results are then fenced); too long, and
   *     a restarted coordinator waits that long for the jobs of workers that died with it.
   * @param storeRetryDelay how long to wait before retrying a batch whose commit failed
   * @param maxConsecutiveStoreFailures after this many failed commits in a row, {@link #step()} throws:
   *     a store that keeps failing is an outage, not a hiccup
   */
  public record Settings(Duration leaseDuration, Duration storeRetryDelay, int maxConsecutiveStoreFailures) {
    /**
     * 30 seconds: six default detection windows, so a worker reconnecting after a coordinator restart
     * (jittered backoff capped at 5 s) reclaims its leases long before they expire.
     */
    public static final Duration DEFAULT_LEASE_DURATION = Duration.ofSeconds(30);

    /** How often expired leases are looked for. */
    public static final Duration SWEEP_INTERVAL = ExpiredLeaseSweep.INTERVAL;

    /** For this long after a scheduler starts (at most), expired leases are not swept (see {@link RestartGrace}). */
    public static final Duration RECLAIM_GRACE = RestartGrace.GRACE;

    /**
     * @throws IllegalArgumentException if the lease is not positive, the retry delay negative, or the
     *     failure limit below 1
     */
    public Settings {
      if (leaseDuration.isNegative() || leaseDuration.isZero()) {
        throw new IllegalArgumentException("leaseDuration must be positive, got " + leaseDuration);
      }
      if (storeRetryDelay.isNegative()) {
        throw new IllegalArgumentException("storeRetryDelay must be >= 0, got " + storeRetryDelay);
      }
      if (maxConsecutiveStoreFailures < 1) {
        throw new IllegalArgumentException(
            "maxConsecutiveStoreFailures must be >= 1, got " + maxConsecutiveStoreFailures);
      }
    }

    /** Lease 30 s, retry a failed commit after 200 ms, give up after 10 failed commits in a row. */
    public static Settings defaults() {
      return new Settings(DEFAULT_LEASE_DURATION, Duration.ofMillis(200), 10);
    }
  }

  // ---- events, from any thread -------------------------------------------------------------------

  @Override
  public void workerJoined(WorkerHandle worker) {
    enqueue(new SchedulerEvent.Joined(worker));
  }

  @Override
  public void attemptEnded(WorkerHandle worker, AttemptReport report) {
    enqueue(new SchedulerEvent.Ended(worker, report));
  }

  @Override
  public void workerLost(WorkerHandle worker, String reason) {
    enqueue(new SchedulerEvent.Lost(worker, reason));
  }

  @Override
  public void responseJournalled(WorkerHandle worker, dev.tally.core.JournalEntry entry) {
    enqueue(new SchedulerEvent.Journalled(worker, entry));
  }

  /**
   * Tells the scheduler that a run's jobs are in the store and may be leased. Returns at once.
   *
   * @param runId a run created with {@link Store#createRun}
   * @return a future completed with the run's final counters when every job has ended; completed
   *     exceptionally if the scheduler gives up on the store
   */
  public CompletableFuture<RunCounters> activate(long runId) {
    CompletableFuture<RunCounters> done = completion(runId);
    enqueue(new SchedulerEvent.Activated(runId));
    return done;
  }

  /**
   * Cancels a run, in the next step's commit ({@link dev.tally.core.store.BatchRules#cancelRun} is the
   * rule): its pending jobs are never leased, the holders of its leases are told to abandon them, and a
   * result that arrives later is fenced. Cancelling a cancelled run changes nothing; a finished run is
   * refused. Works for any run of the store, whether this scheduler serves it or not. Returns at once.
   *
   * @return a future completed with what the cancel did once it is committed; completed exceptionally if the
   *     scheduler gives up on the store
   */
  public CompletableFuture<CancelResult> cancel(long runId) {
    CompletableFuture<CancelResult> done = new CompletableFuture<>();
    enqueue(new SchedulerEvent.Cancel(runId, done));
    return done;
  }

  /** The future completed when run {@code runId} finishes (see {@link #activate}). */
  public CompletableFuture<RunCounters> completion(long runId) {
    return runs.completion(runId);
  }

  /** The run's counters as of the last committed step, or null if the scheduler has not seen the run. */
  public RunCounters counters(long runId) {
    return runs.counters(runId);
  }

  private void enqueue(SchedulerEvent event) {
    inbox.add(event);
    wakeup.run();
  }

  /** Whether events are queued for the next step. */
  public boolean hasQueuedEvents() {
    return !inbox.isEmpty();
  }

  // ---- the step, on the driver's thread ------------------------------------------------------------

  /**
   * Takes the queued events, commits one batch, then sends acks and assignments.
   *
   * @return the wall time (epoch ms) at which a step is due even if no event arrives (a backoff ends,
   *     or a failed commit is to be retried), or {@link Long#MAX_VALUE} if only an event can make work
   * @throws StoreException if the store failed {@link Settings#maxConsecutiveStoreFailures} times in a
   *     row, or at once with {@link dev.tally.core.store.StaleEpochException} if it refused the commit because
   *     another coordinator leads the store; every waiting run's future is completed exceptionally first
   */
  public long step() {
    nowMillis = clock.millis();
    nowNanos = ticker.nanos();
    grace.begin(nowMillis); // the first step's time: a standby's scheduler steps only once it leads
    statuses.beforeEvents(nowMillis);
    for (SchedulerEvent e; (e = inbox.poll()) != null; ) {
      e.deliverTo(handler);
    }
    connectedWorkers = fleet.size();

    Step step = new Step(nowMillis, nowNanos, runs.leaseOrder(), redelivery);
    pausesToStore.forEach(step::pause);
    pausesToStore.clear(); // a failed commit loses them from the store only: the governor keeps the run paused
    for (Duty d : duties) {
      d.plan(step);
    }
    StoreBatch batch = step.toBatch();
    if (batch.isEmpty()) {
      statuses.afterStep(nowMillis);
      inFlightAfterStep = fleet.inFlightCount();
      return Math.min(offers.nextNotBeforeMillis(), speculations.dueMillis());
    }
    StoreBatchResult result;
    long commitStarted = ticker.nanos();
    try {
      result = store.apply(batch);
      consecutiveStoreFailures = 0;
    } catch (StoreException e) {
      if (Thread.currentThread().isInterrupted()) {
        // The loop is being stopped (a coordinator that stepped down interrupts a commit that waits for its
        // store): nothing is retried, and this is no failure of the store.
        log.info("the commit was interrupted: the scheduler is stopping");
        return nowMillis + settings.storeRetryDelay().toMillis();
      }
      consecutiveStoreFailures++;
      // A stale epoch never heals: another coordinator leads the store, and this one must stop at once.
      if (e instanceof dev.tally.core.store.StaleEpochException
          || consecutiveStoreFailures >= settings.maxConsecutiveStoreFailures()) {
        if (e instanceof dev.tally.core.store.StaleEpochException stale) {
          // Not a failure of the store: this coordinator does not lead it (any more). The message says who
          // does; no trace helps. A write of NOT_LEADING is this coordinator's own step-down (its patience
          // spent while the store was unreachable, say): nobody else need lead.
          log.error("{}; this scheduler stops: {}", stale.writerEpoch() == Store.NOT_LEADING
              ? "this coordinator has stepped down" : "another coordinator leads the store", e.getMessage());
        } else {
          log.error("store failed {} times in a row; giving up: {}", consecutiveStoreFailures, e.getMessage(), e);
        }
        runs.failAll(e);
        cancels.failAll(e);
        throw e;
      }
      log.warn("store commit failed (attempt {}); retrying the batch", consecutiveStoreFailures, e);
      return nowMillis + settings.storeRetryDelay().toMillis();
    }
    long commitNanos = ticker.nanos() - commitStarted;
    for (Duty d : duties) {
      d.settle(step, result);
    }
    statuses.afterStep(nowMillis); // after the assignments: its in-flight counts are this step's
    runs.publish(result.counters());
    if (governor.any()) {
      result.counters().forEach((runId, c) -> {
        String before = governor.capped(runId);
        String cap = governor.spent(runId, c, nowMillis);
        if (cap != null && before == null) {
          log.warn("run {} leases no more: {}; the cases in flight finish, then it waits for a raised cap", runId, cap);
        }
      });
    }
    inFlightAfterStep = fleet.inFlightCount();
    if (!observer.isEmpty()) {
      tellObservers(step, batch, result, commitStarted + commitNanos, commitNanos);
    }
    return Math.min(offers.dueMillis(nowMillis), speculations.dueMillis());
  }

  /** What the commit did, for the observers. */
  private void tellObservers(Step step, StoreBatch batch, StoreBatchResult result, long committedAtNanos, long commitNanos) {
    for (List<dev.tally.core.Assignment> leased : result.leases()) {
      for (dev.tally.core.Assignment a : leased) {
        observer.leased(a.jobId(), a.token(), committedAtNanos);
      }
    }
    List<Step.PendingRecord> records = step.records();
    for (int i = 0; i < records.size(); i++) {
      observer.recorded(result.recordStatuses().get(i), records.get(i).latencyNanos());
    }
    for (int i = 0; i < batch.releases().size(); i++) {
      if (result.releaseStatuses().get(i) == StoreBatch.ReleaseStatus.RELEASED) {
        observer.redelivered(batch.releases().get(i).jobId(), batch.releases().get(i).failure().kind());
      }
    }
    for (StoreBatch.ExpiredLease e : result.expired()) {
      if (e.status() == StoreBatch.ReleaseStatus.RELEASED) {
        observer.redelivered(e.jobId(), e.why());
      }
    }
    observer.committed(records.size(), commitNanos);
  }

  /** The scheduler's side of each event, on its thread, at the step's time. */
  private final class EventHandler implements SchedulerEvent.Handler {
    @Override
    public void joined(WorkerHandle worker) {
      fleet.join(worker);
      successions.joined(worker, nowMillis, nowNanos);
      outliers.joined(worker, nowMillis);
      for (HeldLease held : worker.heldAtJoin()) {
        renewals.claim(worker, held);
      }
      grace.arrived(worker.workerId());
      offers.wake();
      statuses.joined();
      log.info("worker {} joined (window {})", worker.name(), worker.dispatchWindow());
    }

    @Override
    public void ended(WorkerHandle worker, AttemptReport report) {
      Holdings holdings = fleet.holdings(worker);
      InFlight f = holdings == null ? null : holdings.inFlight.get(report.jobId());
      if (f != null && f.token() == report.token()) {
        holdings.inFlight.remove(report.jobId());
        // Only real traffic judges a worker, and a case's own verdict never counts against it.
        outliers.ended(worker, f, report, nowMillis, nowNanos);
      } else {
        // A report for an assignment this session does not hold: an outbox resend after a reconnect, or a
        // late result from a session already released. The store decides (fenced or duplicate).
        f = null;
      }
      AttemptTiming timing = new AttemptTiming(f == null ? AttemptTiming.UNKNOWN : f.elapsedMillis(nowNanos),
          report.queuedMillis(), report.runMillis());
      if (f != null) {
        if (report.outcome() != null) {
          speculations.recorded(worker.name(), f.runId(), report.runMillis(), f.elapsedMillis(nowNanos));
          governor.succeeded(f.runId());
          String broken = failFast.recorded(f.runId(), report.outcome());
          if (broken != null) {
            governor.pause(f.runId(), broken);
            pausesToStore.put(f.runId(), broken);
            log.warn("run {} paused: {}; the cases in flight finish, the rest wait (tally resume goes on once it is fixed)",
                f.runId(), broken);
          }
        } else if (report.failure().kind() == InfraFailure.Kind.RATE_LIMITED) {
          governor.rateLimited(f.runId(), report.failure().retryAfterMillis(), inFlightOf(f.runId()), nowMillis);
          log.info("run {}: the endpoint rate-limited an attempt ({}); the fleet's window for the run is {}", f.runId(),
              report.failure().detail(), Math.round(governor.window(f.runId())));
        }
        if (governor.governs(f.runId())) {
          offers.wake(); // a permit came back
        }
      }
      if (report.outcome() != null) {
        long latencyNanos = f == null ? -1 : Math.max(0, nowNanos - f.leasedAtNanos());
        reports.record(new RecordRequest(report.jobId(), report.token(), worker.name(), report.outcome(), timing), worker,
            latencyNanos);
      } else {
        reports.release(new ReleaseRequest(report.jobId(), report.token(), report.failure(),
            notBefore(f, report.failure().kind()), CaseState.UNKNOWN, timing), worker);
      }
    }

    @Override
    public void journalled(WorkerHandle worker, dev.tally.core.JournalEntry entry) {
      journals.journal(entry, worker);
    }

    @Override
    public void lost(WorkerHandle worker, String reason) {
      Holdings holdings = fleet.leave(worker);
      if (holdings == null) {
        return;
      }
      statuses.left(worker, holdings, nowMillis, reason);
      if (!fleet.hasWorkerId(worker.workerId())) {
        outliers.left(worker);
      }
      if (worker.superseded()) {
        successions.superseded(worker, holdings, nowMillis); // its new session reclaims what it still holds
        return;
      }
      if (holdings.inFlight.isEmpty()) {
        log.info("worker {} left ({})", worker.name(), reason);
      } else if (worker.shuttingDown()) {
        log.info("worker {} left while shutting down ({}); its {} unfinished jobs go back to the queue", worker.name(),
            reason, holdings.inFlight.size());
      } else {
        log.warn("worker {} lost ({}); redelivering its {} in-flight jobs", worker.name(), reason, holdings.inFlight.size());
      }
      InfraFailure failure = new InfraFailure(InfraFailure.Kind.WORKER_LOST, reason);
      int running = worker.slots(); // the first `slots` assignments were running, the rest queued
      for (Map.Entry<Long, InFlight> e : holdings.inFlight.entrySet()) {
        InFlight f = e.getValue();
        // A draining worker's unfinished cases were stopped by its drain timeout, not by a crash: they
        // say nothing about whether the case takes workers down.
        CaseState where = worker.shuttingDown() ? CaseState.UNKNOWN : running-- > 0 ? CaseState.RUNNING : CaseState.QUEUED;
        reports.release(new ReleaseRequest(e.getKey(), f.token(), failure, notBefore(f, failure.kind()), where,
            AttemptTiming.elapsed(f.elapsedMillis(nowNanos))), null); // nobody to ack: the session is gone
      }
    }

    @Override
    public void activated(long runId) {
      offers.wake();
      runs.activate(runId);
      RunView view = runs.view(runId);
      RunCounters counters = runs.counters(runId);
      governor.govern(runId, view.limits(), nowMillis);
      if (view.pausedReason() != null) {
        governor.pause(runId, view.pausedReason());
        log.warn("run {} is paused: {}; tally resume goes on with it", runId, view.pausedReason());
      }
      try {
        failFast.activated(runId, view.spec().evaluator().options(), counters);
      } catch (IllegalArgumentException e) {
        // Checked when the run was submitted; a store edited by hand since is not worth stopping for.
        log.warn("run {}: its fail-fast setting cannot be read ({}); it is not judged", runId, e.getMessage());
      }
      String cap = counters == null ? null : governor.spent(runId, counters, nowMillis);
      if (cap != null) {
        log.warn("run {} leases nothing: {}; raise the cap to go on", runId, cap);
      }
    }

    @Override
    public void cancel(long runId, CompletableFuture<CancelResult> done) {
      cancels.ask(runId, done);
    }
  }

  /** The run's jobs in flight on this coordinator's workers. */
  private int inFlightOf(long runId) {
    int n = 0;
    for (Map.Entry<WorkerHandle, Holdings> e : fleet.entries()) {
      for (InFlight f : e.getValue().inFlight.values()) {
        if (f.runId() == runId) {
          n++;
        }
      }
    }
    return n;
  }

  /** When a released job may be leased again: after the policy's backoff, or now if the attempt is not ours. */
  private long notBefore(InFlight f, InfraFailure.Kind kind) {
    return f == null ? nowMillis : nowMillis + redelivery.backoff(f.attempt(), kind, random).toMillis();
  }

  /**
   * Records, for {@code tally status}, that every worker still connected left because this coordinator
   * is stopping. Called once, from the scheduler's thread, after its last step. A store failure here is
   * logged, not thrown: the coordinator stops anyway, and the statuses are only a view.
   */
  public void stopping() {
    statuses.stopping(clock.millis());
  }

  /**
   * Leases nothing more, from the next step on, while everything else goes on: results are recorded and
   * acked, failed attempts released. For a coordinator that is stopping gracefully and waits for the
   * results of what is in flight ({@link #inFlight()}) before it lets its workers go. Safe from any
   * thread; idempotent; there is no way back.
   */
  public void stopLeasing() {
    offers.stop();
    wakeup.run();
  }

  /** How many assignments were out on workers after the last step. Safe from any thread. */
  public int inFlight() {
    return inFlightAfterStep;
  }

  /** How many workers are connected, as of the last step. Safe from any thread. */
  public int connectedWorkers() {
    return connectedWorkers;
  }

  /** How many assignments are out on workers (as of the last step). Only for the driver's thread. */
  public int inFlightCount() {
    return fleet.inFlightCount();
  }

  /** The rules this scheduler releases jobs by. */
  public RedeliveryPolicy redelivery() {
    return redelivery;
  }

  /** Builds a {@link Scheduler}. Not thread-safe. */
  public static final class Builder {
    private final Store store;
    private final Clock clock;
    private final Ticker ticker;
    private final RandomGenerator random;
    private RedeliveryPolicy redelivery = RedeliveryPolicy.defaults();
    private Settings settings = Settings.defaults();
    private final java.util.List<SchedulerObserver> observers = new java.util.ArrayList<>();
    private Runnable wakeup = () -> {};
    private OutlierDetector outliers;
    private SpeculationPolicy speculation = SpeculationPolicy.defaults().withMode(SpeculationPolicy.Mode.OFF);

    private Builder(Store store, Clock clock, Ticker ticker, RandomGenerator random) {
      this.store = Objects.requireNonNull(store, "store");
      this.clock = Objects.requireNonNull(clock, "clock");
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      this.random = Objects.requireNonNull(random, "random");
    }

    /** The rules for retryably failed attempts (default {@link RedeliveryPolicy#defaults()}). */
    public Builder redelivery(RedeliveryPolicy redelivery) {
      this.redelivery = Objects.requireNonNull(redelivery, "redelivery");
      return this;
    }

    /** Limits and durations (default {@link Settings#defaults()}). */
    public Builder settings(Settings settings) {
      this.settings = Objects.requireNonNull(settings, "settings");
      return this;
    }

    /** Called (from any thread) after an event is queued; the driver then calls {@link #step()}. */
    public Builder wakeup(Runnable wakeup) {
      this.wakeup = Objects.requireNonNull(wakeup, "wakeup");
      return this;
    }

    /**
     * When to start backup attempts of stragglers (speculative execution); default off here: the product's
     * default is {@code CoordinatorBuilder}'s.
     */
    public Builder speculation(SpeculationPolicy speculation) {
      this.speculation = Objects.requireNonNull(speculation, "speculation");
      return this;
    }

    /**
     * The outlier detector, owned by the scheduler from then on (touched only by the thread that steps
     * it); default: one with {@link OutlierPolicy#defaults()}.
     */
    public Builder outliers(OutlierDetector outliers) {
      this.outliers = Objects.requireNonNull(outliers, "outliers");
      return this;
    }

    /**
     * Adds an observer of what each commit did; called on the scheduler's thread (see {@link
     * SchedulerObserver}). None by default.
     */
    public Builder observer(SchedulerObserver observer) {
      this.observers.add(Objects.requireNonNull(observer, "observer"));
      return this;
    }

    public Scheduler build() {
      if (outliers == null) {
        outliers = new OutlierDetector(OutlierPolicy.defaults());
      }
      return new Scheduler(this);
    }
  }
}

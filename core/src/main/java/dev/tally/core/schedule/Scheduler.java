package dev.tally.core.schedule;

import dev.tally.core.Assignment;
import dev.tally.core.InfraFailure;
import dev.tally.core.RecordStatus;
import dev.tally.core.outlier.Ending;
import dev.tally.core.outlier.OutlierDetector;
import dev.tally.core.outlier.OutlierEvent;
import dev.tally.core.outlier.OutlierPolicy;
import dev.tally.core.outlier.WorkerHealth;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatch.ExpiredLease;
import dev.tally.core.store.StoreBatch.ReleaseStatus;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leases jobs to workers, records what they report, and puts retryably failed attempts back.
 *
 * <p><b>How it runs.</b> Worker sessions report through the {@link WorkerEvents} methods, from any thread;
 * those only queue the event and call the wake-up hook. A driver thread calls {@link #step()}: one step
 * drains every queued event, turns them into one {@link StoreBatch} (records, releases, and leases for
 * every worker with a free place in its dispatch window), applies it in <em>one</em> store transaction,
 * and only then sends acks and assignments. While a step's commit runs, new reports queue up and the next
 * step takes them all: that is the group commit, and under load one commit carries many evals.
 *
 * <p><b>Guarantees.</b> An ack leaves only after its outcome is committed (I5). An assignment leaves only
 * after its lease and fencing token are committed (I3). Every assignment made through a session that ends
 * before reporting is released retryably when the session's {@link WorkerEvents#workerLost} is stepped,
 * so nothing is lost (I1); the store's fencing and duplicate checks make late and repeated reports
 * harmless (I2).
 *
 * <p><b>Time and randomness</b> come from the constructor ({@link Clock}, {@link RandomGenerator}); the
 * scheduler does no I/O besides the {@link Store} and {@link WorkerHandle} ports, so a simulation can
 * drive it step by step.
 *
 * <p>Thread-safety: the {@link WorkerEvents} methods, {@link #counters}, {@link #completion} and
 * {@link #activate} are safe from any thread. {@link #step()} must be called from one thread at a time.
 */
public final class Scheduler implements WorkerEvents {
  private static final Logger log = LoggerFactory.getLogger(Scheduler.class);

  private final Store store;
  private final Clock clock;
  private final RandomGenerator random;
  private final RetryPolicy retryPolicy;
  private final Settings settings;
  private final Runnable wakeup;
  private final OutlierDetector outliers;

  private final Queue<Object> inbox = new ConcurrentLinkedQueue<>();
  private final Map<WorkerHandle, WorkerState> workers = new LinkedHashMap<>();
  private final Map<Long, RunView> runSpecs = new HashMap<>();
  // The runs this scheduler leases from, in activation order; a run leaves when it finishes.
  private final java.util.LinkedHashSet<Long> activeRuns = new java.util.LinkedHashSet<>();
  private final Map<Long, RunCounters> latestCounters = new ConcurrentHashMap<>();
  private final Map<Long, CompletableFuture<RunCounters>> completions = new ConcurrentHashMap<>();

  // Requests that a failed commit left unapplied: carried to the next step, because a report that is
  // neither recorded nor acked would sit in a worker's outbox until it reconnects.
  private final List<RecordRequest> records = new ArrayList<>();
  private final List<WorkerHandle> recordSenders = new ArrayList<>();
  private final List<ReleaseRequest> releases = new ArrayList<>();
  private final List<WorkerHandle> releaseSenders = new ArrayList<>();

  private volatile int connectedWorkers;
  private final List<Adoption> adoptions = new ArrayList<>();
  private long lastRenewalMillis;
  private long lastStatusMillis;
  /** A worker joined since the statuses were last saved. */
  private boolean statusChanged;
  /** Whether the workers an earlier coordinator left as connected in the store were marked as left. */
  private boolean earlierWorkersSettled;
  /** Statuses of workers that left since the last save, each with why. */
  private final List<WorkerStatus> departed = new ArrayList<>();
  private final Map<String, String> lastEjectionReason = new HashMap<>();
  private final Map<Long, String> caseKinds = new HashMap<>();
  private long lastSweepMillis;
  /** When this scheduler was made: sweeps wait {@link Settings#RECLAIM_GRACE} after it. */
  private final long startedAtMillis;
  private boolean pendingMayBeAvailable = true;
  private long nextNotBeforeMillis = Long.MAX_VALUE;
  private int consecutiveStoreFailures;

  /**
   * Creates a scheduler.
   *
   * @param store the source of truth
   * @param clock wall time for leases, backoff and attempt history
   * @param random randomness for backoff jitter
   * @param retryPolicy spacing of redeliveries
   * @param settings limits and durations
   * @param wakeup called (from any thread) after an event is queued; the driver then calls {@link #step()}
   */
  public Scheduler(
      Store store, Clock clock, RandomGenerator random, RetryPolicy retryPolicy, Settings settings, Runnable wakeup) {
    this(store, clock, random, retryPolicy, settings, wakeup, new OutlierDetector(OutlierPolicy.defaults()));
  }

  /**
   * Creates a scheduler with the given outlier detector, which it feeds every attempt's ending and
   * consults before leasing: an ejected worker keeps its connection and its jobs but gets no new ones.
   *
   * @param outliers owned by this scheduler from now on (touched only by the thread that steps it)
   */
  public Scheduler(
      Store store, Clock clock, RandomGenerator random, RetryPolicy retryPolicy, Settings settings, Runnable wakeup,
      OutlierDetector outliers) {
    this.outliers = Objects.requireNonNull(outliers, "outliers");
    this.store = Objects.requireNonNull(store, "store");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.startedAtMillis = clock.millis();
    this.random = Objects.requireNonNull(random, "random");
    this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
    this.settings = Objects.requireNonNull(settings, "settings");
    this.wakeup = Objects.requireNonNull(wakeup, "wakeup");
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
   * @param poisonLimit a case whose worker dies while running it this many times in a row ends failed as
   *     poison instead of taking the whole fleet down; 0 turns the judgement off. Too low, and a case
   *     unlucky enough to share a dying worker twice is condemned; too high, and a poison case kills that
   *     many more workers.
   */
  public record Settings(Duration leaseDuration, Duration storeRetryDelay, int maxConsecutiveStoreFailures, int poisonLimit) {
    /** Three deaths in a row: one is an accident, two a coincidence, three a pattern. */
    public static final int DEFAULT_POISON_LIMIT = 3;

    /**
     * 30 seconds: six default detection windows, so a worker reconnecting after a coordinator restart
     * (jittered backoff capped at 5 s) reclaims its leases long before they expire.
     */
    public static final Duration DEFAULT_LEASE_DURATION = Duration.ofSeconds(30);

    /** How often expired leases are looked for: often enough that I4 holds within a second of expiry. */
    public static final Duration SWEEP_INTERVAL = Duration.ofSeconds(1);

    /**
     * For this long after a scheduler starts, expired leases are not swept: 10 s, twice the workers'
     * longest reconnect backoff (5 s). A coordinator that was down longer than a lease finds every lease
     * of the store expired; the workers that held them, reconnecting, reclaim them (a claim renews an
     * unswept lease whatever its expiry) instead of their finished work being fenced and run again. The
     * cost: a job whose holder never returns is redelivered up to this much later after a restart.
     */
    public static final Duration RECLAIM_GRACE = Duration.ofSeconds(10);

    public Settings {
      if (leaseDuration.isNegative() || leaseDuration.isZero()) {
        throw new IllegalArgumentException("leaseDuration must be positive, got " + leaseDuration);
      }
      if (storeRetryDelay.isNegative()) {
        throw new IllegalArgumentException("storeRetryDelay must be >= 0, got " + storeRetryDelay);
      }
      if (poisonLimit < 0) {
        throw new IllegalArgumentException("poisonLimit must be >= 0 (0 turns it off), got " + poisonLimit);
      }
      if (maxConsecutiveStoreFailures < 1) {
        throw new IllegalArgumentException(
            "maxConsecutiveStoreFailures must be >= 1, got " + maxConsecutiveStoreFailures);
      }
    }

    /** Lease 30 s, retry a failed commit after 200 ms, give up after 10 failed commits in a row, poison after 3 deaths. */
    public static Settings defaults() {
      return new Settings(DEFAULT_LEASE_DURATION, Duration.ofMillis(200), 10, DEFAULT_POISON_LIMIT);
    }
  }

  // ---- events, from any thread -------------------------------------------------------------------

  private record Joined(WorkerHandle worker) {}

  private record Ended(WorkerHandle worker, AttemptReport report) {}

  private record Lost(WorkerHandle worker, String reason) {}

  private record Activated(long runId) {}

  @Override
  public void workerJoined(WorkerHandle worker) {
    enqueue(new Joined(Objects.requireNonNull(worker)));
  }

  @Override
  public void attemptEnded(WorkerHandle worker, AttemptReport report) {
    enqueue(new Ended(Objects.requireNonNull(worker), Objects.requireNonNull(report)));
  }

  @Override
  public void workerLost(WorkerHandle worker, String reason) {
    enqueue(new Lost(Objects.requireNonNull(worker), reason));
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
    enqueue(new Activated(runId));
    return done;
  }

  /** The future completed when run {@code runId} finishes (see {@link #activate}). */
  public CompletableFuture<RunCounters> completion(long runId) {
    return completions.computeIfAbsent(runId, id -> new CompletableFuture<>());
  }

  /** The run's counters as of the last committed step, or null if the scheduler has not seen the run. */
  public RunCounters counters(long runId) {
    return latestCounters.get(runId);
  }

  private void enqueue(Object event) {
    inbox.add(event);
    wakeup.run();
  }

  /** Whether events are queued for the next step. */
  public boolean hasQueuedEvents() {
    return !inbox.isEmpty();
  }

  // ---- the step, on the driver's thread ------------------------------------------------------------

  /**
   * Drains the queued events, commits one batch, then sends acks and assignments.
   *
   * @return the wall time (epoch ms) at which a step is due even if no event arrives (a backoff ends,
   *     or a failed commit is to be retried), or {@link Long#MAX_VALUE} if only an event can make work
   * @throws StoreException if the store failed {@link Settings#maxConsecutiveStoreFailures} times in a
   *     row; every waiting run's future is completed exceptionally first
   */
  public long step() {
    long now = clock.millis();
    if (!earlierWorkersSettled) {
      settleEarlierWorkers(now);
    }
    drainInbox(now);
    if (now >= nextNotBeforeMillis) {
      pendingMayBeAvailable = true;
    }

    List<WorkerHandle> leaseHolders = new ArrayList<>();
    List<LeaseRequest> leases = new ArrayList<>();
    if (pendingMayBeAvailable && !activeRuns.isEmpty()) {
      long expiry = now + settings.leaseDuration().toMillis();
      for (Map.Entry<WorkerHandle, WorkerState> e : workers.entrySet()) {
        int free = e.getKey().dispatchWindow() - e.getValue().inFlight.size();
        if (free > 0 && e.getKey().acceptingWork() && !outliers.isEjected(e.getKey().workerId(), now)) {
          leaseHolders.add(e.getKey());
          leases.add(new LeaseRequest(e.getKey().name(), free, expiry));
        }
      }
    }

    // Renewals: the leases reconnecting workers claim, and (every third of a lease) those of every
    // connected worker: a live connection is the proof of life that keeps its leases.
    // Claims stay queued until a commit settles them (like records and releases), and the renewal and
    // sweep clocks move only with a commit: a failed batch must not cost a lease its renewal.
    List<Adoption> claims = List.copyOf(adoptions);
    List<RenewRequest> renewals = new ArrayList<>();
    long expiry = now + settings.leaseDuration().toMillis();
    for (Adoption a : claims) {
      renewals.add(new RenewRequest(a.lease().jobId(), a.lease().token(), expiry));
    }
    boolean renewAll = now - lastRenewalMillis >= settings.leaseDuration().toMillis() / 3;
    if (renewAll) {
      for (WorkerState state : workers.values()) {
        state.inFlight.forEach((jobId, f) -> renewals.add(new RenewRequest(jobId, f.token, expiry)));
      }
    }
    boolean sweep = !activeRuns.isEmpty() && now - lastSweepMillis >= Settings.SWEEP_INTERVAL.toMillis()
        && now - startedAtMillis >= Settings.RECLAIM_GRACE.toMillis();
    if (sweep) {
      endOverdueAttempts(now);
    }

    StoreBatch batch = new StoreBatch(now, List.copyOf(activeRuns), records, releases, leases, renewals, sweep);
    if (batch.isEmpty()) {
      reportWorkers(now);
      return nextNotBeforeMillis;
    }
    StoreBatchResult result;
    try {
      result = store.apply(batch);
      consecutiveStoreFailures = 0;
      adoptions.clear();
      if (renewAll) {
        lastRenewalMillis = now;
      }
      if (sweep) {
        lastSweepMillis = now;
      }
    } catch (StoreException e) {
      consecutiveStoreFailures++;
      if (consecutiveStoreFailures >= settings.maxConsecutiveStoreFailures()) {
        log.error("store failed {} times in a row; giving up", consecutiveStoreFailures, e);
        completions.values().forEach(f -> f.completeExceptionally(e));
        throw e;
      }
      log.warn("store commit failed (attempt {}); retrying the batch", consecutiveStoreFailures, e);
      return now + settings.storeRetryDelay().toMillis();
    }

    for (OutlierEvent e : outliers.poll(now)) {
      log.warn("outlier detection: {}", e.describe());
      if (e.type() == OutlierEvent.Type.EJECTED) {
        lastEjectionReason.put(e.workerId(), e.reason());
      }
    }
    sendAcks(result);
    sendAssignments(now, leaseHolders, result.leases());
    settleClaims(now, claims, result.renewals());
    abandonExpired(result.expired());
    reportWorkers(now); // after the assignments: its in-flight counts are this step's
    pendingMayBeAvailable = result.pendingLeft();
    nextNotBeforeMillis = result.nextNotBeforeMillis();
    publish(result.counters());
    return pendingMayBeAvailable && hasFreeWindow() ? now : nextNotBeforeMillis;
  }

  private void drainInbox(long now) {
    drainEvents(now);
    connectedWorkers = workers.size();
  }

  private void drainEvents(long now) {
    Object event;
    while ((event = inbox.poll()) != null) {
      if (event instanceof Ended ended) {
        onEnded(now, ended.worker(), ended.report());
      } else if (event instanceof Joined joined) {
        workers.putIfAbsent(joined.worker(), new WorkerState());
        outliers.workerJoined(joined.worker().workerId(), now);
        for (HeldLease held : joined.worker().heldAtJoin()) {
          adoptions.add(new Adoption(joined.worker(), held));
        }
        pendingMayBeAvailable = true;
        statusChanged = true;
        log.info("worker {} joined (window {})", joined.worker().name(), joined.worker().dispatchWindow());
      } else if (event instanceof Lost lost) {
        onLost(now, lost.worker(), lost.reason());
      } else if (event instanceof Activated activated) {
        pendingMayBeAvailable = true;
        if (!runSpec(activated.runId()).finished()) {
          activeRuns.add(activated.runId());
        }
      }
    }
  }

  private void onEnded(long now, WorkerHandle worker, AttemptReport report) {
    WorkerState state = workers.get(worker);
    InFlight inFlight = state == null ? null : state.inFlight.get(report.jobId());
    if (inFlight != null && inFlight.token == report.token()) {
      state.inFlight.remove(report.jobId());
    } else {
      // A report for an assignment this session does not hold: an outbox resend after a reconnect, or a
      // late result from a session we already released. The store decides (fenced or duplicate).
      inFlight = null;
    }
    if (inFlight != null) {
      // Only real traffic judges a worker, and a case's own verdict never counts against it.
      long durationMillis = report.outcome() != null ? report.outcome().durationMillis() : now - inFlight.leasedAtMillis;
      Ending ending = report.outcome() != null ? Ending.SUCCESS : Ending.of(report.failure().kind());
      outliers.attemptEnded(worker.workerId(), caseKind(inFlight.runId), ending, durationMillis, now);
    }
    if (report.outcome() != null) {
      records.add(new RecordRequest(report.jobId(), report.token(), worker.name(), report.outcome()));
      recordSenders.add(worker);
    } else {
      releases.add(releaseFor(now, report.jobId(), report.token(), inFlight, report.failure()));
      releaseSenders.add(worker);
    }
  }

  private void onLost(long now, WorkerHandle worker, String reason) {
    WorkerState state = workers.remove(worker);
    if (state == null) {
      return;
    }
    departed.add(statusOf(worker, state, outliers.snapshot(now), now).left(now, reason));
    if (workers.keySet().stream().noneMatch(w -> w.workerId().equals(worker.workerId()))) {
      outliers.workerLeft(worker.workerId());
    }
    if (state.inFlight.isEmpty()) {
      log.info("worker {} left ({})", worker.name(), reason);
    } else {
      log.warn("worker {} lost ({}); redelivering its {} in-flight jobs", worker.name(), reason, state.inFlight.size());
    }
    InfraFailure failure = new InfraFailure(InfraFailure.Kind.WORKER_LOST, reason);
    int running = worker.slots();
    for (Map.Entry<Long, InFlight> e : state.inFlight.entrySet()) {
      ReleaseRequest r = releaseFor(now, e.getKey(), e.getValue().token, e.getValue(), failure);
      boolean diedRunning = running-- > 0;
      releases.add(new ReleaseRequest(r.jobId(), r.token(), r.failure(), r.notBeforeMillis(), r.terminal(), diedRunning, settings.poisonLimit()));
      releaseSenders.add(null); // nobody to ack: the session is gone
    }
  }

  private ReleaseRequest releaseFor(long now, long jobId, long token, InFlight inFlight, InfraFailure failure) {
    if (inFlight == null) {
      // Not an attempt we hold: the store will find the lease stale and change nothing.
      return new ReleaseRequest(jobId, token, failure, now, false);
    }
    int maxAttempts = runSpec(inFlight.runId).spec().maxAttempts();
    boolean terminal = inFlight.attempt >= maxAttempts;
    // A job lost with its worker goes out again at once: the backoff spaces retries of a job that failed
    // for its own reasons, and waiting would only add to the failover time. Its retries after that are
    // spaced like any other.
    long backoffMillis = failure.kind() == InfraFailure.Kind.WORKER_LOST && inFlight.attempt == 1
        ? 0 : retryPolicy.backoff(inFlight.attempt, random).toMillis();
    return new ReleaseRequest(jobId, token, failure, now + backoffMillis, terminal);
  }

  /** The outlier detector compares latencies within a run: its kind of case. Cached: this is per eval. */
  private String caseKind(long runId) {
    return caseKinds.computeIfAbsent(runId, id -> "run-" + id);
  }

  private RunView runSpec(long runId) {
    RunView run = runSpecs.get(runId);
    if (run == null) {
      run = store.run(runId).orElseThrow(() -> new IllegalStateException("no run " + runId + " in the store"));
      runSpecs.put(runId, run);
      publish(Map.of(runId, run.counters()));
    }
    return run;
  }

  private void sendAcks(StoreBatchResult result) {
    Map<WorkerHandle, List<Ack>> acks = new LinkedHashMap<>();
    for (int i = 0; i < records.size(); i++) {
      RecordRequest r = records.get(i);
      RecordStatus status = result.recordStatuses().get(i);
      acks.computeIfAbsent(recordSenders.get(i), w -> new ArrayList<>())
          .add(new Ack(r.jobId(), r.token(), AckStatus.valueOf(status.name())));
    }
    for (int i = 0; i < releases.size(); i++) {
      WorkerHandle sender = releaseSenders.get(i);
      if (sender != null) {
        ReleaseRequest r = releases.get(i);
        AckStatus status = result.releaseStatuses().get(i) == ReleaseStatus.STALE ? AckStatus.FENCED : AckStatus.RELEASED;
        acks.computeIfAbsent(sender, w -> new ArrayList<>()).add(new Ack(r.jobId(), r.token(), status));
      }
    }
    records.clear();
    recordSenders.clear();
    releases.clear();
    releaseSenders.clear();
    acks.forEach(WorkerHandle::acknowledge);
  }

  private void sendAssignments(long now, List<WorkerHandle> holders, List<List<Assignment>> leased) {
    for (int i = 0; i < holders.size(); i++) {
      List<Assignment> assignments = leased.get(i);
      if (assignments.isEmpty()) {
        continue;
      }
      WorkerHandle worker = holders.get(i);
      WorkerState state = workers.get(worker);
      for (Assignment a : assignments) {
        state.inFlight.put(a.jobId(), new InFlight(a.runId(), a.token(), a.attempt(), now));
      }
      worker.assign(assignments);
    }
  }

  /** Slack past an attempt's deadline before the coordinator ends it: the worker's own timeout goes first. */
  static final long DEADLINE_GRACE_MILLIS = 5_000;

  /**
   * Ends the attempts that outran their deadline although their worker is alive: the worker's own case
   * timeout should have ended them (its evaluator may be hung). The deadline counts from the lease, so it
   * allows for the wait behind the worker's other assignments: the case timeout times the rounds a full
   * dispatch window needs ({@code ceil(window / slots)}), plus {@link #DEADLINE_GRACE_MILLIS}. The job is
   * released as a timeout and the worker told to abandon it (which kills its process).
   */
  private void endOverdueAttempts(long now) {
    for (Map.Entry<WorkerHandle, WorkerState> w : workers.entrySet()) {
      WorkerHandle worker = w.getKey();
      int rounds = (worker.dispatchWindow() + worker.slots() - 1) / Math.max(1, worker.slots());
      var it = w.getValue().inFlight.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<Long, InFlight> e = it.next();
        InFlight f = e.getValue();
        long budget = runSpec(f.runId).spec().evaluator().caseTimeout().toMillis() * rounds + DEADLINE_GRACE_MILLIS;
        if (now - f.leasedAtMillis > budget) {
          it.remove();
          String why = "deadline passed: leased " + (now - f.leasedAtMillis) + " ms ago, budget " + budget + " ms";
          log.warn("job {} on worker {}: {}; abandoning it", e.getKey(), worker.name(), why);
          releases.add(releaseFor(now, e.getKey(), f.token, f, new InfraFailure(InfraFailure.Kind.TIMEOUT, why)));
          releaseSenders.add(null);
          worker.abandon(e.getKey(), f.token, why);
        }
      }
    }
  }

  /** How often the workers' suspicion and ejection are saved for {@code tally status}. */
  static final long WORKER_STATUS_INTERVAL_MILLIS = 2_000;

  /**
   * Saves the workers' statuses every {@link #WORKER_STATUS_INTERVAL_MILLIS}, and at once when a worker
   * joined or left since the last save, so that {@code tally status} lists every worker even of a short
   * run and shows who left and why.
   */
  private void reportWorkers(long now) {
    boolean due = !workers.isEmpty() && now - lastStatusMillis >= WORKER_STATUS_INTERVAL_MILLIS;
    if (!due && !statusChanged && departed.isEmpty()) {
      return;
    }
    List<WorkerStatus> statuses = new ArrayList<>(departed);
    Map<String, WorkerHealth> health = outliers.snapshot(now);
    for (Map.Entry<WorkerHandle, WorkerState> e : workers.entrySet()) {
      statuses.add(statusOf(e.getKey(), e.getValue(), health, now));
    }
    try {
      store.saveWorkerStatuses(statuses);
      lastStatusMillis = now;
      statusChanged = false;
      departed.clear();
    } catch (StoreException ex) {
      lastStatusMillis = now; // not again before the interval: the store is the run's, this is only a view
      log.warn("could not save worker statuses for tally status (the run goes on)", ex);
    }
  }

  private WorkerStatus statusOf(WorkerHandle w, WorkerState state, Map<String, WorkerHealth> health, long now) {
    WorkerHealth h = health.get(w.workerId());
    long ejectedUntil = h == null ? 0 : h.ejectedUntilMillis().orElse(0);
    return new WorkerStatus(w.workerId(), w.name(), w.suspicion(), w.acceptingWork(), ejectedUntil,
        lastEjectionReason.get(w.workerId()), h == null ? 0 : h.timesEjected(), state.inFlight.size(), now, null);
  }

  /**
   * Marks, once, the workers an earlier coordinator on this store still had as connected (it was killed
   * before it could say they left) as left, so that {@code tally status} shows only this coordinator's
   * workers as connected. Their sessions died with that coordinator; a worker that reconnects here is
   * reported again, as connected, by this one.
   */
  private void settleEarlierWorkers(long now) {
    try {
      List<WorkerStatus> stale = new ArrayList<>();
      for (WorkerStatus w : store.workerStatuses()) {
        if (w.connected()) {
          stale.add(w.left(now, "its coordinator stopped without a word (killed?) at most "
              + (now - w.reportedAtMillis()) / 1000 + " s after its last report"));
        }
      }
      store.saveWorkerStatuses(stale);
    } catch (StoreException e) {
      log.warn("could not mark an earlier coordinator's workers as left (tally status may show them as silent)", e);
    }
    earlierWorkersSettled = true; // once either way: this is only a view, the run goes on
  }

  /**
   * Records, for {@code tally status}, that every worker still connected left because this coordinator
   * is stopping. Called once, from the scheduler's thread, after its last step. A store failure here is
   * logged, not thrown: the coordinator stops anyway, and the statuses are only a view.
   */
  public void stopping() {
    long now = clock.millis();
    Map<String, WorkerHealth> health = outliers.snapshot(now);
    for (Map.Entry<WorkerHandle, WorkerState> e : workers.entrySet()) {
      departed.add(statusOf(e.getKey(), e.getValue(), health, now).left(now, "the coordinator stopped"));
    }
    workers.clear();
    reportWorkers(now);
  }

  private void settleClaims(long now, List<Adoption> claims, List<RenewResult> results) {
    for (int i = 0; i < claims.size(); i++) {
      Adoption claim = claims.get(i);
      RenewResult r = results.get(i);
      WorkerState state = workers.get(claim.worker());
      if (r.current() && state != null) {
        state.inFlight.put(claim.lease().jobId(), new InFlight(r.runId(), claim.lease().token(), r.attempt(), now));
        log.info("worker {} kept its lease on job {} (token {})", claim.worker().name(), claim.lease().jobId(), claim.lease().token());
      } else {
        claim.worker().abandon(claim.lease().jobId(), claim.lease().token(), "the lease is no longer current");
      }
    }
  }

  private void abandonExpired(List<ExpiredLease> expired) {
    for (ExpiredLease e : expired) {
      log.warn("lease on job {} (token {}) expired unrenewed; {}", e.jobId(), e.token(), e.failed() ? "out of attempts" : "back to the queue");
      for (Map.Entry<WorkerHandle, WorkerState> w : workers.entrySet()) {
        InFlight f = w.getValue().inFlight.get(e.jobId());
        if (f != null && f.token == e.token()) {
          w.getValue().inFlight.remove(e.jobId());
          w.getKey().abandon(e.jobId(), e.token(), "lease expired");
        }
      }
    }
  }

  private boolean hasFreeWindow() {
    for (Map.Entry<WorkerHandle, WorkerState> e : workers.entrySet()) {
      if (e.getKey().dispatchWindow() > e.getValue().inFlight.size()) {
        return true;
      }
    }
    return false;
  }

  private void publish(Map<Long, RunCounters> counters) {
    counters.forEach(
        (runId, c) -> {
          latestCounters.put(runId, c);
          if (c.finished()) {
            activeRuns.remove(runId);
            completion(runId).complete(c);
          }
        });
  }

  /** How many workers are connected, as of the last step. Safe from any thread. */
  public int connectedWorkers() {
    return connectedWorkers;
  }

  /** How many assignments are out on workers (as of the last step). Only for the driver's thread. */
  public int inFlightCount() {
    int n = 0;
    for (WorkerState s : workers.values()) {
      n += s.inFlight.size();
    }
    return n;
  }

  private static final class WorkerState {
    // In assignment order: a worker runs its assignments in order, so the first {@code slots} are the
    // ones running on it (the rest are queued behind them).
    final Map<Long, InFlight> inFlight = new LinkedHashMap<>();
  }

  private record InFlight(long runId, long token, int attempt, long leasedAtMillis) {}

  private record Adoption(WorkerHandle worker, HeldLease lease) {}
}

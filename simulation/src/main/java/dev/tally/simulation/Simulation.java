package dev.tally.simulation;

import dev.tally.coordinator.LeaderCheck;
import dev.tally.coordinator.net.ConnectionCore;
import dev.tally.coordinator.net.LiveSessions;
import dev.tally.coordinator.net.PlantedConnectionFault;
import dev.tally.coordinator.net.WorkerEventsChecker;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.Verdict;
import dev.tally.core.detect.LocalHealth;
import dev.tally.core.lead.LeaderAddress;
import dev.tally.core.lead.LeaderLease;
import dev.tally.core.lead.LeaderRow;
import dev.tally.core.schedule.Scheduler;
import dev.tally.core.schedule.SpeculationPolicy;
import dev.tally.core.store.CancelResult;
import dev.tally.core.security.Secret;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunState;
import dev.tally.core.store.RunView;
import dev.tally.core.store.StaleEpochException;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.Store;
import dev.tally.core.store.memory.InMemoryStore;
import dev.tally.worker.Termination;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * One history for one seed, run on the real decision logic with only sockets, threads and disks swapped
 * out: the real {@link Scheduler} (its duties, redelivery policy and outlier detector) over the real store
 * rules ({@link InMemoryStore} applies the same {@code BatchRules} as SQLite); at the coordinator's end of
 * every connection the real {@link ConnectionCore} (Hello, supersede and join, results, worker drain,
 * the φ accrual judgement of each worker, the coordinator's heartbeats, close and loss); and in every
 * worker the real {@code SessionCore} (outbox, reconnects, abandons, its judgement of the coordinator,
 * graceful drain). Only the network ({@link SimConnection}), the slots and the clock are simulated, all in
 * one thread under virtual time. Every choice (the dataset, the fleet, every latency, duration and fault)
 * is drawn from one {@link SplittableRandom} seeded with the seed, and events at equal times run in the
 * order they were scheduled, so the same seed gives the same history byte for byte ({@link
 * History#traceHash()}).
 *
 * <p><b>How the pieces run.</b> An {@link EventQueue} of timed actions; taking one moves the {@link
 * VirtualClock} to its time. The scheduler is stepped as its {@code SchedulerLoop} would step it: soon
 * after any event is queued (the wake-up hook), when a backoff ends, and at least every {@value
 * #IDLE_STEP_MILLIS} ms. Each connection's core gets its sweep (the liveness check, and the heartbeat tick
 * when due) every {@link WorkerServer.Settings#reapCheckPeriod()}, as {@code WorkerConnection} gets it from
 * its event loop's {@code ConnectionSweep} (here in the connection's own phase, there in the loop's), and
 * the port's {@code LocalHealth} its tick as {@code WorkerServer} gives it; each worker's core gets its tick
 * at its own next deadline. The coordinator's settings are the product's defaults ({@link
 * WorkerServer.Settings#defaults()}).
 *
 * <p><b>Fault sites</b> ({@link FaultKind}), drawn per seed: workers crash (connection closes, cases and
 * outbox vanish), freeze and thaw (events wait, then arrive together and late), drain gracefully (SIGTERM),
 * have their timers fire late or their frames stalled and burst, run slow, fail every case, run poison
 * cases (which kill them), have their link cut (right away, or right after a commit so that the ack is
 * lost and the outbox resend is a duplicate), hold a finished result back until after its lease is revoked;
 * store commits fail a few times in a row; the store cannot be reached for up to 45 s, by the leader alone
 * (a partition) or by every coordinator (a database restart), so that commits wait and then fail and the
 * leader's lease goes in doubt; the leading coordinator is killed and restarted (a new scheduler
 * on the same store, reopened; workers reconnect and claim their leases), or frozen (SIGSTOP) and thawed;
 * and a user cancels a run mid-way
 * (through the scheduler, or in the store while no coordinator is up). A supervisor replaces dead and
 * drained workers after a delay; one worker is exempt from injected faults, so that I4 always has a
 * healthy worker to rely on.
 *
 * <p><b>Coordinators that take over.</b> Half the seeds give the fleet two coordinator addresses, each with a
 * coordinator process ({@link SimCoordinator}) on the one durable store; the others one. Each process writes
 * through its own store instance, whose write epoch is its own and which the store checks ({@code writeAs}),
 * and decides whether it leads with the product's driver of the leader lease ({@code LeaderCheck} over the
 * real {@code LeaderLease}, with {@code CoordinatorBuilder}'s timing: a 3 s lease renewed every second, a
 * standby looking every half second), on the store's clock, which is the virtual clock. Only the leader opens
 * its worker port (a standby refuses connections) and runs a scheduler; each worker tries the addresses in
 * turn, as {@code WorkerSession} does. A frozen coordinator runs nothing until it thaws: its connections
 * stay open and silent (the kernel still completes new handshakes), and on thawing its leadership thread
 * runs before or after its event loops and scheduler (drawn per thaw), so a deposed leader sometimes
 * commits before it learns it was deposed: the store must refuse it ({@code StaleEpochException}); it then
 * steps down as {@code Coordinator} does (closes its worker connections and exits), and a supervisor starts
 * it again, as a standby. A killed coordinator's restart likewise stands by until it can lead. Every epoch
 * taken and every write committed or refused goes into the history's {@link EpochLedger}, which the
 * {@link Checker} holds to the leader rule ({@code EPOCH:}).
 *
 * <p><b>Many runs.</b> Every history has a first run; one seed in {@value #EXTRA_RUNS_ONE_IN} also submits
 * one or two smaller runs while it is under way, which share the fleet with it: {@link FairShareWatch} holds
 * every committed batch to fair share (no run starved of leases while others get them).
 *
 * <p>The history ends when every run has ended (finished or cancelled); when no job has been recorded or released for {@link
 * #STALL_MILLIS} of virtual time (a run that cannot progress); or when {@link #BUDGET_MILLIS} pass.
 *
 * <p>Thread-safety: none; a simulation is used by one thread, once.
 */
public final class Simulation {
  /** Virtual time a run gets to finish: far beyond any fault's recovery (leases last 30 s). */
  public static final long BUDGET_MILLIS = Duration.ofHours(2).toMillis();
  /**
   * A run that has not moved (no job recorded, released or ended) for this long has stalled: five
   * minutes is beyond the slowest legitimate quiet spell (the longest case on the slowest worker, about
   * two minutes, or a lease of 30 s after a coordinator down for 40 s), so only a stuck run gets here.
   */
  static final long STALL_MILLIS = Duration.ofMinutes(5).toMillis();
  /** Delay between an event being queued and the step that takes it: the group commit's gathering. */
  static final long STEP_LATENCY_MILLIS = 1;
  /** The scheduler loop's longest park: a step at least this often. */
  static final long IDLE_STEP_MILLIS = 200;
  /** A case's time budget; slow workers run past it and report a timeout. */
  static final Duration CASE_TIMEOUT = Duration.ofSeconds(20);
  /** Dead workers replaced (besides the healthy one, always replaced): the fleet does not drain, nor grow without end. */
  static final int MAX_REPLACEMENTS = 16;
  /** Coordinator kills per history: each costs a restart, and two already cover a crash during recovery. */
  static final int MAX_COORDINATOR_CRASHES = 2;
  /** Coordinator freezes per history: two cover a freeze of the leader that took over from a frozen one. */
  static final int MAX_COORDINATOR_FREEZES = 2;
  /**
   * The longest a coordinator stays frozen beyond half a second: 15 s spans pauses shorter than the 3 s lease
   * (it leads on after) and pauses long past it (a standby took over; the thawed leader must write nothing).
   */
  static final long MAX_COORDINATOR_FREEZE_MILLIS = 15_000;
  /**
   * One seed in this many submits more runs while the first runs: often enough that fair share and many
   * runs meet every kind of fault within the CI budget, rarely enough that the other histories keep their
   * pace (extra runs mean more cases to simulate).
   */
  static final int EXTRA_RUNS_ONE_IN = 4;
  /** The fleet's worker token: the coordinator requires it, so every Hello of the history goes through the check. */
  static final Secret FLEET_TOKEN = Secret.of("simulated-fleet-token", "worker token (simulation)");

  /**
   * One case of the simulated dataset.
   *
   * @param baseMillis how long it runs on a normal worker
   * @param verdict what its evaluator says
   * @param poison whether it kills the worker that runs it
   */
  record SimCase(int position, String id, long baseMillis, Verdict verdict, boolean poison) {}

  private final long seed;
  private final PlantedFault planted;
  private final SplittableRandom random;
  private final VirtualClock clock = new VirtualClock();
  private final EventQueue events = new EventQueue();
  private final Trace trace;
  private final WorkerLog log = new WorkerLog();
  private final Map<FaultKind, Integer> faults = new EnumMap<>(FaultKind.class);
  private final WorkerServer.Settings serverSettings;
  private final Map<String, SimCase> cases = new LinkedHashMap<>();
  private final List<SimWorker> workers = new ArrayList<>();
  private final List<String> contractViolations = new ArrayList<>();
  /** Breaches of the worker port's security: an impostor that was welcomed. */
  private final List<String> securityViolations = new ArrayList<>();
  /** Processes with a wrong token or none, which must never join. */
  private final List<SimWorker> impostors = new ArrayList<>();
  private InMemoryStore durable;
  /**
   * The coordinator process on each of the fleet's coordinator addresses (null while none runs there): one
   * address in half the seeds, two in the others (a leader and a standby on one store).
   */
  private SimCoordinator[] onAddress;
  /** Every coordinator process of the history, in start order. */
  private final List<SimCoordinator> coordinators = new ArrayList<>();
  /** The leader lease's timing: the product's defaults. */
  private final LeaderLease.Settings leaseSettings = dev.tally.coordinator.Coordinator.builder().leaderLease();
  private EpochLedger ledger;
  /** The runs created so far, in creation order. */
  private final List<Long> runIds = new ArrayList<>();
  private final Map<Long, Integer> casesByRun = new LinkedHashMap<>();
  /** Runs this history will create in all (the later ones are created while the first runs). */
  private int plannedRuns = 1;
  private final Map<Long, RunCounters> reportedCounters = new LinkedHashMap<>();
  private FairShareWatch fairShare;
  /**
   * Whether this history's coordinators start backup attempts of stragglers: in three seeds of four (with the
   * product's policy), so that the fencing rule of live attempts is proved under every fault, and the
   * fourth keeps the history of one attempt at a time.
   */
  private SpeculationPolicy speculation;
  private boolean stopped;
  private boolean finished;
  private String endReason = "";
  private List<RunCounters> lastCounters = List.of();
  private long lastProgressMillis;
  private long connectionCount;
  private int workerCount;
  private int replacements;
  private int coordinatorCrashes;
  private int coordinatorFreezes;
  /** How many of the next commits fail (fault store-failure). */
  private int failingCommits;
  /** Until when (virtual ms) no coordinator reaches the store (fault store-cut of every coordinator); 0 if none. */
  private long storeDownUntil;
  private int storeCuts;
  /** Store cuts per history: two cover a cut of the leader that took over after a cut. */
  static final int MAX_STORE_CUTS = 2;
  /**
   * The longest a store cut lasts beyond a second: 45 s spans cuts within the lease, within the lease and
   * the leader's patience (it holds on, in doubt), and past both (it steps down).
   */
  static final long MAX_STORE_CUT_MILLIS = 45_000;
  /**
   * How long a commit waits for a store it cannot reach before it fails: the product's ({@code JdbcStore}'s
   * reconnect patience, which the builder's leader patience is by definition).
   */
  static final long COMMIT_PATIENCE_MILLIS = dev.tally.coordinator.CoordinatorBuilder.DEFAULT_LEADER_PATIENCE.toMillis();

  /**
   * Prepares the history of {@code seed}.
   *
   * @param planted a fault to plant, or null
   * @param keepTrace whether to keep the trace's text (its hash is always computed)
   */
  public Simulation(long seed, PlantedFault planted, boolean keepTrace) {
    this.seed = seed;
    this.planted = planted;
    this.random = new SplittableRandom(seed);
    this.trace = new Trace(keepTrace);
    this.serverSettings = WorkerServer.Settings.builder().ticker(clock).workerToken(FLEET_TOKEN).build();
  }

  /** Plays the history to its end and returns it. Call once. */
  public History run() {
    setUp();
    while (!stopped) {
      EventQueue.Event e = events.poll();
      if (e == null) {
        end("nothing left to happen");
        break;
      }
      if (e.atMillis() > BUDGET_MILLIS) {
        clock.advanceTo(BUDGET_MILLIS);
        end("virtual-time budget of " + BUDGET_MILLIS + " ms ran out before the run finished");
        break;
      }
      clock.advanceTo(e.atMillis());
      e.action().run();
    }
    boolean healthyLeft = workers.stream().anyMatch(w -> w.alive && w.healthy);
    for (SimCoordinator k : coordinators) {
      collectContractViolations(k);
    }
    StringBuilder counters = new StringBuilder();
    for (long id : runIds) {
      RunView r = durable.run(id).orElseThrow();
      counters.append(counters.length() == 0 ? "" : "; ").append(runIds.size() == 1 ? "" : "run " + id + " ")
          .append(r.state() == RunState.CANCELLED ? "cancelled, " : "").append(r.counters());
    }
    trace("history ends: " + endReason + "; counters " + counters);
    return new History(seed, planted, List.copyOf(runIds), Collections.unmodifiableMap(new LinkedHashMap<>(casesByRun)),
        durable.reopen(), log, finished, endReason, now(), healthyLeft,
        Collections.unmodifiableMap(new LinkedHashMap<>(reportedCounters)), List.copyOf(contractViolations),
        fairShare.violations(), List.copyOf(securityViolations), ledger.entries(),
        Collections.unmodifiableMap(new EnumMap<>(faults)), events.scheduled(), trace.hash(), trace.text());
  }

  // ---- set-up -----------------------------------------------------------------------------------

  private void setUp() {
    durable = InMemoryStore.create(clock, planted == null ? null : planted.storeBug());
    ledger = new EpochLedger(this::now);
    fairShare = new FairShareWatch(durable);
    int n = 20 + random.nextInt(101);
    int poison = random.nextInt(4) == 0 ? 1 + random.nextInt(2) : 0;
    List<Integer> poisoned = new ArrayList<>();
    for (int i = 0; i < poison; i++) {
      poisoned.add(random.nextInt(n));
    }
    List<CaseRecord> records = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      // Log-uniform from 20 ms to 2.5 s, and now and then a long case of 5 to 15 s.
      long base = random.nextInt(25) == 0 ? 5_000 + random.nextLong(10_000)
          : Math.round(Math.exp(Math.log(20) + random.nextDouble() * (Math.log(2_500) - Math.log(20))));
      double v = random.nextDouble();
      Verdict verdict = v < 0.7 ? Verdict.PASS : v < 0.9 ? Verdict.FAIL : Verdict.ERROR;
      SimCase c = new SimCase(i, "case-" + i, base, verdict, poisoned.contains(i));
      cases.put(c.id(), c);
      records.add(new CaseRecord(i, c.id(), "{\"id\":\"" + c.id() + "\"}"));
      if (c.poison()) {
        count(FaultKind.POISON_CASE);
      }
    }
    RunSpec spec = new RunSpec("simulated-" + seed + ".jsonl", new EvaluatorSpec("sim", Map.of(), CASE_TIMEOUT),
        AttemptLimits.DEFAULT_MAX_ATTEMPTS);
    long runId = durable.createRun(spec, records);
    runIds.add(runId);
    casesByRun.put(runId, n);
    speculation = SpeculationPolicy.defaults().withMode(random.nextInt(4) == 0 ? SpeculationPolicy.Mode.OFF
        : SpeculationPolicy.Mode.ON);
    trace("seed " + seed + (planted == null ? "" : ", planted " + planted.cliName()) + ": run " + runId + " of " + n
        + " cases" + (poisoned.isEmpty() ? "" : ", poison at " + poisoned) + ", speculation "
        + speculation.mode().name().toLowerCase(java.util.Locale.ROOT));
    onAddress = new SimCoordinator[random.nextBoolean() ? 2 : 1];
    trace("the fleet knows " + onAddress.length + " coordinator address" + (onAddress.length == 1 ? "" : "es")
        + "; leader lease " + leaseSettings.lease().toMillis() + " ms, renewed every " + leaseSettings.renewEvery().toMillis()
        + " ms, standbys look every " + leaseSettings.retryEvery().toMillis() + " ms");
    for (int a = 0; a < onAddress.length; a++) {
      startCoordinator(a);
    }

    spawnWorker(true);
    int others = 2 + random.nextInt(4);
    for (int i = 0; i < others; i++) {
      spawnWorker(false);
    }

    // Faults land while the run is under way: within the time a fault-free fleet would need for it.
    long work = cases.values().stream().mapToLong(SimCase::baseMillis).sum();
    int slots = workers.stream().mapToInt(w -> w.slots).sum();
    long horizon = 2_000 + work / Math.max(1, slots);
    int timed = random.nextInt(8);
    if (random.nextInt(EXTRA_RUNS_ONE_IN) == 0) {
      int extra = 1 + random.nextInt(2);
      plannedRuns += extra;
      for (int k = 0; k < extra; k++) {
        int size = 5 + random.nextInt(26);
        long at = 100 + random.nextLong(Math.max(1, horizon / 2));
        int index = k + 2;
        events.at(at, () -> createLaterRun(index, size));
      }
    }
    FaultKind[] kinds = {FaultKind.WORKER_CRASH, FaultKind.WORKER_CRASH, FaultKind.WORKER_CRASH,
        FaultKind.WORKER_FREEZE, FaultKind.WORKER_FREEZE, FaultKind.WORKER_FREEZE,
        FaultKind.CONNECTION_CUT, FaultKind.CONNECTION_CUT, FaultKind.CONNECTION_CUT, FaultKind.CONNECTION_CUT,
        FaultKind.HEARTBEAT_DELAY, FaultKind.HEARTBEAT_DELAY, FaultKind.LATE_RESULT, FaultKind.LATE_RESULT,
        FaultKind.COORDINATOR_CRASH, FaultKind.COORDINATOR_CRASH, FaultKind.COORDINATOR_FREEZE, FaultKind.COORDINATOR_FREEZE,
        FaultKind.STORE_FAILURE, FaultKind.STORE_FAILURE, FaultKind.STORE_CUT,
        FaultKind.WORKER_DRAIN, FaultKind.WORKER_DRAIN, FaultKind.RUN_CANCEL, FaultKind.IMPOSTOR};
    for (int i = 0; i < timed; i++) {
      long at = random.nextLong(horizon);
      FaultKind kind = kinds[random.nextInt(kinds.length)];
      events.at(at, () -> inject(kind));
    }
  }

  /**
   * A run submitted while the first one runs: created in the store now and, if a coordinator is up,
   * activated in it (one that starts later activates every run there is).
   */
  private void createLaterRun(int index, int size) {
    if (stopped) {
      return;
    }
    List<CaseRecord> records = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      long base = Math.round(Math.exp(Math.log(20) + random.nextDouble() * (Math.log(2_500) - Math.log(20))));
      double v = random.nextDouble();
      Verdict verdict = v < 0.7 ? Verdict.PASS : v < 0.9 ? Verdict.FAIL : Verdict.ERROR;
      SimCase c = new SimCase(i, "r" + index + "-case-" + i, base, verdict, false);
      cases.put(c.id(), c);
      records.add(new CaseRecord(i, c.id(), "{\"id\":\"" + c.id() + "\"}"));
    }
    RunSpec spec = new RunSpec("simulated-" + seed + "-" + index + ".jsonl",
        new EvaluatorSpec("sim", Map.of(), CASE_TIMEOUT), AttemptLimits.DEFAULT_MAX_ATTEMPTS);
    long runId = durable.createRun(spec, records);
    runIds.add(runId);
    casesByRun.put(runId, size);
    trace("run " + runId + " of " + size + " cases is submitted" + (leader() != null ? "" : " (no coordinator leads)"));
    // Every leader activates it (a frozen one when it thaws); one that takes the lead later activates every run.
    for (SimCoordinator k : coordinators) {
      if (k.alive && k.scheduler != null) {
        k.local(() -> {
          if (k.scheduler != null) {
            k.scheduler.activate(runId);
          }
        });
      }
    }
  }

  /** A user cancels a run that has not ended: through the scheduler if one is up, else in the store. */
  private void cancelRun() {
    List<Long> open = runIds.stream().filter(id -> !durable.run(id).orElseThrow().ended()).toList();
    if (open.isEmpty()) {
      trace("fault run-cancel skipped: no run is running");
      return;
    }
    long runId = open.get(random.nextInt(open.size()));
    count(FaultKind.RUN_CANCEL);
    SimCoordinator leader = leader();
    if (leader != null) {
      trace("fault run-cancel: run " + runId + " is cancelled through coordinator " + leader);
      leader.scheduler.cancel(runId).thenAccept(r -> trace("run " + runId + " cancel: " + r.status() + ", "
          + r.pendingCancelled() + " pending and " + r.leases().size() + " leased jobs cancelled"));
    } else {
      CancelResult r = durable.cancelRun(runId, clock.millis());
      trace("fault run-cancel: run " + runId + " is cancelled in the store (no coordinator leads, or it is frozen): " + r.status());
    }
  }

  /**
   * Starts a process that is not one of the fleet's: the real session core, with a wrong worker token or
   * none. The coordinator must refuse its Hello; if it is ever welcomed, that is a security violation.
   */
  private void spawnImpostor() {
    String name = "impostor" + (impostors.size() + 1);
    Secret token = random.nextBoolean() ? null : Secret.of("not-the-fleet-token-" + random.nextInt(1_000), "impostor's token");
    SimWorker w = new SimWorker(this, name, 1, false, 1.0, false, 0, 1, 5, token, true);
    impostors.add(w);
    trace("fault impostor: " + name + " connects with " + (token == null ? "no worker token" : "a wrong worker token"));
    events.at(now() + random.nextLong(50), w::start);
  }

  /** An impostor was welcomed: the worker port let in a process without the fleet's token. */
  void impostorWelcomed(SimWorker w) {
    trace(w.name + " was welcomed although its worker token is wrong");
    securityViolations.add(w.name + " was welcomed by coordinator " + (w.conn == null ? "?" : w.conn.coordinator)
        + " with a wrong worker token (or none)");
  }

  private void spawnWorker(boolean healthy) {
    String name = "w" + (++workerCount);
    SimWorker w;
    if (healthy) {
      w = new SimWorker(this, name, 2, true, 1.0, false, 0, 1, 5, FLEET_TOKEN, false);
    } else {
      int slots = 1 + random.nextInt(3);
      double slow = random.nextInt(5) == 0 ? 3 + 5 * random.nextDouble() : 1.0;
      boolean failing = random.nextInt(8) == 0;
      long jitter = random.nextInt(7) == 0 ? 300 + random.nextLong(1_200) : 0;
      boolean slowNet = random.nextInt(7) == 0;
      w = new SimWorker(this, name, slots, false, slow, failing, jitter, slowNet ? 10 : 1, slowNet ? 80 : 5, FLEET_TOKEN,
          false);
      if (slow != 1.0) {
        count(FaultKind.SLOW_WORKER);
      }
      if (failing) {
        count(FaultKind.FAILING_WORKER);
      }
      if (jitter > 0) {
        count(FaultKind.HEARTBEAT_DELAY);
      }
    }
    workers.add(w);
    trace(name + " starts: " + w.traits());
    events.at(now() + random.nextLong(50), w::start);
  }

  // ---- faults -----------------------------------------------------------------------------------

  private void inject(FaultKind kind) {
    if (stopped) {
      return;
    }
    if (kind == FaultKind.COORDINATOR_CRASH) {
      SimCoordinator leader = leader();
      if (leader == null || coordinatorCrashes >= MAX_COORDINATOR_CRASHES) {
        trace("fault " + kind.siteName() + " skipped: no coordinator leads, or one was killed enough");
        return;
      }
      coordinatorCrashes++;
      count(kind);
      crashCoordinator(leader, 200 + random.nextLong(40_000));
      return;
    }
    if (kind == FaultKind.COORDINATOR_FREEZE) {
      SimCoordinator leader = leader();
      if (leader == null || coordinatorFreezes >= MAX_COORDINATOR_FREEZES) {
        trace("fault " + kind.siteName() + " skipped: no coordinator leads, or one was frozen enough");
        return;
      }
      coordinatorFreezes++;
      count(kind);
      freezeCoordinator(leader, 500 + random.nextLong(MAX_COORDINATOR_FREEZE_MILLIS));
      return;
    }
    if (kind == FaultKind.RUN_CANCEL) {
      cancelRun();
      return;
    }
    if (kind == FaultKind.IMPOSTOR) {
      count(kind);
      spawnImpostor();
      return;
    }
    if (kind == FaultKind.STORE_CUT) {
      SimCoordinator leader = leader();
      if (leader == null || storeCuts >= MAX_STORE_CUTS) {
        trace("fault " + kind.siteName() + " skipped: no coordinator leads, or the store was cut enough");
        return;
      }
      storeCuts++;
      count(kind);
      long d = 1_000 + random.nextLong(MAX_STORE_CUT_MILLIS);
      if (random.nextBoolean()) {
        storeDownUntil = Math.max(storeDownUntil, now() + d);
        trace("fault store-cut: the store is down for every coordinator for " + d + " ms (a database restarting)");
      } else {
        leader.storeCutUntil = Math.max(leader.storeCutUntil, now() + d);
        trace("fault store-cut: coordinator " + leader + " (epoch " + leader.epoch + ") is cut off from the store for " + d
            + " ms; the others still reach it");
      }
      return;
    }
    if (kind == FaultKind.STORE_FAILURE) {
      // Fewer than the scheduler's limit of failures in a row: a hiccup it must ride out, not an outage.
      int n = 1 + random.nextInt(Scheduler.Settings.defaults().maxConsecutiveStoreFailures() - 1);
      count(kind);
      failingCommits = Math.max(failingCommits, n); // never as many in a row as the scheduler tolerates
      trace("fault store-failure: the next " + n + " commits fail");
      return;
    }
    List<SimWorker> targets = workers.stream().filter(w -> w.alive && !w.healthy && !w.frozen && !w.draining).toList();
    if (targets.isEmpty()) {
      trace("fault " + kind.siteName() + " skipped: no worker to inflict it on");
      return;
    }
    SimWorker t = targets.get(random.nextInt(targets.size()));
    switch (kind) {
      case WORKER_CRASH -> {
        count(kind);
        crashWorker(t, "fault worker-crash");
      }
      case WORKER_FREEZE -> {
        long d = 500 + random.nextLong(20_000);
        count(kind);
        trace("fault worker-freeze: " + t.name + " stops for " + d + " ms");
        t.freeze();
        events.at(now() + d, () -> {
          if (t.alive && t.frozen) {
            trace(t.name + " thaws");
            t.thaw();
          }
        });
      }
      case WORKER_DRAIN -> {
        Duration timeout = Duration.ofMillis(random.nextLong(30_000));
        count(kind);
        trace("fault worker-drain: " + t.name + " is told to stop (SIGTERM), drain timeout " + timeout.toMillis() + " ms");
        t.drain(timeout);
      }
      case CONNECTION_CUT -> {
        SimConnection c = t.conn;
        if (c == null || c.cut) {
          trace("fault connection-cut skipped: " + t.name + " has no session");
          return;
        }
        count(kind);
        if (random.nextBoolean()) {
          cut(c, "fault connection-cut");
        } else {
          c.cutAtNextAck = true;
          trace("fault connection-cut: " + c + " will be cut right after its next commit");
        }
      }
      case HEARTBEAT_DELAY -> {
        SimConnection c = t.conn;
        if (c == null || c.cut) {
          trace("fault heartbeat-delay skipped: " + t.name + " has no session");
          return;
        }
        count(kind);
        long d = 1_000 + random.nextLong(3_500);
        c.stallUntilMillis = Math.max(c.stallUntilMillis, now() + d);
        trace("fault heartbeat-delay: frames from " + c + " stall for " + d + " ms, then burst");
      }
      case LATE_RESULT -> {
        count(kind);
        long hold = 10_000 + random.nextLong(60_000);
        t.lateResultHolds.add(hold);
        trace("fault late-result: " + t.name + " will hold its next result back " + hold + " ms");
      }
      default -> throw new IllegalStateException("not a timed fault: " + kind);
    }
  }

  /** A worker process dies; the supervisor replaces it after a delay. */
  void crashWorker(SimWorker w, String why) {
    if (!w.alive || stopped) {
      return;
    }
    trace(w.name + " dies: " + why);
    SimConnection c = w.conn;
    w.die();
    if (c != null) {
      // The kernel closes the socket after what was already sent: the coordinator reads a close.
      c.closeAtWorker(true);
    }
    replace(w);
  }

  /** A worker's session core ended (a graceful drain finished or was cut short): the process exits. */
  void workerEnded(SimWorker w, Termination termination) {
    trace(w.name + " exits: " + termination.kind() + " (" + termination.detail() + ")");
    if (w.impostor) {
      events.at(now(), () -> {
        SimConnection c = w.conn;
        w.alive = false;
        if (c != null) {
          c.closeAtWorker(true);
        }
      }); // nobody restarts an impostor
      return;
    }
    // The process exits once its last frames and its close are out; then the supervisor replaces it.
    events.at(now(), () -> {
      SimConnection c = w.conn;
      w.alive = false;
      if (c != null) {
        c.closeAtWorker(true);
      }
      replace(w);
    });
  }

  private void replace(SimWorker w) {
    if (!w.healthy && replacements >= MAX_REPLACEMENTS) {
      trace("supervisor: no replacement for " + w.name + " (" + MAX_REPLACEMENTS + " already)");
      return;
    }
    if (!w.healthy) {
      replacements++;
    }
    long delay = 1_000 + random.nextLong(7_000);
    events.at(now() + delay, () -> {
      if (!stopped) {
        spawnWorker(w.healthy);
      }
    });
  }

  /** The link is cut: everything in flight is lost; each end finds out on its own, or not at all. */
  void cut(SimConnection c, String why) {
    if (c.cut) {
      return;
    }
    c.cutLink();
    trace("link " + c + " cut: " + why);
    events.at(now() + 1 + random.nextLong(2_000), () -> c.worker.local(() -> c.worker.disconnected(c, "connection reset")));
    if (random.nextBoolean()) {
      events.at(now() + 1 + random.nextLong(2_000), () -> c.atCoordinator(() -> {
        if (c.openAtCoordinator()) {
          c.core.onError(ConnectionCore.ErrorKind.IO_ERROR, new IOException("connection reset by peer"));
        }
      }));
    }
    // Otherwise the coordinator hears nothing more: its detector reaps the session, or the worker's next
    // Hello supersedes it.
  }

  /** The coordinator that leads and runs (not frozen), or null: the latest epoch's if ever two think they lead. */
  private SimCoordinator leader() {
    SimCoordinator best = null;
    for (SimCoordinator k : onAddress) {
      if (k != null && k.alive && !k.frozen && k.scheduler != null && (best == null || k.epoch > best.epoch)) {
        best = k;
      }
    }
    return best;
  }

  /** kill -9 of {@code k}: its sockets close or reset; a supervisor starts it again on its address. */
  private void crashCoordinator(SimCoordinator k, long downtimeMillis) {
    boolean reset = random.nextBoolean();
    trace("fault coordinator-crash: kill -9 of coordinator " + k + " (epoch " + k.epoch + "), down for " + downtimeMillis
        + " ms" + (reset ? "; unsent frames are discarded" : ""));
    gone(k, reset, "coordinator went away");
    restartLater(k.address, downtimeMillis);
  }

  /** SIGSTOP of {@code k} for {@code millis}, then SIGCONT. */
  private void freezeCoordinator(SimCoordinator k, long millis) {
    trace("fault coordinator-freeze: coordinator " + k + " (epoch " + k.epoch + ") stops for " + millis + " ms");
    k.frozen = true;
    events.at(now() + millis, () -> {
      if (!stopped && k.alive && k.frozen) {
        boolean leaseFirst = random.nextBoolean();
        trace("coordinator " + k + " thaws; " + (leaseFirst ? "its leadership thread runs first"
            : "its event loops and scheduler run first, its leadership thread after"));
        k.thaw(leaseFirst);
      }
    });
  }

  /** The process {@code k} ends: its worker connections end toward the workers, and nothing of it runs again. */
  private void gone(SimCoordinator k, boolean reset, String reason) {
    collectContractViolations(k);
    k.gone();
    k.scheduler = null;
    for (SimConnection c : List.copyOf(k.connections)) {
      c.coordinatorDied(); // no onInactive, no workerLost: the scheduler that would hear it is gone
      if (reset) {
        c.resetTowardWorker = true;
      }
      c.endTowardWorker(reason);
    }
    k.connections.clear();
  }

  private void collectContractViolations(SimCoordinator k) {
    if (k.eventsChecker != null) {
      contractViolations.addAll(k.eventsChecker.violations());
      k.eventsChecker = null;
    }
  }

  /** A supervisor starts a coordinator on {@code address} after {@code delayMillis}. */
  private void restartLater(int address, long delayMillis) {
    events.at(now() + delayMillis, () -> {
      if (!stopped) {
        startCoordinator(address);
      }
    });
  }

  /**
   * A coordinator process starts on {@code address}: its own instance of the durable store (its own write
   * epoch; the store's fence checks it), and its leader lease, looked at once at start (as {@code
   * CoordinatorBuilder} does) and then as the lease's driver would: every renewal interval while leading,
   * every standby retry while not.
   */
  private void startCoordinator(int address) {
    String name = "c" + (coordinators.size() + 1);
    Store own = durable.reopen();
    if (planted == PlantedFault.SKIP_EPOCH_CHECK) {
      own = new UnfencedStore(own);
    }
    SimCoordinator[] self = new SimCoordinator[1];
    own = new CutOffStore(own, () -> storeCut(self[0]));
    Store store = new FlakyStore(fairShare.watching(ledger.recording(own, name)), () -> {
      if (failingCommits == 0) {
        return false;
      }
      failingCommits--;
      trace("a store commit fails (fault store-failure)");
      return true;
    }, Scheduler.Settings.defaults().maxConsecutiveStoreFailures() - 1);
    if (planted == PlantedFault.DROP_ON_REAP) {
      store = new ReapDroppingStore(store);
    }
    LeaderLease lease = new LeaderLease(new UUID(random.nextLong(), random.nextLong()).toString(), leaseSettings);
    SimCoordinator k = new SimCoordinator(name, address, store, new LeaderCheck(store, lease));
    self[0] = k;
    onAddress[address] = k;
    coordinators.add(k);
    trace("coordinator " + k + " starts on address " + address);
    leaderCheck(k);
  }

  /** The leadership thread's look at the leader row ({@link LeaderCheck}, as {@code Leadership} runs it). */
  private void leaderCheck(SimCoordinator k) {
    if (stopped || !k.alive) {
      return;
    }
    LeaderCheck.Outcome o;
    try {
      o = k.leadership.check(new LeaderAddress("coordinator-" + k.address + ":7070", null), nanos());
    } catch (StoreException e) {
      o = k.leadership.failed(nanos(), e.getMessage()); // as Leadership: the one rule for a look that failed
    }
    if (o instanceof LeaderCheck.SteppedDown s) {
      stepDown(k, s.why());
      return;
    }
    if (o instanceof LeaderCheck.Unanswered u && u.doubtBegins()) {
      trace("coordinator " + k + " could not renew epoch " + k.epoch + " for a whole lease: in doubt, it holds on");
    }
    if (o instanceof LeaderCheck.Leads l && l.lateSinceNanos().isPresent()) {
      trace("coordinator " + k + " renewed epoch " + l.epoch() + " " + (nanos() - l.lateSinceNanos().getAsLong()) / 1_000_000
          + " ms after its last renewal: no other coordinator had taken the lead");
    }
    if (o instanceof LeaderCheck.Leads l && l.tookOver()) {
      lead(k, l.epoch(), l.previous());
    }
    long next = k.leadership.lease().nextCheckIn().toMillis();
    events.at(now() + next, () -> k.localLeaseCheck(() -> leaderCheck(k)));
  }

  /**
   * {@code k} took the lead under {@code epoch}: as {@code Coordinator.lead}, its worker port opens (its
   * Welcome carries the epoch) and its scheduler starts, with every run of the store.
   */
  private void lead(SimCoordinator k, long epoch, LeaderRow previous) {
    k.epoch = epoch;
    WorkerServer.Settings settings = WorkerServer.Settings.builder().ticker(clock).workerToken(FLEET_TOKEN)
        .coordinatorEpoch(epoch).build();
    k.scheduler = Scheduler.builder(k.store, clock, clock, random.split()).wakeup(() -> requestStep(k, now() + STEP_LATENCY_MILLIS))
        .speculation(speculation).build();
    k.eventsChecker = new WorkerEventsChecker(k.scheduler);
    k.context = new ConnectionCore.Context(settings, k.store.storeId(), k.eventsChecker, new LiveSessions());
    trace("coordinator " + k + " leads under epoch " + epoch + (previous.holder() == null ? ""
        : " (the lease of epoch " + previous.epoch() + " had lapsed)") + "; its worker port opens");
    // The worker port's local health, ticked as WorkerServer ticks it (a fixed delay), so that correlated
    // silence (a heartbeat delay or a freeze of several workers at once) stretches the detectors here too.
    long healthMillis = Math.max(1, serverSettings.localHealth().tickPeriod().toMillis());
    k.context.health().tick(nanos());
    events.at(now() + healthMillis, () -> k.local(() -> healthTick(k, healthMillis)));
    for (long runId : runIds) {
      k.scheduler.activate(runId);
    }
  }

  /**
   * {@code k} no longer leads (deposed, or its commit refused for a stale epoch): as {@code
   * Coordinator.stepDown}, it closes every worker connection and stops; the process exits, and a supervisor
   * starts it again, as a standby until it can lead.
   */
  private void stepDown(SimCoordinator k, String why) {
    trace("coordinator " + k + " steps down from epoch " + k.epoch + ": " + why + "; it closes its worker connections and exits");
    gone(k, false, "connection closed by the coordinator");
    restartLater(k.address, 1_000 + random.nextLong(7_000));
  }

  // ---- the scheduler's loop ---------------------------------------------------------------------

  private void requestStep(SimCoordinator k, long at) {
    if (!k.alive || k.scheduler == null || stopped) {
      return;
    }
    at = Math.max(at, k.commitWaitsUntil); // a commit waiting for the store holds the scheduler's thread
    if (k.stepAt >= 0 && k.stepAt <= at) {
      return;
    }
    k.stepAt = at;
    long token = ++k.stepToken;
    events.at(at, () -> k.local(() -> {
      if (token == k.stepToken) {
        k.stepAt = -1;
        step(k);
      }
    }));
  }

  private void step(SimCoordinator k) {
    if (!k.alive || k.scheduler == null || stopped) {
      return;
    }
    Scheduler scheduler = k.scheduler;
    if (storeCut(k) && k.commitWaitsUntil == 0) {
      // As JdbcStore: the commit waits for the store to answer again, up to its reconnect patience; the step
      // then runs, and its commit fails if the store is still cut.
      long storeBack = Math.max(k.storeCutUntil, storeDownUntil);
      k.commitWaitsUntil = Math.min(storeBack, now() + COMMIT_PATIENCE_MILLIS);
      requestStep(k, k.commitWaitsUntil);
      return;
    }
    k.commitWaitsUntil = 0;
    long due;
    try {
      due = scheduler.step();
    } catch (StaleEpochException e) {
      // As Coordinator: the scheduler loop fails on a refused commit, and the coordinator steps down.
      trace("coordinator " + k + ": the store refused a commit under epoch " + k.epoch + " (" + e.getMessage() + ")");
      stepDown(k, k.leadership.stepDown("the store refused a commit: " + e.getMessage()).why());
      return;
    } catch (RuntimeException e) {
      end("the scheduler of coordinator " + k + " stopped: " + e);
      return;
    }
    boolean allEnded = runIds.size() == plannedRuns;
    List<RunCounters> counters = new ArrayList<>(runIds.size());
    for (long runId : runIds) {
      CompletableFuture<RunCounters> done = scheduler.completion(runId);
      if (done.isCompletedExceptionally()) {
        end("the completion of run " + runId + " failed");
        return;
      }
      if (done.isDone()) {
        reportedCounters.putIfAbsent(runId, done.join());
      } else if (!durable.run(runId).orElseThrow().ended()) {
        allEnded = false; // a run cancelled in the store while no coordinator was up has no completion to wait for
      }
      counters.add(scheduler.counters(runId));
    }
    if (allEnded) {
      finished = true;
      end(runIds.size() == 1 ? "run finished" : "every run ended");
      return;
    }
    if (!counters.equals(lastCounters)) {
      lastCounters = counters;
      lastProgressMillis = now();
    } else if (now() - lastProgressMillis > STALL_MILLIS) {
      end("no job was recorded or released for " + STALL_MILLIS / 1000 + " s: the run is stuck");
      return;
    }
    long dueElapsed = due == Long.MAX_VALUE ? Long.MAX_VALUE : due - VirtualClock.EPOCH_MILLIS;
    long next = scheduler.hasQueuedEvents() ? now() + STEP_LATENCY_MILLIS : Math.min(dueElapsed, now() + IDLE_STEP_MILLIS);
    requestStep(k, Math.max(next, now() + 1));
  }

  /** Whether {@code k} cannot reach the store now (fault store-cut); false before it exists. */
  private boolean storeCut(SimCoordinator k) {
    return k != null && (now() < storeDownUntil || now() < k.storeCutUntil);
  }

  private void end(String reason) {
    stopped = true;
    endReason = reason;
  }

  // ---- connections and the network --------------------------------------------------------------

  /**
   * A worker dials the coordinator: the connection is accepted after a latency if a coordinator is up
   * (its core starts, and the worker learns it is connected a latency later), else refused.
   */
  SimConnection connect(SimWorker w) {
    SimConnection c = new SimConnection(this, w, ++connectionCount);
    int address = w.connects++ % onAddress.length;
    trace(w.name + " connects as " + c + " to coordinator address " + address);
    long at = now() + latency(w);
    c.lastToCoordinatorMillis = at;
    events.at(at, () -> {
      if (stopped) {
        return;
      }
      SimCoordinator k = onAddress[address];
      if (k == null || !k.portOpen()) {
        // Nothing listens there: no process, or one that stands by (its worker port opens when it leads).
        events.at(now() + latency(w), () -> w.local(() -> w.connectFailed(c, "connection refused")));
        return;
      }
      c.coordinator = k;
      // The kernel completes the handshake even for a frozen process; the process accepts when it runs.
      k.local(() -> accept(k, c));
      long back = now() + latency(w);
      c.lastToWorkerMillis = back;
      events.at(back, () -> w.local(() -> w.connected(c)));
    });
    return c;
  }

  private void accept(SimCoordinator k, SimConnection c) {
    if (k.context == null) {
      return;
    }
    UUID sessionId = new UUID(random.nextLong(), random.nextLong());
    PlantedConnectionFault fault = planted == null ? PlantedConnectionFault.NONE : planted.connectionFault();
    c.core = new ConnectionCore(k.context, c.port(), Runnable::run, c.toString(), sessionId.toString(), fault);
    c.core.onActive(nanos());
    k.connections.add(c);
    trace(c + " accepted by coordinator " + k);
    long sweepMillis = Math.max(1, serverSettings.reapCheckPeriod().toMillis());
    events.at(now() + sweepMillis, () -> c.atCoordinator(() -> sweep(c, sweepMillis)));
  }

  /** The connection's sweep, as its event loop's {@code ConnectionSweep} runs it at a fixed rate. */
  private void sweep(SimConnection c, long periodMillis) {
    if (stopped || !c.openAtCoordinator()) {
      return;
    }
    c.core.onSweep(nanos());
    events.at(now() + periodMillis, () -> c.atCoordinator(() -> sweep(c, periodMillis)));
  }

  /** The local health's timer, for one coordinator's lead. */
  private void healthTick(SimCoordinator k, long periodMillis) {
    if (stopped || !k.alive || k.context == null) {
      return;
    }
    LocalHealth.Observation o = k.context.health().tick(nanos());
    if (o.changed()) {
      trace("local health of coordinator " + k + ": " + o.reason() + "; multiplier x" + (o.scoreAfter() + 1));
    }
    events.at(now() + periodMillis, () -> k.local(() -> healthTick(k, periodMillis)));
  }

  /** The coordinator's driver finds the connection ended (closed by either side): the core hears it. */
  void endAtCoordinator(SimConnection c, boolean coordinatorClosing) {
    if (c.openAtCoordinator()) {
      c.reportInactive();
      c.coordinator.connections.remove(c);
    }
  }

  /** When a frame the worker sends now reaches the coordinator: after a latency, any stall, and earlier frames. */
  long toCoordinatorArrival(SimConnection c) {
    long at = Math.max(Math.max(now() + latency(c.worker), c.stallUntilMillis), c.lastToCoordinatorMillis);
    c.lastToCoordinatorMillis = at;
    return at;
  }

  long latency(SimWorker w) {
    long l = w.latencyMinMillis + random.nextLong(w.latencyMaxMillis - w.latencyMinMillis + 1);
    // Now and then a frame waits behind a retransmit.
    return random.nextInt(200) == 0 ? l + 200 + random.nextLong(300) : l;
  }

  // ---- for the workers and connections ----------------------------------------------------------

  long now() {
    return clock.elapsedMillis();
  }

  long nanos() {
    return clock.nanos();
  }

  EventQueue events() {
    return events;
  }

  SplittableRandom random() {
    return random;
  }

  boolean stopped() {
    return stopped;
  }

  SimCase caseOf(String caseId) {
    SimCase c = cases.get(caseId);
    if (c == null) {
      throw new IllegalStateException("assignment for unknown case " + caseId);
    }
    return c;
  }

  /** Writes what a worker did to its log and to the trace. */
  void workerDid(String worker, WorkerLog.Kind kind, long jobId, long token, String detail) {
    log.add(now(), worker, kind, jobId, token, detail);
    trace(kind == WorkerLog.Kind.CRASHED ? worker + " CRASHED"
        : worker + " " + kind + " job " + jobId + " token " + token + (detail.isEmpty() ? "" : " " + detail));
  }

  void trace(String event) {
    trace.line(now(), event);
  }

  private void count(FaultKind kind) {
    faults.merge(kind, 1, Integer::sum);
  }
}

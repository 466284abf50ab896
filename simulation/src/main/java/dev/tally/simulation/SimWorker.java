package dev.tally.simulation;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.security.Secret;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Result;
import dev.tally.worker.AssignedJob;
import dev.tally.worker.Backoff;
import dev.tally.worker.CaseEnd;
import dev.tally.worker.CaseRunner;
import dev.tally.worker.JobKey;
import dev.tally.worker.Outbox;
import dev.tally.worker.Reconnector;
import dev.tally.worker.SessionCore;
import dev.tally.worker.SessionPort;
import dev.tally.worker.Termination;
import dev.tally.worker.WorkerSettings;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * One simulated worker process: the real {@link SessionCore} (Hello, Welcome, assignments, outbox and
 * acks, abandons, heartbeats, its judgement of the coordinator, reconnecting with backoff, graceful drain),
 * with only its I/O swapped: its {@link SessionPort} is the simulated network, its {@link CaseRunner} a set
 * of simulated slots under virtual time, its timer an event at {@link SessionCore#nextTickNanos()}.
 *
 * <p>Faults live here as traits (slow, failing every case, jittery timers, a slow network) and as states:
 * crashed (everything it held is gone), frozen (every event for it waits, in order, until it thaws), late
 * results armed (the next finished case is held back), draining (SIGTERM: the core's graceful drain).
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class SimWorker {
  /** What the simulation's run evaluates with: nothing, since the simulated slots decide each case. */
  private static final Evaluator SIMULATED = ctx -> {
    throw new IllegalStateException("simulated cases are run by the simulation's slots, never evaluated");
  };

  final Simulation sim;
  final String id;
  final String name;
  final int slots;
  /** Exempt from injected faults, so that I4 has a worker to lean on (a poison case still kills it). */
  final boolean healthy;
  /** Case durations are multiplied by this (1 for a normal worker). */
  final double slowFactor;
  /** Fails every case with a retryable infrastructure failure in a few ms. */
  final boolean failsEveryCase;
  /** Each timer of this process fires up to this many ms late (0 for a punctual process). */
  final long timerJitterMillis;
  /** Not one of the fleet: it has a wrong worker token, or none, and must never be welcomed. */
  final boolean impostor;
  /** One-way network latency bounds for this worker's link, ms. */
  final long latencyMinMillis;
  final long latencyMaxMillis;

  boolean alive = true;
  boolean frozen;
  boolean draining;
  private final List<Runnable> frozenBacklog = new ArrayList<>();
  /** How many of the next finished results are held back, and for how long each. */
  final ArrayDeque<Long> lateResultHolds = new ArrayDeque<>();

  private final Outbox outbox = new Outbox();
  private final SimSlots runner = new SimSlots();
  final SessionCore core;
  /**
   * Connection attempts so far: each tries the next coordinator address, as {@code WorkerSession} does (of
   * several coordinators on one store only the leader has its worker port open).
   */
  int connects;
  /** The current connection (connecting or connected), or null between attempts. */
  SimConnection conn;
  /** When the pending timer event fires (virtual ms), or {@link Long#MAX_VALUE} if none is pending. */
  private long tickEventAtMillis = Long.MAX_VALUE;

  SimWorker(Simulation sim, String name, int slots, boolean healthy, double slowFactor, boolean failsEveryCase,
      long timerJitterMillis, long latencyMinMillis, long latencyMaxMillis, Secret token, boolean impostor) {
    this.impostor = impostor;
    this.sim = sim;
    this.name = name;
    this.slots = slots;
    this.healthy = healthy;
    this.slowFactor = slowFactor;
    this.failsEveryCase = failsEveryCase;
    this.timerJitterMillis = timerJitterMillis;
    this.latencyMinMillis = latencyMinMillis;
    this.latencyMaxMillis = latencyMaxMillis;
    UUID uuid = new UUID(sim.random().nextLong(), sim.random().nextLong());
    this.id = uuid.toString();
    WorkerSettings settings = WorkerSettings.builder("coordinator", 7070)
        .slots(slots).name(name).workerId(uuid).ticker(sim::nanos)
        .evaluatorFactory((kind, options) -> SIMULATED)
        .token(token)
        .build();
    Backoff backoff = new Backoff(settings.initialBackoff(), settings.maxBackoff(), sim.random().split());
    this.core = new SessionCore(settings, new Port(), runner, outbox, new Reconnector("coordinator:7070", backoff, null));
  }

  String traits() {
    StringBuilder b = new StringBuilder().append(slots).append(" slots");
    if (healthy) {
      b.append(", guaranteed healthy");
    }
    if (slowFactor != 1.0) {
      b.append(String.format(Locale.ROOT, ", slow x%.1f", slowFactor));
    }
    if (failsEveryCase) {
      b.append(", fails every case");
    }
    if (timerJitterMillis > 0) {
      b.append(", timers up to ").append(timerJitterMillis).append(" ms late");
    }
    b.append(", latency ").append(latencyMinMillis).append('-').append(latencyMaxMillis).append(" ms");
    return b.toString();
  }

  // ---- the process ------------------------------------------------------------------------------

  /**
   * Runs {@code action} as this process, then re-arms its timer: not at all if it died, after it thaws if
   * it is frozen.
   */
  void local(Runnable action) {
    if (!alive) {
      return;
    }
    if (frozen) {
      frozenBacklog.add(action);
      return;
    }
    action.run();
    if (alive) {
      armTimer();
    }
  }

  /** Runs {@code action} as this process {@code delayMillis} from now. */
  void later(long delayMillis, Runnable action) {
    sim.events().at(sim.now() + delayMillis, () -> local(action));
  }

  /** The process starts: the core connects at once. */
  void start() {
    local(() -> core.start(sim.nanos()));
  }

  void freeze() {
    frozen = true;
  }

  /** Resumes: everything that waited runs now, in the order it arrived. */
  void thaw() {
    if (!alive || !frozen) {
      return;
    }
    frozen = false;
    List<Runnable> waiting = new ArrayList<>(frozenBacklog);
    frozenBacklog.clear();
    for (Runnable r : waiting) {
      local(r);
    }
  }

  /** The process dies (kill -9): its cases, queue and outbox are gone with it. */
  void die() {
    alive = false;
    frozen = false;
    frozenBacklog.clear();
    runner.dieAll();
    sim.workerDid(name, WorkerLog.Kind.CRASHED, 0, 0, "");
  }

  /** SIGTERM: the core's graceful drain, for up to {@code timeout}. */
  void drain(Duration timeout) {
    local(() -> {
      draining = true;
      core.drain(sim.nanos(), timeout);
    });
  }

  /**
   * Schedules the core's timer at its next deadline (late by up to this process's jitter: a busy or
   * starved process), unless an earlier one is pending. A tick before the deadline is harmless.
   */
  private void armTimer() {
    long next = core.nextTickNanos();
    if (next == SessionCore.NO_TICK) {
      return;
    }
    long due = Math.max(sim.now(), (next + 999_999) / 1_000_000);
    long atMillis = timerJitterMillis > 0 ? due + sim.random().nextLong(timerJitterMillis + 1) : due;
    if (atMillis >= tickEventAtMillis) {
      return;
    }
    tickEventAtMillis = atMillis;
    sim.events().at(atMillis, () -> {
      if (tickEventAtMillis == atMillis) {
        tickEventAtMillis = Long.MAX_VALUE;
      }
      local(() -> core.tick(sim.nanos()));
    });
  }

  // ---- what the network delivers ----------------------------------------------------------------

  /** The connection {@code c} opened (the coordinator accepted it). */
  void connected(SimConnection c) {
    if (conn == c) {
      core.connected(sim.nanos());
    }
  }

  /** The connection {@code c} could not be made. */
  void connectFailed(SimConnection c, String reason) {
    if (conn == c) {
      conn = null;
      core.connectFailed(reason, sim.nanos());
    }
  }

  /** A frame from the coordinator arrived on {@code c}. */
  void received(SimConnection c, Envelope frame) {
    if (conn != c) {
      return;
    }
    switch (frame.getBodyCase()) {
      case ASSIGN -> sim.workerDid(name, WorkerLog.Kind.ASSIGNED, frame.getAssign().getJobId(),
          frame.getAssign().getToken(), "attempt " + frame.getAssign().getAttempt());
      case RESULT_ACK -> frame.getResultAck().getEntriesList().forEach(e ->
          sim.workerDid(name, WorkerLog.Kind.ACKED, e.getJobId(), e.getToken(), e.getStatus().name()));
      default -> { }
    }
    core.frameReceived(frame, sim.nanos());
    core.flush();
  }

  /** The connection {@code c} ended at this end (closed by the coordinator, reset, or cut). */
  void disconnected(SimConnection c, String reason) {
    if (conn != c) {
      return;
    }
    conn = null;
    sim.trace(name + " lost its session " + c + " (" + reason + "); " + outbox.size() + " results in the outbox, "
        + core.heldCount() + " jobs held");
    core.disconnected(reason, sim.nanos());
  }

  int outboxSize() {
    return outbox.size();
  }

  // ---- the core's port --------------------------------------------------------------------------

  /** The core's decisions, carried out on the simulated network. */
  private final class Port implements SessionPort {
    @Override
    public void send(Envelope frame) {
      if (conn == null) {
        return;
      }
      if (frame.getBodyCase() == Envelope.BodyCase.RESULT) {
        Result r = frame.getResult();
        boolean outcome = r.getEndingCase() == Result.EndingCase.OUTCOME;
        String what = outcome ? r.getOutcome().getVerdict().name().toLowerCase(Locale.ROOT)
            : r.getFailure().getKind().name().toLowerCase(Locale.ROOT);
        sim.workerDid(name, outcome ? WorkerLog.Kind.SENT_OUTCOME : WorkerLog.Kind.SENT_FAILURE, r.getJobId(),
            r.getToken(), what);
      }
      conn.fromWorker(frame);
    }

    @Override
    public void flush() {
      if (conn != null) {
        conn.flushFromWorker();
      }
    }

    @Override
    public void close(boolean afterWrites) {
      SimConnection c = conn;
      if (c == null) {
        return;
      }
      c.closeAtWorker(afterWrites);
      // The driver reports the end as an event of its own, as a channel's close completes later.
      later(0, () -> disconnected(c, "closed by this worker"));
    }

    @Override
    public void connectIn(long delayNanos) {
      later(delayNanos / 1_000_000, () -> {
        if (conn == null && alive) {
          conn = sim.connect(SimWorker.this);
        }
      });
    }

    @Override
    public void ended(Termination termination) {
      sim.workerEnded(SimWorker.this, termination);
    }

    @Override
    public void joined() {
      if (impostor) {
        sim.impostorWelcomed(SimWorker.this);
      }
    }
  }

  // ---- the slots --------------------------------------------------------------------------------

  /**
   * The worker's slots under virtual time: jobs start in order as slots free up, each after reserving
   * outbox room as a real slot does, and end after a duration drawn from the case and this worker's
   * traits (or kill the worker, for a poison case).
   */
  private final class SimSlots implements CaseRunner {
    private final ArrayDeque<AssignedJob> queue = new ArrayDeque<>();
    /** Running jobs, with the virtual time their slot started them. */
    private final Map<JobKey, Long> running = new LinkedHashMap<>();

    @Override
    public boolean start(AssignedJob job) {
      queue.add(job);
      startCases();
      return true;
    }

    @Override
    public boolean cancel(JobKey key, String reason) {
      for (Iterator<AssignedJob> it = queue.iterator(); it.hasNext(); ) {
        if (it.next().key().equals(key)) {
          it.remove();
          sim.workerDid(name, WorkerLog.Kind.ABANDONED, key.jobId(), key.token(), reason);
          return true;
        }
      }
      if (running.remove(key) != null) {
        outbox.returnRoom();
        sim.workerDid(name, WorkerLog.Kind.ABANDONED, key.jobId(), key.token(), reason);
        later(0, this::startCases);
        return true;
      }
      return false;
    }

    @Override
    public List<JobKey> withdrawQueued() {
      List<JobKey> out = new ArrayList<>();
      queue.forEach(j -> out.add(j.key()));
      queue.clear();
      return out;
    }

    void dieAll() {
      queue.clear();
      running.clear();
    }

    private void startCases() {
      while (alive && running.size() < slots && !queue.isEmpty()) {
        AssignedJob job = queue.poll();
        if (!outbox.tryReserveRoom()) {
          throw new IllegalStateException("the simulated outbox is full: " + outbox.size());
        }
        JobKey key = job.key();
        long startedNanos = sim.nanos();
        running.put(key, startedNanos);
        Simulation.SimCase sc = sim.caseOf(job.caseId());
        long timeoutMillis = job.setup().caseTimeout().toMillis();
        if (sc.poison()) {
          // The case takes its worker down with it, a moment after it starts.
          later(5 + sim.random().nextLong(50), () -> sim.crashWorker(SimWorker.this, "killed by poison case " + sc.id()));
        } else if (failsEveryCase) {
          long d = 1 + sim.random().nextLong(5);
          later(d, () -> finish(key, startedNanos, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED,
              "evaluator environment is broken", d)));
        } else {
          double jitter = 0.8 + 0.4 * sim.random().nextDouble();
          long d = Math.max(1, Math.round(sc.baseMillis() * slowFactor * jitter));
          if (d > timeoutMillis) {
            later(timeoutMillis, () -> finish(key, startedNanos, Evaluation.failed(InfraFailure.Kind.TIMEOUT,
                "ran past the case timeout of " + timeoutMillis + " ms", timeoutMillis)));
          } else {
            Outcome o = new Outcome(sc.verdict(), sc.verdict() == Verdict.PASS ? 1.0 : 0.0, "", d);
            later(d, () -> finish(key, startedNanos, new Evaluation.Finished(o)));
          }
        }
      }
    }

    /** A case ended; its slot takes the next job, and the core gets the evaluation (perhaps held back). */
    private void finish(JobKey key, long startedNanos, Evaluation evaluation) {
      if (running.remove(key) == null) {
        return; // cancelled meanwhile: never reported
      }
      CaseEnd end = new CaseEnd(key, evaluation, startedNanos);
      Long hold = lateResultHolds.poll();
      if (hold != null) {
        sim.trace(name + " holds back its result for job " + key.jobId() + " token " + key.token() + " for " + hold + " ms");
        later(hold, () -> report(end));
      } else {
        report(end);
      }
      startCases();
    }

    private void report(CaseEnd end) {
      core.caseEnded(end, sim.nanos());
      core.flush();
    }
  }
}

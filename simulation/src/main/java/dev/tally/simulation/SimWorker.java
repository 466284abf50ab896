package dev.tally.simulation;

import dev.tally.core.Assignment;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.HeldLease;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One simulated worker process, behaving as {@code WorkerSession} does: Hello listing the leases it holds,
 * heartbeats every interval once welcomed, cases run in its slots in assignment order, every report kept
 * in an outbox until acked and re-sent after each reconnect, Abandon honoured for queued and running
 * cases, reconnection with exponential backoff and full jitter. It writes what it does to the {@link
 * WorkerLog}.
 *
 * <p>Faults live here as traits (slow, failing every case, jittery heartbeats, a slow network) and as
 * states: crashed (everything it held is gone), frozen (every event for it waits, in order, until it
 * thaws), and late results armed (the next finished result is held back).
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class SimWorker {
  /** The first reconnect backoff, as the real worker's default. */
  static final long INITIAL_BACKOFF_MILLIS = 100;
  /** The longest reconnect backoff, as the real worker's default. */
  static final long MAX_BACKOFF_MILLIS = 5_000;

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
  /** Each heartbeat leaves up to this many ms late (0 for punctual heartbeats). */
  final long heartbeatJitterMillis;
  /** One-way network latency bounds for this worker's link, ms. */
  final long latencyMinMillis;
  final long latencyMaxMillis;

  boolean alive = true;
  boolean frozen;
  private final List<Runnable> frozenBacklog = new ArrayList<>();
  SimConnection conn;
  boolean welcomed;
  private long backoffCapMillis = INITIAL_BACKOFF_MILLIS;
  /** How many of the next finished results are held back, and for how long each. */
  final ArrayDeque<Long> lateResultHolds = new ArrayDeque<>();

  private enum JobState { QUEUED, RUNNING, FINISHED, ABANDONED }

  private static final class HeldJob {
    final Assignment assignment;
    final Key key;
    JobState state = JobState.QUEUED;

    HeldJob(Assignment a) {
      this.assignment = a;
      this.key = new Key(a.jobId(), a.token());
    }
  }

  record Key(long jobId, long token) {}

  /** Jobs received and not yet reported or abandoned, in assignment order. */
  private final Map<Key, HeldJob> held = new LinkedHashMap<>();
  private final ArrayDeque<HeldJob> queue = new ArrayDeque<>();
  private int running;
  /** Reports not yet acked, in the order they were made. */
  private final Map<Key, AttemptReport> outbox = new LinkedHashMap<>();

  SimWorker(Simulation sim, String name, int slots, boolean healthy, double slowFactor, boolean failsEveryCase,
      long heartbeatJitterMillis, long latencyMinMillis, long latencyMaxMillis) {
    this.sim = sim;
    this.id = "id-" + name;
    this.name = name;
    this.slots = slots;
    this.healthy = healthy;
    this.slowFactor = slowFactor;
    this.failsEveryCase = failsEveryCase;
    this.heartbeatJitterMillis = heartbeatJitterMillis;
    this.latencyMinMillis = latencyMinMillis;
    this.latencyMaxMillis = latencyMaxMillis;
  }

  String traits() {
    StringBuilder b = new StringBuilder().append(slots).append(" slots");
    if (healthy) {
      b.append(", guaranteed healthy");
    }
    if (slowFactor != 1.0) {
      b.append(String.format(java.util.Locale.ROOT, ", slow x%.1f", slowFactor));
    }
    if (failsEveryCase) {
      b.append(", fails every case");
    }
    if (heartbeatJitterMillis > 0) {
      b.append(", heartbeats up to ").append(heartbeatJitterMillis).append(" ms late");
    }
    b.append(", latency ").append(latencyMinMillis).append('-').append(latencyMaxMillis).append(" ms");
    return b.toString();
  }

  // ---- the process's own event loop ----

  /** Runs {@code action} as this process: not at all if it died, after it thaws if it is frozen. */
  void local(Runnable action) {
    if (!alive) {
      return;
    }
    if (frozen) {
      frozenBacklog.add(action);
      return;
    }
    action.run();
  }

  /** Runs {@code action} as this process {@code delayMillis} from now. */
  void later(long delayMillis, Runnable action) {
    sim.events().at(sim.now() + delayMillis, () -> local(action));
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

  /** The process dies: its cases, queue and outbox are gone with it. */
  void die() {
    alive = false;
    frozen = false;
    frozenBacklog.clear();
    held.clear();
    queue.clear();
    outbox.clear();
    running = 0;
    sim.workerDid(name, WorkerLog.Kind.CRASHED, 0, 0, "");
  }

  // ---- the session ----

  /** Opens a session, saying in its Hello which leases it holds (running, queued, or reported but unacked). */
  void connect() {
    if (conn != null || !alive) {
      return;
    }
    Set<Key> holding = new LinkedHashSet<>();
    for (HeldJob j : held.values()) {
      if (j.state != JobState.ABANDONED) {
        holding.add(j.key);
      }
    }
    holding.addAll(outbox.keySet());
    List<HeldLease> leases = holding.stream().map(k -> new HeldLease(k.jobId(), k.token())).toList();
    conn = sim.connect(this, leases);
    welcomed = false;
  }

  void onConnectRefused(SimConnection c) {
    if (conn != c) {
      return;
    }
    conn = null;
    scheduleReconnect();
  }

  void onWelcome(SimConnection c) {
    if (conn != c || welcomed) {
      return;
    }
    welcomed = true;
    backoffCapMillis = INITIAL_BACKOFF_MILLIS;
    sim.trace(name + " welcomed on " + c + "; re-sends " + outbox.size() + " results");
    for (AttemptReport r : outbox.values()) {
      send(r, true);
    }
    later(Simulation.HEARTBEAT_INTERVAL_MILLIS, () -> heartbeat(c));
  }

  private void heartbeat(SimConnection c) {
    if (conn != c || !welcomed) {
      return;
    }
    long late = heartbeatJitterMillis > 0 ? sim.random().nextLong(heartbeatJitterMillis + 1) : 0;
    if (late > 0) {
      later(late, () -> sendHeartbeat(c)); // the timer fires late: a busy or starved process
    } else {
      sendHeartbeat(c);
    }
    later(Simulation.HEARTBEAT_INTERVAL_MILLIS, () -> heartbeat(c));
  }

  private void sendHeartbeat(SimConnection c) {
    if (conn == c && welcomed) {
      sim.frameToCoordinator(c, () -> { });
    }
  }

  /** The session ended (the coordinator closed it, reset it, or the link was cut). Cases go on. */
  void onClosed(SimConnection c, String reason) {
    if (conn != c) {
      return;
    }
    conn = null;
    welcomed = false;
    sim.trace(name + " lost its session " + c + " (" + reason + "); " + outbox.size() + " results in the outbox, "
        + held.size() + " jobs held");
    scheduleReconnect();
  }

  private void scheduleReconnect() {
    long delay = sim.random().nextLong(backoffCapMillis + 1);
    backoffCapMillis = Math.min(MAX_BACKOFF_MILLIS, backoffCapMillis * 2);
    later(delay, this::connect);
  }

  // ---- work ----

  void onAssign(SimConnection c, List<Assignment> assignments) {
    if (conn != c) {
      return;
    }
    for (Assignment a : assignments) {
      HeldJob j = new HeldJob(a);
      if (held.containsKey(j.key) || outbox.containsKey(j.key)) {
        continue; // a duplicate Assign: the real worker ignores it too
      }
      held.put(j.key, j);
      queue.add(j);
      sim.workerDid(name, WorkerLog.Kind.ASSIGNED, a.jobId(), a.token(), "attempt " + a.attempt());
    }
    startCases();
  }

  private void startCases() {
    while (running < slots && !queue.isEmpty()) {
      HeldJob j = queue.poll();
      if (j.state != JobState.QUEUED) {
        continue;
      }
      j.state = JobState.RUNNING;
      running++;
      Simulation.SimCase sc = sim.caseOf(j.assignment.caseId());
      long timeoutMillis = j.assignment.evaluator().caseTimeout().toMillis();
      if (sc.poison()) {
        // The case takes its worker down with it, a moment after it starts.
        later(5 + sim.random().nextLong(50), () -> sim.crashWorker(this, "killed by poison case " + sc.id()));
      } else if (failsEveryCase) {
        long d = 1 + sim.random().nextLong(5);
        later(d, () -> finish(j, AttemptReport.failed(j.key.jobId(), j.key.token(),
            new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, "evaluator environment is broken"))));
      } else {
        double jitter = 0.8 + 0.4 * sim.random().nextDouble();
        long d = Math.max(1, Math.round(sc.baseMillis() * slowFactor * jitter));
        if (d > timeoutMillis) {
          later(timeoutMillis, () -> finish(j, AttemptReport.failed(j.key.jobId(), j.key.token(),
              new InfraFailure(InfraFailure.Kind.TIMEOUT, "ran past the case timeout of " + timeoutMillis + " ms"))));
        } else {
          Outcome o = new Outcome(sc.verdict(), sc.verdict() == dev.tally.core.Verdict.PASS ? 1.0 : 0.0, "", d);
          later(d, () -> finish(j, AttemptReport.of(j.key.jobId(), j.key.token(), o)));
        }
      }
    }
  }

  private void finish(HeldJob j, AttemptReport report) {
    if (j.state != JobState.RUNNING) {
      return; // abandoned meanwhile
    }
    j.state = JobState.FINISHED;
    running--;
    Long hold = lateResultHolds.poll();
    if (hold != null) {
      sim.trace(name + " holds back its result for job " + j.key.jobId() + " token " + j.key.token() + " for " + hold + " ms");
      later(hold, () -> handOff(j, report));
    } else {
      handOff(j, report);
    }
    startCases();
  }

  private void handOff(HeldJob j, AttemptReport report) {
    held.remove(j.key);
    outbox.put(j.key, report);
    if (welcomed) {
      send(report, false);
    }
  }

  private void send(AttemptReport r, boolean resend) {
    String what = r.outcome() != null ? r.outcome().verdict().wireName() : r.failure().kind().name().toLowerCase(java.util.Locale.ROOT);
    sim.workerDid(name, r.outcome() != null ? WorkerLog.Kind.SENT_OUTCOME : WorkerLog.Kind.SENT_FAILURE,
        r.jobId(), r.token(), resend ? what + " (resend)" : what);
    sim.resultToCoordinator(conn, r, resend);
  }

  void onAcks(SimConnection c, List<Ack> acks) {
    for (Ack a : acks) {
      outbox.remove(new Key(a.jobId(), a.token()));
      sim.workerDid(name, WorkerLog.Kind.ACKED, a.jobId(), a.token(), a.status().name());
    }
  }

  void onAbandon(long jobId, long token, String reason) {
    HeldJob j = held.get(new Key(jobId, token));
    if (j == null || (j.state != JobState.QUEUED && j.state != JobState.RUNNING)) {
      return; // not running here, or already finished: its report stands
    }
    if (j.state == JobState.RUNNING) {
      running--;
    }
    j.state = JobState.ABANDONED;
    held.remove(j.key);
    sim.workerDid(name, WorkerLog.Kind.ABANDONED, jobId, token, reason);
    startCases();
  }

  int outboxSize() {
    return outbox.size();
  }
}

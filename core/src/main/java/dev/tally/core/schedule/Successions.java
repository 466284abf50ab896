package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.CaseState;
import dev.tally.core.schedule.Fleet.Holdings;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import java.time.Duration;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that keeps a reconnecting worker's jobs for it. A session that ends because its worker opened a
 * new one ({@link WorkerHandle#superseded()}: the worker found its connection dead, say after the
 * coordinator itself was paused, and came back) is not a lost worker: its jobs are still running there, and
 * the new session's Hello lists them. So they are not released; they wait for the successor, which
 * reclaims those it lists (its claims renew their leases) and whose Hello's silence about the others
 * releases those. If no successor joins within {@link #WAIT}, they are released as a lost worker's would
 * have been.
 *
 * <p>Without this, the superseded session's loss released its jobs in the step before the successor's
 * claims were read: they were leased again, the worker's running cases were abandoned, and their work ran
 * twice.
 */
final class Successions implements Duty {
  private static final Logger log = LoggerFactory.getLogger(Successions.class);

  /**
   * How long a superseded session's jobs wait for the successor: it joins as soon as the superseded
   * session's loss is reported, so seconds are plenty; 10 s (the restart grace) covers a successor whose
   * own connection failed before joining and that reconnects once more.
   */
  static final Duration WAIT = RestartGrace.GRACE;

  /** A superseded session's jobs, waiting for its worker's next session. */
  private record Waiting(WorkerHandle session, Holdings holdings, long untilMillis) {}

  private final Reports reports;
  private final RedeliveryPolicy redelivery;
  private final RandomGenerator random;
  private final Map<String, Waiting> byWorkerId = new LinkedHashMap<>();

  Successions(Reports reports, RedeliveryPolicy redelivery, RandomGenerator random) {
    this.reports = reports;
    this.redelivery = redelivery;
    this.random = random;
  }

  /** A superseded session ended holding {@code holdings}: they wait for its successor. */
  void superseded(WorkerHandle session, Holdings holdings, long nowMillis) {
    Waiting earlier = byWorkerId.put(session.workerId(), new Waiting(session, holdings, nowMillis + WAIT.toMillis()));
    if (earlier != null) { // superseded twice before a successor joined: the older jobs wait too
      holdings.inFlight.putAll(earlier.holdings().inFlight);
    }
    if (!holdings.inFlight.isEmpty()) {
      log.info("worker {} reconnected; its {} jobs wait for its new session to claim them", session.name(),
          holdings.inFlight.size());
    }
  }

  /**
   * The worker's next session joined: the jobs it says it holds are its claims (renewed like any claim);
   * the others are released now.
   */
  void joined(WorkerHandle successor, long nowMillis, long nowNanos) {
    Waiting w = byWorkerId.remove(successor.workerId());
    if (w == null) {
      return;
    }
    Set<Long> held = new HashSet<>();
    successor.heldAtJoin().forEach(h -> held.add(h.jobId()));
    release(w, nowMillis, nowNanos, job -> !held.contains(job), "its worker reconnected without it");
  }

  /** Jobs some superseded session held and that still wait: no one else may take them for orphans. */
  Set<Long> waitingJobIds() {
    Set<Long> ids = new HashSet<>();
    byWorkerId.values().forEach(w -> ids.addAll(w.holdings().inFlight.keySet()));
    return ids;
  }

  @Override
  public void plan(Step step) {
    for (Iterator<Waiting> it = byWorkerId.values().iterator(); it.hasNext(); ) {
      Waiting w = it.next();
      if (step.nowMillis >= w.untilMillis()) {
        it.remove();
        release(w, step.nowMillis, step.nowNanos, job -> true, "its worker reconnected but no new session of it joined within "
            + WAIT.toSeconds() + " s");
      }
    }
  }

  private void release(Waiting w, long nowMillis, long nowNanos, java.util.function.LongPredicate which, String why) {
    InfraFailure failure = new InfraFailure(InfraFailure.Kind.WORKER_LOST, why);
    int running = w.session().slots();
    for (Map.Entry<Long, InFlight> e : w.holdings().inFlight.entrySet()) {
      InFlight f = e.getValue();
      CaseState where = running-- > 0 ? CaseState.RUNNING : CaseState.QUEUED;
      if (!which.test(e.getKey())) {
        continue;
      }
      long notBefore = nowMillis + redelivery.backoff(f.attempt(), failure.kind(), random).toMillis();
      reports.release(new ReleaseRequest(e.getKey(), f.token(), failure, notBefore, where,
          AttemptTiming.elapsed(f.elapsedMillis(nowNanos))), null);
    }
  }
}

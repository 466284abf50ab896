package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.store.StoreBatch.ExpiredLease;
import dev.tally.core.store.StoreBatch.OrphanRelease;
import dev.tally.core.store.StoreBatchResult;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that settles the leases an earlier coordinator on the same store left behind.
 *
 * <p>The grace is timed from the scheduler's first step ({@link #begin}), when it leads, not from its
 * construction: a standby's scheduler is built when its process starts, maybe hours before it takes over, and
 * timed from then its grace was long over at the takeover and the old leader's leases, issued after the
 * standby started, did not count as from before: a dead worker's case waited out its whole lease.
 *
 * <p>For {@link #GRACE} after this scheduler starts, nothing is swept: workers coming back after an outage
 * longer than a lease reclaim their leases, expired or not, instead of their finished work being fenced
 * and run again. The grace ends early once every worker the earlier coordinator had has come back. Then
 * every lease issued before this scheduler started that no returning worker claimed is released at once
 * ({@code COORDINATOR_RESTARTED}): nobody will report it (a job leased at the instant its coordinator
 * died, never delivered, would otherwise wait out its whole lease). Each run activated later gets the same
 * release on its first step after the grace.
 */
final class RestartGrace implements Duty {
  private static final Logger log = LoggerFactory.getLogger(RestartGrace.class);

  /**
   * 10 s: twice the workers' longest reconnect backoff (5 s), so a worker reconnecting after a
   * coordinator restart is back in time to reclaim its leases. The cost: a job whose holder never returns
   * is redelivered up to this much later after a restart.
   */
  static final Duration GRACE = Duration.ofSeconds(10);

  private final Fleet fleet;
  private final Runs runs;
  private final LeaseRenewals renewals;
  private final Successions successions;
  /** When the scheduler first stepped; {@link #NOT_STARTED} before. */
  private long startedAtMillis = NOT_STARTED;

  private static final long NOT_STARTED = Long.MIN_VALUE;
  /** Worker ids the earlier coordinator had and that are not back; null until they are read. */
  private Set<String> awaited;
  /** Worker ids that joined this scheduler. */
  private final Set<String> arrived = new HashSet<>();
  private boolean ended;
  private final Set<Long> settledRuns = new HashSet<>();
  private List<Long> releasing = List.of();

  RestartGrace(Fleet fleet, Runs runs, LeaseRenewals renewals, Successions successions) {
    this.fleet = fleet;
    this.runs = runs;
    this.renewals = renewals;
    this.successions = successions;
  }

  /** The scheduler's first step is at {@code nowMillis}: the grace starts; later calls change nothing. */
  void begin(long nowMillis) {
    if (startedAtMillis == NOT_STARTED) {
      startedAtMillis = nowMillis;
    }
  }

  /** The workers the earlier coordinator had when it stopped; the grace ends early once all are back. */
  void awaiting(Set<String> workerIds) {
    awaited = new HashSet<>(workerIds);
    awaited.removeAll(arrived);
  }

  /** A worker joined: one fewer to wait for. */
  void arrived(String workerId) {
    arrived.add(workerId);
    if (awaited != null) {
      awaited.remove(workerId);
    }
  }

  /** Whether the grace is over: sweeps may run, orphans may be released. */
  boolean over(long nowMillis) {
    if (!ended && (nowMillis - startedAtMillis >= GRACE.toMillis() || (awaited != null && awaited.isEmpty()))) {
      ended = true;
      log.debug("restart grace over after {} ms", nowMillis - startedAtMillis);
    }
    return ended;
  }

  @Override
  public void plan(Step step) {
    releasing = List.of();
    if (!over(step.nowMillis)) {
      return;
    }
    List<Long> active = runs.activeIds();
    if (settledRuns.containsAll(active)) {
      return; // the usual case, at every step once the grace is over: no stream, no list
    }
    List<Long> unsettled = new java.util.ArrayList<>(active);
    unsettled.removeAll(settledRuns);
    Set<Long> claimed = new HashSet<>(fleet.heldJobIds());
    claimed.addAll(renewals.claimedJobIds());
    claimed.addAll(successions.waitingJobIds());
    step.releaseOrphans(new OrphanRelease(startedAtMillis, claimed));
    releasing = unsettled;
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    settledRuns.addAll(releasing);
    long orphans = result.expired().stream().filter(e -> e.why() == InfraFailure.Kind.COORDINATOR_RESTARTED).count();
    if (orphans > 0) {
      log.warn("{} leases from before this coordinator started were claimed by no returning worker; released", orphans);
      for (ExpiredLease e : result.expired()) {
        if (e.why() == InfraFailure.Kind.COORDINATOR_RESTARTED) {
          log.debug("orphaned lease on job {} (token {}) released: {}", e.jobId(), e.token(), e.status());
        }
      }
    }
  }
}

package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.store.StoreBatch.ExpiredLease;
import dev.tally.core.store.StoreBatchResult;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that ends leases nobody renewed: every {@link #INTERVAL}, once the restart grace is over, the
 * store ends each expired lease of the active runs ({@code LEASE_EXPIRED}) and the job goes back to the
 * queue (or ends, as the redelivery policy judges). A worker that still holds one (it was not heard from
 * for a whole lease, yet is connected) is told to abandon it: its result would be fenced.
 */
final class ExpiredLeaseSweep implements Duty {
  private static final Logger log = LoggerFactory.getLogger(ExpiredLeaseSweep.class);

  /** How often expired leases are looked for: often enough that I4 holds within a second of expiry. */
  static final Duration INTERVAL = Duration.ofSeconds(1);

  private final Fleet fleet;
  private final Runs runs;
  private final RestartGrace grace;
  private long lastSweepMillis;

  ExpiredLeaseSweep(Fleet fleet, Runs runs, RestartGrace grace) {
    this.fleet = fleet;
    this.runs = runs;
    this.grace = grace;
  }

  @Override
  public void plan(Step step) {
    if (runs.anyActive() && step.nowMillis - lastSweepMillis >= INTERVAL.toMillis() && grace.over(step.nowMillis)) {
      step.sweepExpiredLeases();
    }
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    if (step.sweeps()) {
      lastSweepMillis = step.nowMillis;
    }
    for (ExpiredLease e : result.expired()) {
      if (e.why() != InfraFailure.Kind.LEASE_EXPIRED) {
        continue;
      }
      log.warn("lease on job {} (token {}) expired unrenewed; {}", e.jobId(), e.token(),
          switch (e.status()) {
            case FAILED -> "out of attempts";
            case DROPPED -> "the case goes on under its other attempt";
            default -> "back to the queue";
          });
      for (WorkerHandle holder : fleet.holdersOf(e.jobId(), e.token())) {
        fleet.holdings(holder).inFlight.remove(e.jobId());
        holder.abandon(e.jobId(), e.token(), "lease expired");
      }
    }
  }
}

package dev.tally.core.schedule;

import dev.tally.core.schedule.Fleet.Holdings;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.schedule.Step.Claim;
import dev.tally.core.schedule.Step.ClaimResult;
import dev.tally.core.store.StoreBatchResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that keeps leases alive: a live connection is the proof of life that renews its worker's
 * leases (every third of a lease), and a reconnecting worker's claims on the leases it says it still holds
 * are settled here: a lease still current is renewed and kept (no work is thrown away, whatever its expiry:
 * a lease not yet swept can be reclaimed), any other is abandoned by the worker.
 *
 * <p>Claims stay queued until a commit settles them, and the renewal clock moves only with a commit: a
 * failed batch must not cost a lease its renewal.
 */
final class LeaseRenewals implements Duty {
  private static final Logger log = LoggerFactory.getLogger(LeaseRenewals.class);

  private final Fleet fleet;
  private final Duration leaseDuration;
  private final List<Claim> claims = new ArrayList<>();
  private long lastRenewalMillis;
  private boolean renewingAll;

  LeaseRenewals(Fleet fleet, Duration leaseDuration) {
    this.fleet = fleet;
    this.leaseDuration = leaseDuration;
  }

  /** A joining worker says it holds {@code lease}. */
  void claim(WorkerHandle worker, HeldLease lease) {
    claims.add(new Claim(worker, lease));
  }

  /** The jobs of claims not yet settled. */
  Set<Long> claimedJobIds() {
    Set<Long> ids = new HashSet<>();
    claims.forEach(c -> ids.add(c.lease().jobId()));
    return ids;
  }

  @Override
  public void plan(Step step) {
    long expiry = step.nowMillis + leaseDuration.toMillis();
    for (Claim c : claims) {
      step.claim(c, expiry);
    }
    renewingAll = step.nowMillis - lastRenewalMillis >= leaseDuration.toMillis() / 3;
    if (renewingAll) {
      for (Map.Entry<WorkerHandle, Holdings> e : fleet.entries()) {
        e.getValue().inFlight.forEach((jobId, f) -> step.renew(jobId, f, expiry));
      }
    }
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    if (renewingAll) {
      lastRenewalMillis = step.nowMillis;
    }
    claims.clear();
    for (ClaimResult r : step.claims(result)) {
      Claim c = r.claim();
      Holdings h = fleet.holdings(c.worker());
      if (r.renewal().current() && h != null) {
        h.inFlight.put(c.lease().jobId(),
            new InFlight(r.renewal().runId(), c.lease().token(), r.renewal().attempt(), step.nowMillis, step.nowNanos));
        log.info("worker {} kept its lease on job {} (token {})", c.worker().name(), c.lease().jobId(), c.lease().token());
      } else {
        c.worker().abandon(c.lease().jobId(), c.lease().token(), "the lease is no longer current");
      }
    }
  }
}

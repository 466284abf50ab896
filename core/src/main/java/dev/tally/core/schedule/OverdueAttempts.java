package dev.tally.core.schedule;

import dev.tally.core.InfraFailure;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.CaseState;
import dev.tally.core.schedule.Fleet.Holdings;
import dev.tally.core.schedule.Fleet.InFlight;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import java.util.Iterator;
import java.util.Map;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that ends attempts which outran their deadline although their worker is alive: the worker's
 * own case timeout should have ended them (its evaluator may be hung). The deadline counts from the lease
 * on the monotonic clock, and allows for the wait behind the worker's other assignments: the case timeout
 * times the rounds a full dispatch window needs ({@code ceil(window / slots)}), plus {@link
 * #GRACE_MILLIS}. The job is released as a timeout and the worker told to abandon it (which kills its
 * process). Runs with the expired-lease sweep, at its cadence.
 */
final class OverdueAttempts implements Duty {
  private static final Logger log = LoggerFactory.getLogger(OverdueAttempts.class);

  /** Slack past an attempt's deadline before the coordinator ends it: the worker's own timeout goes first. */
  static final long GRACE_MILLIS = 5_000;

  private final Fleet fleet;
  private final Runs runs;
  private final Reports reports;
  private final RedeliveryPolicy redelivery;
  private final RandomGenerator random;

  OverdueAttempts(Fleet fleet, Runs runs, Reports reports, RedeliveryPolicy redelivery, RandomGenerator random) {
    this.fleet = fleet;
    this.runs = runs;
    this.reports = reports;
    this.redelivery = redelivery;
    this.random = random;
  }

  @Override
  public void plan(Step step) {
    if (!step.sweeps()) {
      return;
    }
    for (Map.Entry<WorkerHandle, Holdings> w : fleet.entries()) {
      WorkerHandle worker = w.getKey();
      int rounds = (worker.dispatchWindow() + worker.slots() - 1) / Math.max(1, worker.slots());
      Iterator<Map.Entry<Long, InFlight>> it = w.getValue().inFlight.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<Long, InFlight> e = it.next();
        InFlight f = e.getValue();
        long budget = runs.view(f.runId()).spec().evaluator().caseTimeout().toMillis() * rounds + GRACE_MILLIS;
        long elapsed = f.elapsedMillis(step.nowNanos);
        if (elapsed <= budget) {
          continue;
        }
        it.remove();
        String why = "deadline passed: leased " + elapsed + " ms ago, budget " + budget + " ms";
        log.warn("job {} on worker {}: {}; abandoning it", e.getKey(), worker.name(), why);
        InfraFailure failure = new InfraFailure(InfraFailure.Kind.TIMEOUT, why);
        long notBefore = step.nowMillis + redelivery.backoff(f.attempt(), failure.kind(), random).toMillis();
        reports.release(new ReleaseRequest(e.getKey(), f.token(), failure, notBefore, CaseState.RUNNING,
            AttemptTiming.elapsed(elapsed)), null);
        worker.abandon(e.getKey(), f.token(), why);
      }
    }
  }
}

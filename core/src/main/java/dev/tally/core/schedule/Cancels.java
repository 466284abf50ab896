package dev.tally.core.schedule;

import dev.tally.core.store.CancelResult;
import dev.tally.core.store.StoreBatchResult;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that cancels runs: a cancel asked for (from any thread, {@link Scheduler#cancel}) goes into the
 * next step's batch, where the store's rule ({@code BatchRules.cancelRun}) ends the run's pending and leased
 * jobs; after the commit, every worker that holds one of those leases is told to abandon it (its result,
 * should it still send one, is fenced), and the caller's future completes. Any run of the store can be
 * cancelled this way, served by this scheduler or not. A cancel whose commit failed is asked again next
 * step.
 */
final class Cancels implements Duty {
  private static final Logger log = LoggerFactory.getLogger(Cancels.class);

  /** Why a holder of a cancelled run's lease is told to abandon it. */
  static final String ABANDON_REASON = "its run was cancelled";

  private record Asked(long runId, CompletableFuture<CancelResult> done) {}

  private final Fleet fleet;
  private final List<Asked> asked = new ArrayList<>();
  private List<Asked> planned = List.of();

  Cancels(Fleet fleet) {
    this.fleet = fleet;
  }

  /** A cancel asked for, delivered on the scheduler's thread. */
  void ask(long runId, CompletableFuture<CancelResult> done) {
    asked.add(new Asked(runId, done));
  }

  @Override
  public void plan(Step step) {
    planned = List.copyOf(asked);
    planned.forEach(a -> step.cancel(a.runId()));
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    asked.removeAll(planned);
    for (int i = 0; i < planned.size(); i++) {
      CancelResult r = result.cancels().get(i);
      for (CancelResult.CancelledLease l : r.leases()) {
        for (WorkerHandle holder : fleet.holdersOf(l.jobId(), l.token())) {
          fleet.holdings(holder).inFlight.remove(l.jobId());
          holder.abandon(l.jobId(), l.token(), ABANDON_REASON);
        }
      }
      if (r.status() == CancelResult.Status.CANCELLED) {
        log.info("run {} cancelled: {} pending and {} leased jobs will not run", r.runId(), r.pendingCancelled(),
            r.leases().size());
      }
      planned.get(i).done().complete(r);
    }
    planned = List.of();
  }

  /** Fails every cancel still waiting: the scheduler gave up on the store. */
  void failAll(Throwable cause) {
    asked.forEach(a -> a.done().completeExceptionally(cause));
    asked.clear();
  }
}

package dev.tally.simulation;

import dev.tally.core.CaseRecord;
import dev.tally.core.InfraFailure;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatch.ReleaseStatus;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.WorkerStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The planted fault {@link PlantedFault#DROP_ON_REAP}: a store in front of the real one that silently
 * drops every release of a lost worker's job (answering RELEASED as if it were done) and never sweeps
 * expired leases nor releases orphaned ones. The jobs of a reaped or crashed worker then stay leased to nobody, forever: the bug a
 * coordinator has when it forgets a dead worker's work. Everything else passes through.
 *
 * <p>Thread-safety: as the store it wraps; used from one simulation thread.
 */
final class ReapDroppingStore extends ForwardingStore {

  ReapDroppingStore(Store delegate) {
    super(delegate);
  }

  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    List<ReleaseRequest> kept = new ArrayList<>();
    boolean[] dropped = new boolean[batch.releases().size()];
    for (int i = 0; i < batch.releases().size(); i++) {
      ReleaseRequest r = batch.releases().get(i);
      if (r.failure().kind() == InfraFailure.Kind.WORKER_LOST) {
        dropped[i] = true;
      } else {
        kept.add(r);
      }
    }
    StoreBatchResult inner = delegate.apply(new StoreBatch(batch.nowMillis(), batch.runIds(), batch.redelivery(),
        batch.records(), kept, batch.leases(), batch.renewals(), null, false, batch.cancels(), batch.journal(),
        batch.leaseLimits(), batch.pauses(), batch.backups()));
    List<ReleaseStatus> statuses = new ArrayList<>(dropped.length);
    int next = 0;
    for (boolean d : dropped) {
      statuses.add(d ? ReleaseStatus.RELEASED : inner.releaseStatuses().get(next++));
    }
    return new StoreBatchResult(inner.recordStatuses(), statuses, inner.leases(), inner.counters(),
        inner.nextNotBeforeMillis(), inner.pendingLeft(), inner.renewals(), inner.expired(), inner.cancels(),
        inner.journalStatuses(), inner.backups(), inner.abandoned());
  }
}

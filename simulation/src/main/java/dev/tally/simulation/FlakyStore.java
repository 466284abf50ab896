package dev.tally.simulation;

import dev.tally.core.CaseRecord;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * The fault site {@link FaultKind#STORE_FAILURE}: a store whose batch commits fail, applying nothing, when
 * the simulation says so (a full disk, a lock timeout, a failover). Everything else passes through.
 *
 * <p>Thread-safety: as the store it wraps; used from one simulation thread.
 */
final class FlakyStore extends ForwardingStore {
  private final BooleanSupplier failNow;
  private final int maxInARow;
  private int failedInARow;

  /**
   * {@code failNow} is asked before each batch; true makes that batch fail with nothing applied. Never
   * more than {@code maxInARow} batches fail in a row: a hiccup the scheduler must ride out, not the
   * outage it is meant to give up on.
   */
  FlakyStore(Store delegate, BooleanSupplier failNow, int maxInARow) {
    super(delegate);
    this.failNow = failNow;
    this.maxInARow = maxInARow;
  }

  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    if (failedInARow < maxInARow && failNow.getAsBoolean()) {
      failedInARow++;
      throw new StoreException("apply: injected commit failure (fault store-failure); none of the batch was applied");
    }
    StoreBatchResult r = delegate.apply(batch);
    failedInARow = 0;
    return r;
  }
}

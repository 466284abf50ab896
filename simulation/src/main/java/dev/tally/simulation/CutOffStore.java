package dev.tally.simulation;

import dev.tally.core.lead.LeaderRead;
import dev.tally.core.lead.LeaderRow;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import java.util.function.BooleanSupplier;

/**
 * The fault site {@link FaultKind#STORE_CUT}: one coordinator's store that cannot be reached while the
 * simulation says so (a network partition between it and the database, or the database restarting). Its
 * commits and its looks at the leader row fail as the product's do once their waits are over; the
 * simulation makes a commit wait first, as {@code JdbcStore} does, by holding the scheduler's step back.
 * Everything else passes through.
 *
 * <p>Thread-safety: as the store it wraps; used from one simulation thread.
 */
final class CutOffStore extends ForwardingStore {
  private final BooleanSupplier cut;

  /** {@code cut} is asked before each commit and each look at the leader row: true makes it fail. */
  CutOffStore(Store delegate, BooleanSupplier cut) {
    super(delegate);
    this.cut = cut;
  }

  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    refuseIfCut("apply");
    return delegate.apply(batch);
  }

  @Override
  public LeaderRead leader() {
    refuseIfCut("leader");
    return delegate.leader();
  }

  @Override
  public boolean swapLeader(LeaderRow expected, LeaderRow next) {
    refuseIfCut("swapLeader");
    return delegate.swapLeader(expected, next);
  }

  private void refuseIfCut(String operation) {
    if (cut.getAsBoolean()) {
      throw new StoreException(operation + ": the store cannot be reached (fault store-cut); nothing was read or written");
    }
  }
}

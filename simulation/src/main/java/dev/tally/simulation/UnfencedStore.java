package dev.tally.simulation;

import dev.tally.core.store.Store;

/**
 * The planted fault {@link PlantedFault#SKIP_EPOCH_CHECK}: a coordinator's store view that keeps the epoch
 * its coordinator leads under to itself and never hands it to the store, so that the store never checks
 * it. The view says the coordinator writes under its epoch ({@link #writeEpoch}), and the store takes every
 * write: a leader thawed after a takeover commits under its old epoch. Everything else passes through.
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class UnfencedStore extends ForwardingStore {
  private long epoch = Store.UNFENCED;

  UnfencedStore(Store delegate) {
    super(delegate);
  }

  @Override
  public void writeAs(long epoch) {
    this.epoch = Store.checkWriteEpoch(epoch); // the bug: the store never hears it
  }

  @Override
  public long writeEpoch() {
    return epoch;
  }
}

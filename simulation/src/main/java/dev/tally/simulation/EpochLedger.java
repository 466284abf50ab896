package dev.tally.simulation;

import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.lead.LeaderRow;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.CreatedRun;
import dev.tally.core.store.KeyClaim;
import dev.tally.core.store.KeyCompletion;
import dev.tally.core.store.KeyReservationLostException;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.StaleEpochException;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.WorkerStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The leader epochs of one history, in the store's commit order: every epoch a coordinator took, every
 * write transaction a coordinator committed with the epoch it carried, and every write the store refused
 * for a stale epoch. It is the simulation's {@code leader_epochs} (the SQL stores count writes per epoch
 * there), kept as a list so that the {@link Checker} can tell whether a write committed under an epoch after
 * a higher one took the lead. The store's fence is not here: each coordinator's writes are checked by its own
 * {@code InMemoryStore} instance ({@code writeAs}); this ledger only watches from outside.
 *
 * <p>Thread-safety: none; one history, one thread (the order of calls is the commit order).
 */
public final class EpochLedger {

  /** What an entry records. */
  public enum Kind {
    /** A coordinator won the leader row under a new epoch. */
    LEAD,
    /** A write transaction committed under the epoch it carried. */
    WRITE,
    /** The store refused a write transaction: its epoch was not the leader row's ({@code StaleEpochException}). */
    REFUSED
  }

  /**
   * One entry.
   *
   * @param atMillis virtual time, ms since the history's start
   * @param kind what happened
   * @param epoch the epoch taken, or the epoch the write carried ({@link Store#NOT_LEADING} for a standby's)
   * @param coordinator which coordinator process
   * @param what the write (its store call), or the row's holder for a lead
   */
  public record Entry(long atMillis, Kind kind, long epoch, String coordinator, String what) {}

  private final List<Entry> entries = new ArrayList<>();
  private final LongSupplier nowMillis;

  /** @param nowMillis the history's virtual time, ms since its start */
  EpochLedger(LongSupplier nowMillis) {
    this.nowMillis = nowMillis;
  }

  /** Every entry so far, in commit order. */
  List<Entry> entries() {
    return List.copyOf(entries);
  }

  /**
   * A view of {@code store} (one coordinator's own instance, or a view over it) that records in this ledger
   * each leader swap it wins and each write it commits or has refused.
   */
  Store recording(Store store, String coordinator) {
    return new Recording(store, coordinator);
  }

  private void add(Kind kind, long epoch, String coordinator, String what) {
    entries.add(new Entry(nowMillis.getAsLong(), kind, epoch, coordinator, what));
  }

  /** The recording view: every write of {@link Store} goes through {@link #write}. */
  private final class Recording extends ForwardingStore {
    private final String coordinator;

    Recording(Store delegate, String coordinator) {
      super(delegate);
      this.coordinator = coordinator;
    }

    private <T> T write(String what, Supplier<T> call) {
      long epoch = delegate.writeEpoch();
      T result;
      try {
        result = call.get();
      } catch (StaleEpochException e) {
        add(Kind.REFUSED, epoch, coordinator, what);
        throw e;
      }
      add(Kind.WRITE, epoch, coordinator, what);
      return result;
    }

    @Override
    public boolean swapLeader(LeaderRow expected, LeaderRow next) {
      boolean won = delegate.swapLeader(expected, next);
      if (won && next.epoch() != expected.epoch()) {
        add(Kind.LEAD, next.epoch(), coordinator, next.holder());
      }
      return won;
    }

    @Override
    public StoreBatchResult apply(StoreBatch batch) {
      return write("apply", () -> delegate.apply(batch));
    }

    @Override
    public CreatedRun createRun(NewRun run, CaseSource cases, KeyCompletion completion)
        throws CaseSourceException, KeyReservationLostException {
      long epoch = delegate.writeEpoch();
      CreatedRun created;
      try {
        created = delegate.createRun(run, cases, completion);
      } catch (StaleEpochException e) {
        add(Kind.REFUSED, epoch, coordinator, "createRun");
        throw e;
      }
      add(Kind.WRITE, epoch, coordinator, "createRun");
      return created;
    }

    @Override
    public CancelResult cancelRun(long runId, long nowMillis) {
      return write("cancelRun", () -> delegate.cancelRun(runId, nowMillis));
    }

    @Override
    public dev.tally.core.store.RetryResult retryErrors(long runId, long nowMillis) {
      return write("retryErrors", () -> delegate.retryErrors(runId, nowMillis));
    }

    @Override
    public boolean putRunOptions(long runId, java.util.Map<String, String> options) {
      return write("putRunOptions", () -> delegate.putRunOptions(runId, options));
    }

    @Override
    public boolean unpause(long runId) {
      return write("unpause", () -> delegate.unpause(runId));
    }

    @Override
    public dev.tally.core.store.RescorePage rescore(long runId, dev.tally.core.score.Judge judge, int afterPosition,
        long nowMillis) {
      return write("rescore", () -> delegate.rescore(runId, judge, afterPosition, nowMillis));
    }

    @Override
    public KeyClaim claimKey(String scope, String key, String fingerprint, long nowMillis, long holdUntilMillis) {
      return write("claimKey", () -> delegate.claimKey(scope, key, fingerprint, nowMillis, holdUntilMillis));
    }

    @Override
    public boolean renewKey(String scope, String key, String reservationToken, long holdUntilMillis) {
      return write("renewKey", () -> delegate.renewKey(scope, key, reservationToken, holdUntilMillis));
    }

    @Override
    public void releaseKey(String scope, String key, String reservationToken) {
      write("releaseKey", () -> {
        delegate.releaseKey(scope, key, reservationToken);
        return null;
      });
    }

    @Override
    public int purgeKeys(long nowMillis) {
      return write("purgeKeys", () -> delegate.purgeKeys(nowMillis));
    }

    @Override
    public int releaseHeldKeys() {
      return write("releaseHeldKeys", delegate::releaseHeldKeys);
    }

    @Override
    public int releaseLeases(long runId, long nowMillis, dev.tally.core.RedeliveryPolicy redelivery) {
      return write("releaseLeases", () -> delegate.releaseLeases(runId, nowMillis, redelivery));
    }

    @Override
    public void saveWorkerStatuses(List<WorkerStatus> statuses) {
      if (statuses.isEmpty()) {
        return; // no transaction at all, in every store
      }
      write("saveWorkerStatuses", () -> {
        delegate.saveWorkerStatuses(statuses);
        return null;
      });
    }
  }
}

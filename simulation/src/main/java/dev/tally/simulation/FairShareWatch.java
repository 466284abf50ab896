package dev.tally.simulation;

import dev.tally.core.Assignment;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.memory.InMemoryStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The fair-share check (violations start with {@code FS:}): no run with leasable jobs goes without a lease
 * for long while another run, already holding more, gets leases. Fair share is max-min over the runs'
 * leased jobs ({@code BatchRules}), so after each committed batch that leased jobs of more than one active
 * run, a run Y is <i>passed over</i> if it still has jobs some asking worker may lease, got none in the
 * batch, and a run X that got some holds more leases than Y now. One more is a tie broken against Y, which
 * happens (the runs take turns at ties: the scheduler's lease order), but not batch after batch: ties that
 * went to the older run every time starved a later run while as many runs as slots each held one. A run
 * passed over in {@link #PATIENCE} batches in a row is starved: a violation.
 *
 * <p>The leased counts and leasable jobs are read from the store's data itself ({@link
 * InMemoryStore#leasingView}), not through the primitives a planted bug may break.
 *
 * <p>Thread-safety: none; one simulation's thread. Outlives the coordinators of a history.
 */
final class FairShareWatch {
  /**
   * Batches in a row a run may be passed over: one is the ordinary transient (a retry that waits for
   * another worker, a lease swept back after the leasing), five in a row only an unfair rule makes.
   */
  static final int PATIENCE = 5;

  private final InMemoryStore durable;
  private final Map<Long, Integer> streaks = new HashMap<>();
  private final Map<Long, Long> streakStartedAt = new HashMap<>();
  private final Set<Long> reported = new HashSet<>();
  private final List<String> violations = new ArrayList<>();

  FairShareWatch(InMemoryStore durable) {
    this.durable = durable;
  }

  /** A store that commits through {@code delegate} and has this watch judge each committed batch. */
  Store watching(Store delegate) {
    return new ForwardingStore(delegate) {
      @Override
      public StoreBatchResult apply(StoreBatch batch) {
        StoreBatchResult result = delegate.apply(batch);
        judge(batch, result);
        return result;
      }
    };
  }

  private void judge(StoreBatch batch, StoreBatchResult result) {
    if (batch.runIds().size() < 2 || batch.leases().isEmpty()) {
      return;
    }
    Map<Long, Integer> granted = new HashMap<>();
    for (List<Assignment> l : result.leases()) {
      for (Assignment a : l) {
        granted.merge(a.runId(), 1, Integer::sum);
      }
    }
    if (granted.isEmpty()) {
      return;
    }
    Set<String> requesters = new HashSet<>();
    batch.leases().forEach(r -> requesters.add(r.worker()));
    Map<Long, InMemoryStore.LeasingView> views = new HashMap<>();
    for (long runId : batch.runIds()) {
      views.put(runId, durable.leasingView(runId, batch.nowMillis(), requesters));
    }
    for (long y : batch.runIds()) {
      InMemoryStore.LeasingView vy = views.get(y);
      long unfairTo = -1;
      if (!granted.containsKey(y) && vy.leasable()) {
        for (long x : granted.keySet()) {
          InMemoryStore.LeasingView vx = views.get(x);
          if (vx != null && vx.leased() > vy.leased()) {
            unfairTo = x;
            break;
          }
        }
      }
      if (unfairTo < 0) {
        streaks.remove(y);
        streakStartedAt.remove(y);
        continue;
      }
      int n = streaks.merge(y, 1, Integer::sum);
      streakStartedAt.putIfAbsent(y, batch.nowMillis());
      if (n >= PATIENCE && reported.add(y)) {
        violations.add("FS: run " + y + " had leasable jobs and " + vy.leased() + " leases, yet got no lease in " + n
            + " batches in a row that leased to other runs (run " + unfairTo + " holds " + views.get(unfairTo).leased()
            + "), from " + streakStartedAt.get(y) + " to " + batch.nowMillis() + " (epoch ms)");
      }
    }
  }

  /** The violations found so far. */
  List<String> violations() {
    return List.copyOf(violations);
  }
}

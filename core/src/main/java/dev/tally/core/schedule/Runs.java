package dev.tally.core.schedule;

import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The runs the scheduler serves: which are active (it leases only from those, in {@link #leaseOrder}), their
 * specs, their latest counters and the futures waiting for their end.
 *
 * <p>Thread-safety: {@link #counters} and {@link #completion} are safe from any thread; everything else
 * belongs to the scheduler's thread.
 */
final class Runs {
  private final Store store;
  private final SchedulerObserver observer;
  private final LinkedHashSet<Long> active = new LinkedHashSet<>();
  private final Map<Long, RunView> specs = new HashMap<>();
  private final Map<Long, String> caseKinds = new HashMap<>();
  private final Map<Long, RunCounters> latest = new ConcurrentHashMap<>();
  private final Map<Long, CompletableFuture<RunCounters>> completions = new ConcurrentHashMap<>();
  /** When each active run was last leased from, as {@link #leaseCount} stood then; absent: never. */
  private final Map<Long, Long> lastLeased = new HashMap<>();
  /** Leases counted so far, the clock of {@link #lastLeased}: an order, not a time. */
  private long leaseCount;

  Runs(Store store, SchedulerObserver observer) {
    this.store = store;
    this.observer = observer;
  }

  /**
   * Starts leasing from a run, unless it has already ended (finished or cancelled): then its future
   * completes at once with the counters it ended with. A run the scheduler saw end that has been reopened
   * since ({@link dev.tally.core.store.Store#retryErrors}) is read again and leased from.
   */
  void activate(long runId) {
    RunView run = view(runId);
    RunCounters last = latest.get(runId);
    if (run.ended() || (last != null && last.finished())) {
      // A run that ended may have been reopened since (tally retry-errors put its errors back in the queue,
      // BatchRules.retryErrors): the store says. Rare (an activation), so read it again.
      RunView now = store.run(runId).orElse(run);
      if (now.ended()) {
        completion(runId).complete(last != null ? last : now.counters());
        return;
      }
      specs.put(runId, now);
      completions.computeIfPresent(runId, (id, f) -> f.isDone() ? null : f); // the next end completes a new one
      publish(Map.of(runId, now.counters()));
    } else if (active.contains(runId)) {
      // Activated again while it runs: resumed from a pause, its caps raised. Read it afresh.
      store.run(runId).ifPresent(now -> specs.put(runId, now));
    }
    active.add(runId);
  }

  /** The active runs, in activation order. */
  List<Long> activeIds() {
    return List.copyOf(active);
  }

  /**
   * The active runs in the order a step offers them leases, which decides fair share's ties ({@link
   * dev.tally.core.store.BatchRules}: slot by slot to the run with the fewest leased, ties to the earlier):
   * a run never leased from first, then the others by how long ago they were last leased from, longest
   * first; activation order among equals. Ties going always to the older run starved a later one: with as
   * many runs as the fleet has slots, each holding one, the slot one run's end freed tied it (none leased)
   * with the later run, and the older run took it every time, until a run ended.
   */
  List<Long> leaseOrder() {
    if (active.size() < 2) {
      return List.copyOf(active); // every step of a lone run: nothing to order
    }
    List<Long> order = new java.util.ArrayList<>(active);
    order.sort(java.util.Comparator.comparingLong(runId -> lastLeased.getOrDefault(runId, Long.MIN_VALUE))); // stable
    return order;
  }

  /** Notes that a step leased one of the run's jobs, for {@link #leaseOrder}. */
  void leased(long runId) {
    lastLeased.put(runId, ++leaseCount);
  }

  boolean anyActive() {
    return !active.isEmpty();
  }

  /** The run as the scheduler first read it (its spec never changes); loaded once. */
  RunView view(long runId) {
    RunView run = specs.get(runId);
    if (run == null) {
      run = store.run(runId).orElseThrow(() -> new IllegalStateException("no run " + runId + " in the store"));
      specs.put(runId, run);
      publish(Map.of(runId, run.counters()));
    }
    return run;
  }

  /** The outlier detector compares latencies within a run: its kind of case. Cached: this is per eval. */
  String caseKind(long runId) {
    return caseKinds.computeIfAbsent(runId, id -> "run-" + id);
  }

  /**
   * Takes a commit's counters; a run that ended (finished, or cancelled: every job ended either way) leaves
   * the active set and its future completes.
   */
  void publish(Map<Long, RunCounters> counters) {
    counters.forEach((runId, c) -> {
      latest.put(runId, c);
      observer.runCounters(runId, c);
      if (c.finished()) {
        active.remove(runId);
        lastLeased.remove(runId);
        completion(runId).complete(c);
      }
    });
  }

  /** The run's counters as of the last commit, or null. */
  RunCounters counters(long runId) {
    return latest.get(runId);
  }

  /** The future completed when the run finishes. */
  CompletableFuture<RunCounters> completion(long runId) {
    return completions.computeIfAbsent(runId, id -> new CompletableFuture<>());
  }

  /** Fails every waiting future: the scheduler gave up. */
  void failAll(Throwable cause) {
    completions.values().forEach(f -> f.completeExceptionally(cause));
  }
}

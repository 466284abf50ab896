package dev.tally.simulation;

import dev.tally.coordinator.LeaderCheck;
import dev.tally.coordinator.net.ConnectionCore;
import dev.tally.coordinator.net.WorkerEventsChecker;
import dev.tally.core.schedule.Scheduler;
import dev.tally.core.store.Store;
import java.util.ArrayList;
import java.util.List;

/**
 * One simulated coordinator process on one of the fleet's coordinator addresses: its own store instance
 * (whose writes carry its own leader epoch), the real leader-lease driver ({@link LeaderCheck} over the real
 * {@code LeaderLease}), and, while it leads, its worker port (the real {@link ConnectionCore}s of its {@link
 * SimConnection}s) and its real {@link Scheduler}. What it does is {@link Simulation}'s to drive; this class
 * holds the process's state and its one trait of a process: frozen (SIGSTOP), every event for it waits, in
 * order, until it thaws.
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class SimCoordinator {
  final String name;
  /** Which of the fleet's coordinator addresses it listens on (a restart takes its predecessor's). */
  final int address;
  /** Its own view of the durable store, with its own write epoch. */
  final Store store;
  final LeaderCheck leadership;

  boolean alive = true;
  boolean frozen;
  /** The epoch it leads under, with its worker port open and its scheduler running; 0 while it does not. */
  long epoch;
  Scheduler scheduler;
  ConnectionCore.Context context;
  WorkerEventsChecker eventsChecker;
  /** Its open worker connections. */
  final List<SimConnection> connections = new ArrayList<>();
  long stepAt = -1;
  long stepToken;
  /** Until when (virtual ms) this process cannot reach the store (fault store-cut); 0 if it can. */
  long storeCutUntil;
  /**
   * Until when (virtual ms) its scheduler's commit waits for the store, as {@code JdbcStore}'s does for a lost
   * connection: no step runs before; 0 if none waits.
   */
  long commitWaitsUntil;

  /** Events for its event loops and scheduler loop that came while it was frozen, in order. */
  private final List<Runnable> backlog = new ArrayList<>();
  /** Its leadership thread's looks at the leader row that came due while it was frozen. */
  private final List<Runnable> leaseBacklog = new ArrayList<>();

  SimCoordinator(String name, int address, Store store, LeaderCheck leadership) {
    this.name = name;
    this.address = address;
    this.store = store;
    this.leadership = leadership;
  }

  /** Whether its worker port is open: alive and leading (frozen or not: the kernel still accepts). */
  boolean portOpen() {
    return alive && epoch != 0;
  }

  /** Runs {@code action} as this process: not at all if it is gone, after it thaws if it is frozen. */
  void local(Runnable action) {
    if (!alive) {
      return;
    }
    if (frozen) {
      backlog.add(action);
      return;
    }
    action.run();
  }

  /** As {@link #local}, for the leadership thread's look at the leader row. */
  void localLeaseCheck(Runnable action) {
    if (!alive) {
      return;
    }
    if (frozen) {
      leaseBacklog.add(action);
      return;
    }
    action.run();
  }

  /**
   * Resumes: everything that waited runs now. After SIGCONT every thread of the process is runnable at once;
   * {@code leaseFirst} says whether the leadership thread looks at the leader row before the event loops and
   * the scheduler's loop run what waited for them, or after (a thawed leader may try to commit before it
   * learns it was deposed: the store's fence, not the lease, must stop that write).
   */
  void thaw(boolean leaseFirst) {
    if (!alive || !frozen) {
      return;
    }
    frozen = false;
    List<Runnable> events = new ArrayList<>(backlog);
    List<Runnable> lease = new ArrayList<>(leaseBacklog);
    backlog.clear();
    leaseBacklog.clear();
    List<Runnable> order = new ArrayList<>();
    order.addAll(leaseFirst ? lease : events);
    order.addAll(leaseFirst ? events : lease);
    for (Runnable r : order) {
      local(r);
    }
  }

  /** The process is gone (killed, or exited after stepping down): nothing of it runs any more. */
  void gone() {
    alive = false;
    frozen = false;
    backlog.clear();
    leaseBacklog.clear();
  }

  @Override
  public String toString() {
    return name;
  }
}

package dev.tally.coordinator.net;

import io.netty.util.concurrent.EventExecutor;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one timer of every worker connection on one event loop: every {@link
 * WorkerServer.Settings#reapCheckPeriod()} it gives each of them its liveness check and, when due, its
 * heartbeat tick ({@link WorkerConnection#onSweep}).
 *
 * <p>Why one per loop and not two per connection: a timer per connection made the loop wake up on its own
 * for each of them, 12 times a second per worker at the defaults (a liveness check every 100 ms, a heartbeat
 * tick every 500 ms). With a thousand workers that was 12,000 wake-ups a second, spread so evenly that the
 * loops hardly ever blocked in {@code epoll_wait}: an idle coordinator took 66% of a core for 2,000
 * heartbeats a second ({@code tally bench-connections}, 2026-12-07), most of it polling its selector; with
 * one sweep per loop, 11% to 16%. A sweep wakes each loop 10 times a second whatever the number of workers,
 * and does the same checks.
 *
 * <p>Timing: a check runs every period, as before, from the sweep's phase rather than the connection's own;
 * a heartbeat tick runs on the first sweep at or after it is due, so at most one period late (see {@link
 * ConnectionCore#onSweep}). The timer runs only while the loop has a connection.
 *
 * <p>Failures: the timer must outlive any one connection's trouble, since Netty cancels a repeating task
 * for good, and silently, the first time it throws. What a connection's sweep throws, an {@link Error}
 * too, is logged and closes that connection (its worker is lost and its jobs go back to the queue); the
 * others are swept on.
 *
 * <p>Thread-safety: confined to its event loop; {@link #add} and {@link #remove} must be called there.
 */
final class ConnectionSweep {
  private static final Logger log = LoggerFactory.getLogger(ConnectionSweep.class);

  /** What a sweep needs of a connection ({@link WorkerConnection}; a stand-in in tests). */
  interface Swept {
    /** The connection's sweep: its liveness check, and its heartbeat tick when due. */
    void onSweep();

    /** Closes the connection after its sweep threw {@code failure}; must not throw. */
    void closeAfterSweepFailure(Throwable failure);
  }

  private final EventExecutor loop;
  private final long periodNanos;
  private final Set<Swept> connections = new LinkedHashSet<>();
  private ScheduledFuture<?> timer;
  /** The size of {@link #connections}, readable from any thread (tests). */
  private volatile int size;

  ConnectionSweep(EventExecutor loop, long periodNanos) {
    this.loop = loop;
    this.periodNanos = periodNanos;
  }

  /** Starts sweeping {@code connection} (and the timer, if it is the loop's first). */
  void add(Swept connection) {
    assert loop.inEventLoop();
    connections.add(connection);
    size = connections.size();
    if (timer == null) {
      timer = loop.scheduleAtFixedRate(this::sweep, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
    }
  }

  /** Stops sweeping {@code connection} (and the timer, if it was the loop's last). */
  void remove(Swept connection) {
    assert loop.inEventLoop();
    connections.remove(connection);
    size = connections.size();
    if (connections.isEmpty() && timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  /** How many connections the sweep holds; from any thread (for tests). */
  int size() {
    return size;
  }

  private void sweep() {
    // A copy: a check may close its connection, and Netty may report that before the loop moves on.
    for (Swept connection : connections.toArray(new Swept[0])) {
      try {
        connection.onSweep();
      } catch (Throwable failure) { // an Error too: see the class comment
        log.error("the sweep of the connection from {} failed; closing it", connection, failure);
        connection.closeAfterSweepFailure(failure);
      }
    }
  }
}

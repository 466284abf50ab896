package dev.tally.coordinator;

import dev.tally.core.DurationText;
import dev.tally.core.Ticker;
import dev.tally.core.lead.LeaderAddress;
import dev.tally.core.lead.LeaderLease;
import dev.tally.core.lead.LeaderRow;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver of one coordinator's {@link LeaderLease} over its store, on a thread of its own: each look at the
 * leader row is a {@link LeaderCheck} (read the row, ask the rule, carry its decision out with {@link
 * Store#swapLeader}, and set the epoch the store's writes carry with {@link Store#writeAs}), the one driver the
 * deterministic simulation runs too. The writes carry the lead's epoch once won, {@link Store#NOT_LEADING}
 * while standing by and after stepping down. It tells its {@link Listener} when this coordinator takes the lead and when it steps down; a
 * step-down is final for this instance (the coordinator that stepped down exits, see {@link Coordinator}).
 *
 * <p>A store that fails (unreachable, busy, restarting) is retried at the next check. A leader that has not
 * renewed for a whole lease by its own clock is in doubt ({@link LeaderLease#lapsed}): it says so, holds on,
 * and its first check that reaches the store renews the lead if the row is still its epoch, or steps down
 * if another epoch leads; without an answer within its patience it steps down ({@link
 * LeaderLease#outOfPatience}).
 *
 * <p>Thread-safety: {@link #tryOnce} before {@link #start} on the caller's thread; after it, every check
 * runs on this instance's one thread. {@link #lastSeen} and {@link #epoch} are safe from any thread.
 */
final class Leadership implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Leadership.class);

  /** What a leadership tells its coordinator. Called on the leadership's thread (or {@link #tryOnce}'s caller). */
  interface Listener {
    /** This coordinator now leads under {@code epoch}; the store's writes already carry it. */
    void lead(long epoch);

    /** This coordinator no longer leads (it did); the store already refuses its writes. */
    void stepDown(String why);
  }

  private final Store store;
  private final LeaderLease lease;
  /** The one look at the leader row, carried out (shared with the simulation). */
  private final LeaderCheck check;
  private final Supplier<LeaderAddress> address;
  private final Ticker ticker;
  private final ScheduledExecutorService thread;
  private volatile Listener listener;
  private volatile LeaderRow lastSeen = LeaderRow.NONE;
  private volatile long epoch;
  private volatile boolean steppedDown;

  Leadership(Store store, LeaderLease lease, Supplier<LeaderAddress> address, Ticker ticker) {
    this.store = Objects.requireNonNull(store, "store");
    this.lease = Objects.requireNonNull(lease, "lease");
    this.address = Objects.requireNonNull(address, "address");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tally-leadership");
      t.setDaemon(true);
      return t;
    });
    this.check = new LeaderCheck(store, lease); // until the lead is won, this coordinator writes nothing
  }

  /**
   * Looks at the row once and takes the lead if it can.
   *
   * @return whether this coordinator leads now
   * @throws StoreException if the store fails
   */
  boolean tryOnce() {
    return check(false);
  }

  /** Starts checking in the background, telling {@code listener} of every change; returns at once. */
  void start(Listener listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    schedule();
  }

  private void schedule() {
    if (steppedDown || thread.isShutdown()) {
      return;
    }
    try {
      thread.schedule(this::checkInBackground, lease.nextCheckIn().toNanos(), TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      // closed meanwhile: nothing more to check
    }
  }

  /**
   * Looks at the row now, in the background, besides the scheduled looks: a leader whose address changed (its
   * API bound after it won the lead) renews at once with the new one, so that standbys and clients see it.
   */
  void lookNow() {
    try {
      thread.execute(() -> {
        try {
          synchronized (lease) {
            if (listener == null || !lease.leading()) {
              return; // only a leader's renewal: winning the lead is the scheduled looks' business
            }
          }
          check(true);
        } catch (RuntimeException e) {
          log.debug("an early look at the store's leader row failed (the next scheduled one retries): {}", e.toString());
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      // closed meanwhile: nothing more to say
    }
  }

  private void checkInBackground() {
    try {
      check(true);
    } catch (RuntimeException e) {
      LeaderCheck.Outcome o;
      synchronized (lease) {
        o = check.failed(ticker.nanos(), e.getMessage());
      }
      if (o instanceof LeaderCheck.SteppedDown s) {
        stepDown(s);
        return;
      }
      LeaderLease.Settings timing = lease.settings();
      if (o instanceof LeaderCheck.Unanswered u && u.doubtBegins()) {
        log.warn("could not renew the lead of epoch {} for {} (its lease is {}): a standby may lead by now; holding on, in"
            + " doubt, until {} past the lease: the first look that reaches the store renews the lead if no other epoch"
            + " took it, and steps down if one did: {}", epoch, millis(u.sinceRenewalNanos()), DurationText.text(timing.lease()),
            DurationText.text(timing.patience()), e.toString());
      } else {
        log.warn("could not look at the store's leader row (retrying in {} ms): {}", lease.nextCheckIn().toMillis(), e.toString());
      }
    }
    schedule();
  }

  private boolean check(boolean tell) {
    synchronized (lease) { // the rule is one thread's; release() may come from a closing thread
      if (steppedDown) {
        return false;
      }
      return checkLocked(tell);
    }
  }

  private boolean checkLocked(boolean tell) {
    LeaderCheck.Outcome o = check.check(address.get(), ticker::nanos);
    lastSeen = check.lastSeen();
    if (o instanceof LeaderCheck.SteppedDown s) {
      stepDown(s);
      return false;
    }
    if (o instanceof LeaderCheck.Leads l && l.lateSinceNanos().isPresent()) {
      log.warn("renewed the lead of epoch {} {} after its last renewal (its lease is {}): no other coordinator had taken"
          + " it meanwhile", epoch, millis(ticker.nanos() - l.lateSinceNanos().getAsLong()),
          DurationText.text(lease.settings().lease()));
    }
    if (o instanceof LeaderCheck.Leads l && l.tookOver()) {
      epoch = l.epoch();
      log.info("leading the store under epoch {} (the previous leader's lease {})", epoch,
          l.previous().holder() == null ? "was never held" : "had lapsed");
      if (tell) {
        listener.lead(epoch);
      }
    }
    return lease.leading();
  }

  /** {@code nanos} in words, to the millisecond. */
  private static String millis(long nanos) {
    return DurationText.text(java.time.Duration.ofMillis(nanos / 1_000_000));
  }

  private void stepDown(LeaderCheck.SteppedDown s) {
    steppedDown = true;
    log.error("stepping down from the lead of epoch {}: {}", epoch, s.why());
    Listener l = listener;
    if (l != null) {
      l.stepDown(s.why());
    }
  }

  /**
   * Gives the lead up at once ({@link LeaderLease#release}), for a leader closing cleanly; the store refuses
   * this coordinator's writes from here. Call after {@link #close}. A store that fails is logged: the lease
   * then lapses by itself.
   */
  void release() {
    store.writeAs(Store.NOT_LEADING);
    steppedDown = true;
    try {
      synchronized (lease) {
        LeaderLease.Renew swap = lease.release(store.leader());
        if (swap != null && store.swapLeader(swap.expected(), swap.next())) {
          log.info("gave up the lead of epoch {}: a standby may lead at once", swap.next().epoch());
        }
      }
    } catch (RuntimeException e) {
      log.warn("could not give up the lead (it lapses by itself within {} ms): {}", lease.settings().lease().toMillis(),
          e.toString());
    }
  }

  /** The leader row as last read or written by this coordinator: where to send whoever asks a standby. */
  LeaderRow lastSeen() {
    return lastSeen;
  }

  /** The epoch this coordinator leads under, or 0 if it does not (yet, or any more). */
  long epoch() {
    return steppedDown ? 0 : epoch;
  }

  /** The lease's timing. */
  LeaderLease.Settings settings() {
    return lease.settings();
  }

  /** Stops checking (the lease then lapses unless renewed elsewhere); idempotent. */
  @Override
  public void close() {
    thread.shutdownNow();
  }
}

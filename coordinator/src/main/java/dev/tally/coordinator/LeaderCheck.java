package dev.tally.coordinator;

import dev.tally.core.lead.LeaderAddress;
import dev.tally.core.lead.LeaderLease;
import dev.tally.core.lead.LeaderRead;
import dev.tally.core.lead.LeaderRow;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import java.util.Objects;

/**
 * One look of one coordinator at its store's leader row, carried out: read the row, ask the {@link
 * LeaderLease} rule, make its compare-and-set ({@link Store#swapLeader}), and set the epoch the store's
 * writes carry ({@link Store#writeAs}): the lead's epoch once won, {@link Store#NOT_LEADING} before that and
 * after a step-down. No thread and no clock of its own (the caller passes its monotonic time), so the
 * product's {@link Leadership} runs it on its thread and the deterministic simulation runs it under
 * virtual time: both take the lead and step down by this one driver.
 *
 * <p>Thread-safety: not thread-safe; one thread at a time (the caller serializes).
 */
public final class LeaderCheck {

  /** What one look came to. */
  public sealed interface Outcome {}

  /**
   * This coordinator leads under {@code epoch}; the store's writes carry it.
   *
   * @param epoch the lead's epoch
   * @param tookOver true if this look won the lead (an acquire), false for a renewal
   * @param previous the row as read before the swap (the previous leader's, on a takeover)
   * @param lateSinceNanos for a renewal made after the lease had lapsed by this coordinator's clock (its
   *     looks failed, or it was frozen), the caller's clock at the renewal before it, so that the caller can
   *     say how long the lead went without one; else empty
   */
  public record Leads(long epoch, boolean tookOver, LeaderRow previous, java.util.OptionalLong lateSinceNanos) implements Outcome {
    /** A takeover, or a renewal within the lease. */
    public Leads(long epoch, boolean tookOver, LeaderRow previous) {
      this(epoch, tookOver, previous, java.util.OptionalLong.empty());
    }
  }

  /**
   * The look failed (the store unreachable, busy or restarting) and changed nothing; the caller looks again
   * at its next interval.
   *
   * @param inDoubt whether this coordinator leads and has gone a whole lease without renewing ({@link
   *     LeaderLease#lapsed}): a standby may lead by now, and it holds on until a look reaches the store or its
   *     patience runs out
   * @param doubtBegins whether this failed look is the first in doubt (for a driver that says so once)
   * @param sinceRenewalNanos how long ago, by the caller's clock, the lead was last renewed, in ns; 0 if
   *     this coordinator does not lead
   */
  public record Unanswered(boolean inDoubt, boolean doubtBegins, long sinceRenewalNanos) implements Outcome {}

  /**
   * Another coordinator leads and its lease holds.
   *
   * @param leader its row, for its address
   */
  public record StandsBy(LeaderRow leader) implements Outcome {}

  /**
   * This coordinator led and no longer does (another epoch took over, a renewal lost its swap, or it could
   * not renew for a whole lease and its patience after it); the store already refuses its writes. Final for
   * this instance.
   *
   * @param why for the log
   */
  public record SteppedDown(String why) implements Outcome {}

  private final Store store;
  private final LeaderLease lease;
  private LeaderRow lastSeen = LeaderRow.NONE;
  /** Whether the lead is in doubt: a look failed after a whole lease without a renewal. */
  private boolean inDoubt;

  /**
   * Sets the store's write epoch to {@link Store#NOT_LEADING}: until the lead is won, this coordinator writes
   * nothing.
   *
   * @param store this coordinator's own store instance (its write epoch is this coordinator's alone)
   * @param lease the rule, with this coordinator's holder id and the lease's timing
   */
  public LeaderCheck(Store store, LeaderLease lease) {
    this.store = Objects.requireNonNull(store, "store");
    this.lease = Objects.requireNonNull(lease, "lease");
    store.writeAs(Store.NOT_LEADING);
  }

  /**
   * Looks at the row once and acts on the rule's decision, at the caller's time {@code nowNanos} (a look
   * that takes no time: the simulation's, and tests').
   *
   * @see #check(LeaderAddress, java.util.function.LongSupplier)
   */
  public Outcome check(LeaderAddress address, long nowNanos) {
    return check(address, () -> nowNanos);
  }

  /**
   * Looks at the row once and acts on the rule's decision.
   *
   * @param address where this coordinator can be reached, advertised while it leads
   * @param clock the caller's monotonic clock, in ns, read when the row has been read: a renewal counts
   *     from then (a read may first wait seconds for a connection, and a renewal counted from before that
   *     wait was stale at birth: the next look took the lease for lapsed again)
   * @return what this coordinator is now; a {@link SteppedDown} only if it led before this look
   * @throws StoreException if the store fails (the caller retries at its next look, and steps down once the
   *     lead is {@link LeaderLease#outOfPatience})
   */
  public Outcome check(LeaderAddress address, java.util.function.LongSupplier clock) {
    LeaderRead read = store.leader();
    long readAtNanos = clock.getAsLong();
    java.util.OptionalLong lateSince = lease.lapsed(readAtNanos)
        ? java.util.OptionalLong.of(readAtNanos - lease.sinceRenewalNanos(readAtNanos)) : java.util.OptionalLong.empty();
    lastSeen = read.row();
    LeaderLease.Decision d = lease.decide(read, address);
    if (d instanceof LeaderLease.StepDown s) {
      return stepDown(s);
    }
    if (d instanceof LeaderLease.StandBy s) {
      return new StandsBy(s.leader());
    }
    boolean acquire = d instanceof LeaderLease.Acquire;
    LeaderRow expected = acquire ? ((LeaderLease.Acquire) d).expected() : ((LeaderLease.Renew) d).expected();
    LeaderRow next = acquire ? ((LeaderLease.Acquire) d).next() : ((LeaderLease.Renew) d).next();
    boolean won = store.swapLeader(expected, next);
    LeaderLease.StepDown lost = lease.swapped(d, won, readAtNanos);
    if (lost != null) {
      return stepDown(lost);
    }
    if (!won) {
      return new StandsBy(lastSeen); // another standby won the race for the lapsed lease
    }
    lastSeen = next;
    if (acquire) {
      store.writeAs(next.epoch());
    }
    inDoubt = false;
    return new Leads(next.epoch(), acquire, read.row(), acquire ? java.util.OptionalLong.empty() : lateSince);
  }

  /**
   * Acts on a look that failed ({@link #check} threw): the one rule for a coordinator that cannot reach its
   * store. For a leader, within a lease of its last renewal nothing changes; past it, the lead is in doubt and
   * held; past the lease and its patience ({@link LeaderLease#outOfPatience}), it steps down. A standby is
   * blind meanwhile ({@link LeaderLease#unanswered}): once it reads again, it gives the leader a lease.
   *
   * @param nowNanos the caller's monotonic clock
   * @param failure what failed, for the step-down's reason
   * @return {@link SteppedDown} if the patience is spent, else {@link Unanswered}
   */
  public Outcome failed(long nowNanos, String failure) {
    lease.unanswered();
    LeaderLease.Settings timing = lease.settings();
    if (lease.outOfPatience(nowNanos)) {
      inDoubt = false;
      return stepDown("could not renew the lead of epoch " + lease.epoch() + " for a whole lease ("
          + dev.tally.core.DurationText.text(timing.lease()) + ") and the patience after it ("
          + dev.tally.core.DurationText.text(timing.patience()) + "): " + failure);
    }
    boolean doubt = lease.lapsed(nowNanos);
    boolean begins = doubt && !inDoubt;
    inDoubt = doubt;
    return new Unanswered(doubt, begins, lease.sinceRenewalNanos(nowNanos));
  }

  /**
   * Steps down for a reason of the caller's (a lead in doubt past its patience, a commit the store refused): the store refuses
   * this coordinator's writes from here.
   */
  public SteppedDown stepDown(String why) {
    return stepDown(lease.stepDown(why));
  }

  private SteppedDown stepDown(LeaderLease.StepDown s) {
    store.writeAs(Store.NOT_LEADING);
    return new SteppedDown(s.why());
  }

  /** The leader row as last read or written by this coordinator. */
  public LeaderRow lastSeen() {
    return lastSeen;
  }

  /** The rule this driver carries out. */
  public LeaderLease lease() {
    return lease;
  }
}

package dev.tally.core.lead;

import java.time.Duration;
import java.util.Objects;

/**
 * The leader-lease rule of one coordinator: given the store's leader row and the store's clock, whether to
 * take the lead, renew it, stand by, or step down. No I/O and no clock of its own (times are passed in), so
 * the simulation and the tests drive it; a driver ({@code coordinator}'s {@code Leadership}) reads the row,
 * asks {@link #decide}, carries the decision out as one compare-and-set of the row ({@code
 * Store.swapLeader}), and reports how that went ({@link #swapped}).
 *
 * <p><b>The rule.</b> A lease is a promise that lapses unless renewed (Gray and Cheriton, "Leases", 1989):
 *
 * <ul>
 *   <li>a coordinator that does not lead takes the lead when the row's lease has lapsed by the store's
 *       clock (or nobody ever held it): the row's epoch plus one, itself as holder, expiring one lease from
 *       the store's now; otherwise it stands by, and says where the leader is. A standby whose own looks
 *       failed ({@link #unanswered}: it could not reach the store either) gives the row it first reads again
 *       a whole lease before it takes over, unless the row changes meanwhile: its leader may have been cut
 *       off as long (a database restarting), and renews if it lives. Without that, after an outage longer
 *       than the lease, a standby (looking every half second) usually won the lapsed row before the leader
 *       (renewing every second) could renew it, and a live leader was replaced for nothing. A standby's
 *       first look does the same with a row that lapsed less than a lease before: it may have started
 *       during such an outage ({@code tally chaos} saw a server restarted then take over from a live
 *       leader whose renewal was a second late); a row that lapsed longer ago is taken at once;
 *   <li>a leader renews while the row is still its epoch: same epoch, expiry one lease from the store's
 *       now;
 *   <li>a leader steps down when the row names another epoch (a standby took over while it could not
 *       renew: frozen, or cut off from the store), or when a renewal's compare-and-set fails;
 *   <li>a leader that could not renew for a whole lease by its own clock ({@link #lapsed}) is <em>in
 *       doubt</em>: a standby may lead by now, or the store may be down for every coordinator alike (a
 *       database restarting). It holds on for {@link Settings#patience} more, and its next look that
 *       reaches the store settles it: the row still its epoch, it renews (nobody took over, since a
 *       takeover changes the epoch); another epoch, it steps down. It steps down once the patience is spent
 *       without an answer ({@link #outOfPatience}).
 * </ul>
 *
 * <p>The compare-and-set holds the whole row (epoch, holder, expiry): two standbys that both find the lease
 * lapsed race for one swap and one wins; a standby that read the row just before a renewal fails its swap.
 * Safety does not rest on this rule's timing: the store refuses every write whose epoch is not the row's,
 * so a leader that wakes after a takeover writes nothing even before it learns it was deposed, and a leader
 * in doubt hands out no lease a successor also hands out (a lease reaches a worker only after its commit,
 * which carries the epoch). The timing only decides how soon a standby leads: after a {@code kill -9} or
 * SIGSTOP of the leader, within one lease plus one standby retry (3.5 s with {@code CoordinatorBuilder}'s
 * defaults). The patience trades one case for another: a database restarting for less than the lease plus
 * the patience costs a lone leader nothing (without it, a {@code tally run} stopped after 3 s of a restart);
 * a leader cut off from a store its standby still reaches keeps its workers, idle, for up to that long
 * before it steps down and they move to the new leader.
 *
 * <p>Thread-safety: not thread-safe; one driver thread owns an instance.
 */
public final class LeaderLease {

  /**
   * How long a lease holds, how often a leader renews it, and how often a standby looks at the row.
   *
   * <p>The lease must hold several renewals: too close to the renewal interval and one slow commit (a
   * checkpoint, a busy disk) costs the leader its lead; too long and a standby waits that long after the
   * leader dies. The retry interval adds to the takeover time at most once.
   *
   * @param lease how long a lease holds unless renewed
   * @param renewEvery how often a leader renews; less than half the lease, so one missed renewal is survived
   * @param retryEvery how often a standby reads the row
   * @param patience how long past a lapsed lease a leader that cannot reach its store holds on, in doubt,
   *     before it steps down ({@link LeaderLease#outOfPatience}); zero steps down at the lapse
   */
  public record Settings(Duration lease, Duration renewEvery, Duration retryEvery, Duration patience) {
    /**
     * @throws IllegalArgumentException if {@code lease}, {@code renewEvery} or {@code retryEvery} is not
     *     positive, {@code patience} is negative, or {@code renewEvery} is not below half of {@code lease}
     */
    public Settings {
      positive("the leader lease", lease);
      positive("the leader lease renewal interval", renewEvery);
      positive("the standby retry interval", retryEvery);
      Objects.requireNonNull(patience, "the leader's patience");
      if (patience.isNegative()) {
        throw new IllegalArgumentException("the leader's patience must not be negative, got " + patience.toMillis() + "ms");
      }
      if (renewEvery.multipliedBy(2).compareTo(lease) >= 0) {
        throw new IllegalArgumentException("the leader lease (" + lease.toMillis() + "ms) must hold more than two renewals ("
            + renewEvery.toMillis() + "ms each), so that one late renewal does not cost the lead");
      }
    }

    private static void positive(String what, Duration d) {
      Objects.requireNonNull(d, what);
      if (d.isZero() || d.isNegative()) {
        throw new IllegalArgumentException(what + " must be positive, got " + d.toMillis() + "ms");
      }
    }
  }

  /** What to do now. */
  public sealed interface Decision {}

  /**
   * Swap {@code expected} for {@code next} to take the lead under {@code next.epoch()}.
   *
   * @param expected the row as read
   * @param next the row to write
   */
  public record Acquire(LeaderRow expected, LeaderRow next) implements Decision {}

  /**
   * Swap {@code expected} for {@code next} to renew the lead (same epoch, later expiry).
   *
   * @param expected the row as read
   * @param next the row to write
   */
  public record Renew(LeaderRow expected, LeaderRow next) implements Decision {}

  /**
   * Another coordinator leads and its lease holds: stand by.
   *
   * @param leader the leader's row, for its address
   */
  public record StandBy(LeaderRow leader) implements Decision {}

  /**
   * This leader has lost the lead, or cannot know it still has it: stop leasing and step down.
   *
   * @param why for the log: which epoch took over, or what failed
   */
  public record StepDown(String why) implements Decision {}

  private final String holder;
  private final Settings settings;
  /** The epoch this coordinator leads under, or 0 while it does not lead. */
  private long epoch;
  /** When the last successful swap (taking or renewing the lead) was decided, in the caller's nanos. */
  private long renewedAtNanos;
  /** Whether a look of this standby failed since it last read the row ({@link #unanswered}). */
  private boolean blind;
  /** Whether this coordinator has read the row yet. */
  private boolean looked;
  /** The row a standby first read after being blind, while it gives that row's leader a lease; else null. */
  private LeaderRow regained;
  /** When (the store's clock, ms) the standby read {@link #regained}. */
  private long regainedAtStoreMillis;

  /**
   * @param holder this coordinator's id, unique among the coordinators of one store (a random UUID)
   * @param settings the lease's timing
   * @throws IllegalArgumentException if {@code holder} is blank
   */
  public LeaderLease(String holder, Settings settings) {
    this.holder = Objects.requireNonNull(holder, "holder");
    if (holder.isBlank()) {
      throw new IllegalArgumentException("a leader's holder id must not be blank");
    }
    this.settings = Objects.requireNonNull(settings, "settings");
  }

  /**
   * Decides what to do with the row as just read.
   *
   * @param read the row and the store's clock at the read
   * @param address where this coordinator can be reached, advertised when it takes or renews the lead
   * @return the decision; a {@link StepDown} also ends this coordinator's lead here
   */
  public Decision decide(LeaderRead read, LeaderAddress address) {
    LeaderRow row = read.row();
    String text = address.text().isEmpty() ? null : address.text();
    long expires = read.storeNowMillis() + settings.lease().toMillis();
    if (epoch != 0) {
      if (row.epoch() != epoch) {
        return stepDown("epoch " + row.epoch() + " took the lead (" + row.leaderAddress() + ") while this coordinator held epoch "
            + epoch);
      }
      return new Renew(row, new LeaderRow(epoch, holder, text, expires));
    }
    boolean firstLook = !looked;
    looked = true;
    // A standby that just started has seen nothing of the leader either: a row that lapsed less than a lease
    // ago may be a live leader reconnecting after an outage that also kept this standby from starting.
    // A row given up on closing has no leader to come back: taken at once.
    if (row.released()) {
      blind = false;
    } else if (blind || firstLook && row.lapsedAt(read.storeNowMillis())
        && !row.lapsedAt(read.storeNowMillis() - settings.lease().toMillis())) {
      blind = false;
      regained = row;
      regainedAtStoreMillis = read.storeNowMillis();
    }
    if (regained != null) {
      if (row.equals(regained) && row.holder() != null
          && read.storeNowMillis() - regainedAtStoreMillis < settings.lease().toMillis()) {
        return new StandBy(row); // its leader may have been as cut off as this standby: it gets a lease to renew
      }
      regained = null;
    }
    if (row.lapsedAt(read.storeNowMillis())) {
      return new Acquire(row, new LeaderRow(row.epoch() + 1, holder, text, expires));
    }
    return new StandBy(row);
  }

  /**
   * Reports a look that did not reach the store. A standby is then blind to it: its next successful read
   * gives the row it finds a whole lease before it may take over (see the class comment). Nothing changes for
   * a leader (its doubt is {@link #lapsed}).
   */
  public void unanswered() {
    if (epoch == 0) {
      blind = true;
    }
  }

  /**
   * Reports how the swap of an {@link Acquire} or {@link Renew} went.
   *
   * @param decision the decision carried out
   * @param won whether the store swapped the row
   * @param decidedAtNanos the caller's monotonic clock when it read the row the decision came from
   * @return the next decision if the swap changes what this coordinator is: a {@link StepDown} for a lost
   *     renewal; else null
   * @throws IllegalArgumentException if {@code decision} is neither an acquire nor a renewal
   */
  public StepDown swapped(Decision decision, boolean won, long decidedAtNanos) {
    if (decision instanceof Acquire a) {
      if (won) {
        epoch = a.next().epoch();
        renewedAtNanos = decidedAtNanos;
      }
      return null;
    }
    if (decision instanceof Renew r) {
      if (won) {
        renewedAtNanos = decidedAtNanos;
        return null;
      }
      return stepDown("the renewal of epoch " + r.next().epoch() + " found the leader row changed");
    }
    throw new IllegalArgumentException("only an acquire or a renewal is swapped, got " + decision);
  }

  /**
   * Whether this leader has gone a whole lease without a successful renewal, by its own clock: it is in
   * doubt, since a standby may lead by now. Its next look that reaches the store settles it ({@link
   * #decide}); until then it holds on, unless {@link #outOfPatience}.
   *
   * @param nowNanos the caller's monotonic clock
   * @return true if leading and the last renewal is a lease or more ago
   */
  public boolean lapsed(long nowNanos) {
    return epoch != 0 && nowNanos - renewedAtNanos >= settings.lease().toNanos();
  }

  /**
   * Whether this leader has been in doubt for the whole {@link Settings#patience}: a driver that cannot
   * read or write the store asks this, and steps down on true.
   *
   * @param nowNanos the caller's monotonic clock
   * @return true if leading and the last renewal is a lease plus the patience or more ago
   */
  public boolean outOfPatience(long nowNanos) {
    return epoch != 0 && nowNanos - renewedAtNanos >= settings.lease().plus(settings.patience()).toNanos();
  }

  /**
   * How long ago, by the caller's clock, this leader last renewed its lead.
   *
   * @param nowNanos the caller's monotonic clock
   * @return the time since the last successful swap, in ns; 0 if not leading
   */
  public long sinceRenewalNanos(long nowNanos) {
    return epoch == 0 ? 0 : nowNanos - renewedAtNanos;
  }

  /**
   * Ends this coordinator's lead here (the driver steps down for a reason of its own, such as {@link
   * #outOfPatience}).
   *
   * @return the step-down, with {@code why}
   */
  public StepDown stepDown(String why) {
    epoch = 0;
    return new StepDown(why);
  }

  /**
   * The swap that gives the lead up at once, for a leader closing cleanly: its own row, marked given up
   * ({@link LeaderRow#RELEASED_EXPIRY}), so that a standby, or a coordinator's first look, takes over at once
   * instead of a whole lease later (a row that merely lapsed may have a leader coming back; this one has
   * not). Ends the lead here, whether or not the swap is then won.
   *
   * @param read the row and the store's clock, just read
   * @return the swap to make, or null if this coordinator does not lead or the row is no longer its epoch
   */
  public Renew release(LeaderRead read) {
    long mine = epoch;
    epoch = 0;
    LeaderRow row = read.row();
    if (mine == 0 || row.epoch() != mine) {
      return null;
    }
    return new Renew(row, new LeaderRow(mine, row.holder(), row.address(), LeaderRow.RELEASED_EXPIRY));
  }

  /** Whether this coordinator leads, as far as it knows. */
  public boolean leading() {
    return epoch != 0;
  }

  /** The epoch it leads under, or 0. */
  public long epoch() {
    return epoch;
  }

  /** This coordinator's holder id. */
  public String holder() {
    return holder;
  }

  /** How long to wait before the next read: the renewal interval while leading, else the standby retry. */
  public Duration nextCheckIn() {
    return epoch != 0 ? settings.renewEvery() : settings.retryEvery();
  }

  /** The timing. */
  public Settings settings() {
    return settings;
  }
}

package dev.tally.core.lead;

/**
 * The store's one leader row ({@code coordinator_leader}): which coordinator leads the store, under which
 * epoch, where it can be reached, and until when its lease holds unless renewed.
 *
 * <p>The epoch grows by one with every new leader and never goes back, so it names one leadership: every
 * write transaction of a leader carries its epoch, and the store refuses one whose epoch is no longer the
 * row's ({@link dev.tally.core.store.StaleEpochException}). It is fencing one level above the jobs' fencing
 * tokens (Kleppmann, "How to do distributed locking", 2016; Chubby's sequencers, Burrows 2006).
 *
 * @param epoch the leadership's number; 0 before any coordinator has led the store
 * @param holder the leading coordinator's id (random per process), or null before any has led
 * @param address where the leader can be reached ({@link LeaderAddress#text()}), or null if it said nothing
 * @param expiresAtMillis when the lease lapses unless renewed, by the store's clock, epoch ms (0: never held)
 */
public record LeaderRow(long epoch, String holder, String address, long expiresAtMillis) {

  /** The row of a store no coordinator has led yet: what the migration inserts. */
  public static final LeaderRow NONE = new LeaderRow(0, null, null, 0);

  /**
   * @throws IllegalArgumentException if the epoch is negative
   */
  public LeaderRow {
    if (epoch < 0) {
      throw new IllegalArgumentException("a leader epoch is never negative, got " + epoch);
    }
  }

  /**
   * The expiry of a row its leader gave up on closing ({@link LeaderLease#release}): lapsed long before any
   * store's now, so that no coordinator mistakes it for a leader that just failed to renew and may be back.
   */
  public static final long RELEASED_EXPIRY = 0;

  /** Whether the lease has lapsed (or was never held) at {@code storeNowMillis}, the store's clock. */
  public boolean lapsedAt(long storeNowMillis) {
    return holder == null || storeNowMillis >= expiresAtMillis;
  }

  /** Whether its leader gave the lead up on closing ({@link #RELEASED_EXPIRY}): the next to look leads. */
  public boolean released() {
    return holder != null && expiresAtMillis == RELEASED_EXPIRY;
  }

  /** Where the leader said it can be reached, parsed; {@link LeaderAddress#UNKNOWN} if it said nothing. */
  public LeaderAddress leaderAddress() {
    return LeaderAddress.parse(address);
  }

  /**
   * The check every store makes of a swap's arguments ({@code Store.swapLeader}): a renewal keeps the
   * epoch, a takeover adds one, and the row swapped in names its holder.
   *
   * @throws IllegalArgumentException if {@code next}'s epoch is neither, or it names no holder
   * @throws NullPointerException if either row is null
   */
  public static void checkSwap(LeaderRow expected, LeaderRow next) {
    java.util.Objects.requireNonNull(expected, "expected");
    java.util.Objects.requireNonNull(next, "next");
    if (next.epoch() != expected.epoch() && next.epoch() != expected.epoch() + 1) {
      throw new IllegalArgumentException("a leader row's epoch is kept (a renewal) or grows by one (a takeover): "
          + expected.epoch() + " cannot become " + next.epoch());
    }
    if (next.holder() == null) {
      throw new IllegalArgumentException("a leader row swapped in names its holder");
    }
  }
}

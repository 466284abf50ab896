package dev.tally.core.store;

/**
 * A write refused because the writer does not lead the store: its leader epoch is no longer the store's
 * (another coordinator took over), or it never led (a standby). Nothing of the transaction was written.
 *
 * <p>A leader that meets it steps down: it must not go on leasing, recording or acking, since another
 * coordinator now owns the store's jobs. It is never worth retrying: the epoch never comes back.
 */
public class StaleEpochException extends StoreException {
  private final long writerEpoch;
  private final long storeEpoch;
  private final String leaderAddress;

  /**
   * @param writerEpoch the epoch the refused write carried ({@link Store#NOT_LEADING} for a standby, or a leader
   *     that stepped down)
   * @param storeEpoch the epoch of the store's leader row at the refusal
   * @param leaderAddress where the store's leader can be reached (the row's text), or null if unknown
   */
  public StaleEpochException(long writerEpoch, long storeEpoch, String leaderAddress) {
    super(message(writerEpoch, storeEpoch, leaderAddress));
    this.writerEpoch = writerEpoch;
    this.storeEpoch = storeEpoch;
    this.leaderAddress = leaderAddress;
  }

  private static String message(long writerEpoch, long storeEpoch, String leaderAddress) {
    String leader = dev.tally.core.lead.LeaderAddress.parse(leaderAddress).toString();
    return (writerEpoch == Store.NOT_LEADING
        ? "this coordinator does not lead the store (a standby, or a leader that stepped down)"
        : "this coordinator's leader epoch " + writerEpoch + " is stale")
        + "; the store's leader is epoch " + storeEpoch + " at " + leader + "; nothing was written";
  }

  /** The epoch the refused write carried ({@link Store#NOT_LEADING} for a standby). */
  public long writerEpoch() {
    return writerEpoch;
  }

  /** The store's leader epoch at the refusal. */
  public long storeEpoch() {
    return storeEpoch;
  }

  /** The leader row's address text at the refusal, or null. */
  public String leaderAddress() {
    return leaderAddress;
  }
}

package dev.tally.core.lead;

/**
 * The leader row as one read of the store found it, with the store's clock at that read: a lease is
 * judged by the store's clock (PostgreSQL's {@code now()}; SQLite, whose every coordinator runs on the
 * one machine with the file, by that machine's clock), so coordinators' clocks need not agree.
 *
 * @param row the row read
 * @param storeNowMillis the store's wall clock at the read, epoch ms
 */
public record LeaderRead(LeaderRow row, long storeNowMillis) {
  /**
   * @throws NullPointerException if {@code row} is null
   */
  public LeaderRead {
    java.util.Objects.requireNonNull(row, "row");
  }
}

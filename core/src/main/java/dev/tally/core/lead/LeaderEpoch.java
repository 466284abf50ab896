package dev.tally.core.lead;

/**
 * One epoch that led a store, as the store's history of leaderships keeps it ({@code leader_epochs}): who
 * led, from when, and how many write transactions it committed. The count is bumped by the very statements
 * that fence each write, so once a later epoch leads, a deposed epoch's count is final: if it ever moves
 * again, a deposed leader wrote.
 *
 * @param epoch the leadership's number (1 or more)
 * @param holder the leading coordinator's id (random per process)
 * @param address where it could be reached ({@link LeaderAddress#text()}), or null if it said nothing
 * @param beganAtMillis when it took the lead, by the store's clock, epoch ms
 * @param writes the write transactions committed under this epoch
 */
public record LeaderEpoch(long epoch, String holder, String address, long beganAtMillis, long writes) {
  /**
   * @throws IllegalArgumentException if {@code epoch} is below 1 or {@code writes} is negative
   */
  public LeaderEpoch {
    if (epoch < 1 || writes < 0) {
      throw new IllegalArgumentException("a led epoch is 1 or more and its writes never negative, got epoch " + epoch
          + " with " + writes + " writes");
    }
  }
}

package dev.tally.cli.chaos;

import dev.tally.core.lead.LeaderAddress;
import dev.tally.core.lead.LeaderEpoch;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@code tally chaos} with several coordinators learns of its store's leadership, and the checks on
 * it. Each look hands it the store's history of epochs ({@code JdbcStore.leaderEpochs}, one snapshot): a
 * newest epoch it has not seen is a takeover, put down to the coordinator fault that awaited one (and timed
 * from that fault to the epoch's start by the store's clock) or else unprompted; and every epoch older than
 * the newest is deposed, its count of write transactions kept as first seen so. A deposed epoch's count is
 * final by the store's fence (the takeover's swap and the epoch's writes serialise on the leader row), so
 * if it ever moves, a deposed leader wrote.
 *
 * <p>The checks ({@link #violations}): every epoch from the first to the newest led (the epoch grew by one
 * per takeover and by nothing else), no deposed epoch wrote after its deposition, and every coordinator
 * fault was followed by a takeover.
 *
 * <p>Thread-safety: not thread-safe; the chaos loop's thread owns it.
 */
final class LeaderWatch {
  /**
   * One takeover.
   *
   * @param epoch the new leader's epoch
   * @param leader where it leads ({@link LeaderAddress#text()}), or null if it said nothing
   * @param cause the label of the fault that deposed the old leader, or null if none did (unprompted)
   * @param deposedLeader where the deposed leader was, or null
   * @param tookMillis from the fault to the new epoch's start, by the store's clock, ms; -1 if unprompted
   */
  record Takeover(long epoch, String leader, String cause, String deposedLeader, long tookMillis) {
    boolean prompted() {
      return cause != null;
    }
  }

  /** A coordinator fault that awaits its takeover. */
  private record Fault(String label, long epoch, long atWallMillis) {}

  private long firstEpoch = -1;
  private LeaderEpoch newest;
  private final Map<Long, Long> writesWhenDeposed = new TreeMap<>();
  private final List<Takeover> takeovers = new ArrayList<>();
  private Fault pending;

  /**
   * Notes a fault done to the leader of the newest epoch seen: the next takeover is put down to it.
   *
   * @param label the fault's label, for the report
   * @param atWallMillis when it was done, epoch ms (the store's clock on this machine)
   * @throws IllegalStateException if no leader has been seen yet, or a fault awaits its takeover already
   */
  void faultDone(String label, long atWallMillis) {
    if (newest == null || pending != null) {
      throw new IllegalStateException("a leader fault needs a leader seen and no fault awaiting its takeover");
    }
    pending = new Fault(label, newest.epoch(), atWallMillis);
  }

  /** Whether a coordinator fault still awaits its takeover. */
  boolean awaitingTakeover() {
    return pending != null;
  }

  /** The newest epoch seen, or null before any coordinator led. */
  LeaderEpoch leader() {
    return newest;
  }

  /** Where the newest epoch's leader takes workers ({@code HOST:PORT}), or null if unknown. */
  String leaderWorkerAddress() {
    return newest == null ? null : LeaderAddress.parse(newest.address()).workers();
  }

  /**
   * Takes one look at the store's epochs.
   *
   * @param epochs {@code leader_epochs}, oldest first, read in one snapshot
   * @return the takeovers this look found, oldest first
   */
  List<Takeover> look(List<LeaderEpoch> epochs) {
    if (epochs.isEmpty()) {
      return List.of();
    }
    long newestNow = epochs.get(epochs.size() - 1).epoch();
    List<Takeover> found = new ArrayList<>();
    for (LeaderEpoch e : epochs) {
      if (e.epoch() < newestNow) {
        writesWhenDeposed.putIfAbsent(e.epoch(), e.writes());
      }
      if (firstEpoch < 0) {
        firstEpoch = e.epoch();
        newest = e;
        continue;
      }
      if (e.epoch() <= newest.epoch()) {
        continue;
      }
      Takeover t;
      if (pending != null && pending.epoch() == newest.epoch()) {
        t = new Takeover(e.epoch(), e.address(), pending.label(), newest.address(), Math.max(0, e.beganAtMillis() - pending.atWallMillis()));
        pending = null;
      } else {
        t = new Takeover(e.epoch(), e.address(), null, newest.address(), -1);
      }
      takeovers.add(t);
      found.add(t);
      newest = e;
    }
    return found;
  }

  /** Every takeover seen, oldest first. */
  List<Takeover> takeovers() {
    return Collections.unmodifiableList(takeovers);
  }

  /** The first epoch seen leading, or -1. */
  long firstEpoch() {
    return firstEpoch;
  }

  /** How many deposed epochs' write counts are kept for {@link #violations}. */
  int deposedEpochs() {
    return writesWhenDeposed.size();
  }

  /**
   * What does not add up, given the store's epochs at the end (after a last {@link #look} at them).
   *
   * @param epochs {@code leader_epochs}, oldest first
   * @return one sentence per violation, empty if none
   */
  List<String> violations(List<LeaderEpoch> epochs) {
    List<String> v = new ArrayList<>();
    if (epochs.isEmpty()) {
      v.add("no coordinator ever led the store");
      return v;
    }
    for (int i = 1; i < epochs.size(); i++) {
      if (epochs.get(i).epoch() != epochs.get(i - 1).epoch() + 1) {
        v.add("the leader epochs jump from " + epochs.get(i - 1).epoch() + " to " + epochs.get(i).epoch());
      }
    }
    long grew = epochs.get(epochs.size() - 1).epoch() - firstEpoch;
    if (grew != takeovers.size()) {
      v.add("the leader epoch grew by " + grew + " from " + firstEpoch + ", but " + takeovers.size() + " takeovers were seen");
    }
    for (LeaderEpoch e : epochs) {
      Long then = writesWhenDeposed.get(e.epoch());
      if (then != null && e.writes() != then) {
        v.add("epoch " + e.epoch() + " (" + e.address() + ") committed " + (e.writes() - then)
            + " write transactions after it was deposed (" + then + " when deposed, " + e.writes() + " now)");
      }
    }
    if (pending != null) {
      v.add("no coordinator took over from epoch " + pending.epoch() + " after its " + pending.label());
    }
    return v;
  }
}

package dev.tally.core.schedule;

import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;

/**
 * How long each active run's cases typically take: the median run time of its last {@value #SAMPLES_PER_RUN}
 * recorded attempts, by which speculation judges stragglers and workers' slowness ({@link Speculations}).
 *
 * <p>Thread-safety: the scheduler's thread.
 */
final class RunDurations {
  /**
   * 101 recorded attempts per run: a median over the recent past that follows a run whose cases change
   * character, at 800 bytes a run.
   */
  static final int SAMPLES_PER_RUN = 101;

  private final Map<Long, Samples> byRun = new HashMap<>();

  /**
   * The last {@value #SAMPLES_PER_RUN} run times of a run's recorded attempts: as a ring (which one leaves
   * next) and kept sorted (the median is the middle one). Each add moves at most the window's 101 values
   * in the sorted copy instead of sorting it again: the scheduler asks for the median at every recorded
   * attempt, just before adding that attempt's time.
   */
  private static final class Samples {
    final long[] millis = new long[SAMPLES_PER_RUN];
    final long[] sorted = new long[SAMPLES_PER_RUN];
    int count;
    int next;

    void add(long m) {
      if (count == millis.length) {
        // The oldest leaves the sorted window first: any copy of its value will do.
        int at = Arrays.binarySearch(sorted, 0, count, millis[next]);
        System.arraycopy(sorted, at + 1, sorted, at, count - at - 1);
        count--;
      }
      millis[next] = m;
      next = (next + 1) % millis.length;
      int at = Arrays.binarySearch(sorted, 0, count, m);
      if (at < 0) {
        at = -at - 1;
      }
      System.arraycopy(sorted, at, sorted, at + 1, count - at);
      sorted[at] = m;
      count++;
    }

    long median() {
      return sorted[count / 2];
    }
  }

  /** An attempt of {@code runId} was recorded after running {@code millis} ms. */
  void recorded(long runId, long millis) {
    byRun.computeIfAbsent(runId, r -> new Samples()).add(millis);
  }

  /**
   * The run's typical attempt duration in ms once at least {@code minSamples} of its attempts were recorded,
   * else -1.
   */
  long typicalMillis(long runId, int minSamples) {
    Samples s = byRun.get(runId);
    return s == null || s.count < minSamples ? -1 : s.median();
  }

  /** Forgets the runs not in {@code active} (ended runs' samples go). */
  void retain(Collection<Long> active) {
    if (byRun.size() > active.size()) {
      byRun.keySet().retainAll(new HashSet<>(active));
    }
  }
}

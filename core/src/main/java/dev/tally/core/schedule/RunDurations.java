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

  /** The last {@value #SAMPLES_PER_RUN} run times of a run's recorded attempts, as a ring. */
  private static final class Samples {
    final long[] millis = new long[SAMPLES_PER_RUN];
    int count;
    int next;
    /** The median as of the last {@link #add}, or -1 until asked: leasing asks at every step. */
    long median = -1;

    void add(long m) {
      millis[next] = m;
      next = (next + 1) % millis.length;
      count = Math.min(count + 1, millis.length);
      median = -1;
    }

    long median() {
      if (median < 0) {
        long[] s = Arrays.copyOf(millis, count);
        Arrays.sort(s);
        median = s[count / 2];
      }
      return median;
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

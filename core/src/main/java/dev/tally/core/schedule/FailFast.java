package dev.tally.core.schedule;

import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.store.RunCounters;
import java.util.HashMap;
import java.util.Map;

/**
 * Fails a broken run fast: when the first {@code N} cases a run records all end in {@code error} for the
 * same reason (a command that is not found, a 401 from an endpoint), the run is paused with that reason
 * instead of erroring every case. One passing or failing case, or one error for another reason, and the
 * run is judged healthy for good.
 *
 * <p><b>The reason</b> of an error is its outcome's first non-blank line of output (else of stderr),
 * stripped and cut to {@link #MAX_REASON_CHARS}: what a person would read first. Errors whose first lines
 * differ by a case's own detail (its id in the message) do not count as alike.
 *
 * <p><b>Which cases.</b> The run's first {@code N} recorded, as this scheduler sees them from its start: a
 * run activated with cases already recorded (resumed, retried) is not judged, since the earlier cases'
 * reasons are not at hand and a person has seen the run already.
 *
 * <p>{@code N} is the run option {@link #OPTION} ({@code 0} turns it off), else {@link #DEFAULT_CASES}.
 *
 * <p>Pure: no clock, no I/O. Not thread-safe: the scheduler's thread only.
 */
final class FailFast {
  /** The run option that sets {@code N}. */
  static final String OPTION = dev.tally.core.EvaluatorSpec.FAIL_FAST_OPTION;

  /**
   * Twenty errors alike and nothing else: far past chance for a real dataset (where a few cases erroring is
   * normal), and few enough that a broken command or key costs seconds, not the whole run.
   */
  static final int DEFAULT_CASES = dev.tally.core.EvaluatorSpec.DEFAULT_FAIL_FAST_CASES;

  /** The longest reason kept: one line of a message. */
  static final int MAX_REASON_CHARS = 200;

  /** A run being judged: how many errors alike so far, and their reason. */
  private static final class Watch {
    final int threshold;
    int alike;
    String reason;

    Watch(int threshold) {
      this.threshold = threshold;
    }
  }

  private final Map<Long, Watch> watched = new HashMap<>();

  /**
   * Starts judging a run, if its option allows and nothing of it is recorded yet.
   *
   * @param options the run's evaluator options
   * @param counters its counters now (null if unknown: judged)
   */
  void activated(long runId, Map<String, String> options, RunCounters counters) {
    int threshold = dev.tally.core.EvaluatorSpec.failFastCases(options);
    if (threshold <= 0 || (counters != null && counters.recorded() + counters.jobsFailed() > 0)) {
      watched.remove(runId);
    } else {
      watched.put(runId, new Watch(threshold));
    }
  }

  /**
   * One of the run's outcomes was recorded.
   *
   * @return the pause's reason if this outcome is the {@code N}th error alike from the run's start, else null
   */
  String recorded(long runId, Outcome outcome) {
    Watch w = watched.get(runId);
    if (w == null) {
      return null;
    }
    String reason = outcome.verdict() == Verdict.ERROR ? reason(outcome) : null;
    if (reason == null || (w.reason != null && !w.reason.equals(reason))) {
      watched.remove(runId); // healthy, or failing for several reasons: a person reads those from the results
      return null;
    }
    w.reason = reason;
    if (++w.alike < w.threshold) {
      return null;
    }
    watched.remove(runId);
    return "fail fast: its first " + w.threshold + " cases all ended in error alike: " + reason;
  }

  /** An error's reason: the first non-blank line of its output, else of its stderr; null if both are blank. */
  static String reason(Outcome o) {
    String line = firstLine(o.outputTail());
    if (line == null) {
      line = firstLine(o.stderrTail());
    }
    return line;
  }

  private static String firstLine(String text) {
    if (text == null) {
      return null;
    }
    for (String line : text.split("\n", -1)) {
      String s = line.strip();
      if (!s.isEmpty()) {
        return s.length() <= MAX_REASON_CHARS ? s : s.substring(0, MAX_REASON_CHARS);
      }
    }
    return null;
  }
}

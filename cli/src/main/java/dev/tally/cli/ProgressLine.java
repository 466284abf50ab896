package dev.tally.cli;

import dev.tally.core.store.RunCounters;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import me.tongfei.progressbar.ProgressBarRenderer;
import me.tongfei.progressbar.ProgressState;

/**
 * The progress line of {@code tally run} and {@code tally resume}, drawn by the progress-bar library at
 * the terminal's width:
 *
 * <pre>
 * run 3 [==============>               ] 3333/10000, 12 failed, 3 errored, 45 redelivered, 2m05s left
 * </pre>
 *
 * <p>After the bar come the cases done (passed, failed or errored) of the total, then only what is not
 * zero: the cases failed, the cases errored (out of attempts included, as in the summary), the
 * redeliveries, and the time left at the pace so far (once a case is done). The passes are the rest.
 *
 * <p><b>Fitting the width.</b> The library's own layout (percentage, elapsed and estimated time, speed,
 * then a free-text message) takes most of an 80-column line before any count, so its bar shrank to
 * {@code [ ]} and the counts were cut in the middle of a word. Here the bar keeps at least {@link
 * #MIN_BAR_COLUMNS}; a part that does not fit beside it is left out whole, least important first (the
 * redeliveries, then the time left, then the errored and the failed count), never cut; the bar takes the
 * rest of the line.
 *
 * <p>Thread-safety: the command's thread sets the counters ({@link #counters}); the library's update
 * thread renders. The counters are published through a volatile field, and each render reads them once.
 */
final class ProgressLine implements ProgressBarRenderer {
  /**
   * The narrowest bar drawn while the line has room for it: at 20 columns each one is 5% of the run, as
   * fine as the eye reads a bar, and it leaves an 80-column terminal about 55 columns for the task, the
   * counts and the time left (every part of a 10,000-case run with two- and three-digit counts but the
   * redeliveries).
   */
  static final int MIN_BAR_COLUMNS = 20;

  /** The parts after the bar, in the order shown, each with the rank of its importance (0 the most). */
  private record Part(String text, int rank) {}

  private volatile RunCounters counters;

  /** The run's counters as of now: what the next render shows. */
  void counters(RunCounters latest) {
    counters = latest;
  }

  @Override
  public String render(ProgressState progress, int maxLength) {
    long done = progress.getCurrent();
    long sinceStart = done - progress.getStart();
    Duration left = null;
    if (sinceStart > 0 && done <= progress.getMax()) {
      left = progress.getElapsedAfterStart().multipliedBy(progress.getMax() - done).dividedBy(sinceStart);
    }
    return line(progress.getTaskName(), done, progress.getMax(), counters, left, maxLength);
  }

  /**
   * The line for a run at this point, at most {@code width} columns whenever the task, the smallest bar
   * and the done/total count fit in it.
   *
   * @param task the run's name ({@code run 3})
   * @param done cases done (recorded, or out of attempts)
   * @param total the run's cases
   * @param counters the verdicts and redeliveries so far, or null before the first report
   * @param left the time left at the pace so far, or null if not known yet
   * @param width the columns available
   */
  static String line(String task, long done, long total, RunCounters counters, Duration left, int width) {
    String head = task + " [";
    String ratio = "] " + done + "/" + total;
    List<Part> parts = new ArrayList<>();
    if (counters != null) {
      if (counters.failed() > 0) {
        parts.add(new Part(counters.failed() + " failed", 0));
      }
      if (dev.tally.coordinator.report.RunReport.errored(counters) > 0) {
        parts.add(new Part(dev.tally.coordinator.report.RunReport.errored(counters) + " errored", 1));
      }
      if (counters.redeliveries() > 0) {
        parts.add(new Part(counters.redeliveries() + " redelivered", 3));
      }
    }
    if (left != null) {
      parts.add(new Part(timeLeft(left) + " left", 2));
    }
    int fixed = head.length() + ratio.length();
    List<Part> byImportance = new ArrayList<>(parts);
    byImportance.sort(Comparator.comparingInt(Part::rank).reversed());
    for (Part leastImportant : byImportance) {
      if (fixed + MIN_BAR_COLUMNS + tailLength(parts) <= width) {
        break;
      }
      parts.remove(leastImportant);
    }
    StringBuilder tail = new StringBuilder(ratio);
    for (Part p : parts) {
      tail.append(", ").append(p.text());
    }
    int barColumns = Math.max(1, width - head.length() - tail.length());
    return head + bar(done, total, barColumns) + tail;
  }

  private static int tailLength(List<Part> parts) {
    return parts.stream().mapToInt(p -> 2 + p.text().length()).sum();
  }

  /** {@code ======>     }: done over total in {@code columns} columns, ASCII so that any terminal shows it. */
  private static String bar(long done, long total, int columns) {
    int filled = total <= 0 ? columns : (int) Math.min(columns, done * columns / total);
    return filled >= columns ? "=".repeat(columns) : "=".repeat(filled) + ">" + " ".repeat(columns - filled - 1);
  }

  /** {@code 45s}, {@code 2m05s}, {@code 1h05m}: short enough for the line, precise enough to plan by. */
  static String timeLeft(Duration d) {
    long s = Math.max(0, d.toSeconds());
    if (s < 60) {
      return s + "s";
    }
    if (s < 3600) {
      return String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60);
    }
    return String.format(Locale.ROOT, "%dh%02dm", s / 3600, s % 3600 / 60);
  }
}

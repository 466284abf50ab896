package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.store.RunCounters;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import me.tongfei.progressbar.DelegatingProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import org.junit.jupiter.api.Test;

/** The progress line fits an 80-column terminal with a real bar and never cuts a count. */
class ProgressLineTest {
  /**
   * What the library gives the renderer on an 80-column terminal: the width less the console consumer's
   * right margin (one or two columns, by version), the smaller taken.
   */
  private static final int EIGHTY_COLUMNS = 78;

  private static RunCounters counters(long total, long failed, long errored, long outOfAttempts, long redeliveries) {
    return RunCounters.builder(total).passed(0).failed(failed).errored(errored).jobsFailed(outOfAttempts)
        .redeliveries(redeliveries).build();
  }

  /** The bar's columns: between the first '[' and the last ']'. */
  private static int barColumns(String line) {
    return line.lastIndexOf(']') - line.indexOf('[') - 1;
  }

  @Test
  void eightyColumnsShowARealBarBesideTheCountsOfABigRun() {
    // Regression: the library's layout left "[ ]" and cut the message at "...errored 0; r".
    record Case(long total, long done, RunCounters counters, Duration left) {}
    List<Case> cases = List.of(
        new Case(81, 27, counters(81, 0, 0, 0, 0), Duration.ofSeconds(4)),
        new Case(10_000, 3_333, counters(10_000, 123, 45, 6, 0), Duration.ofMinutes(12)),
        new Case(100_000, 33_333, counters(100_000, 1_234, 56, 7, 890), Duration.ofHours(3)),
        new Case(1_000_000, 333_333, counters(1_000_000, 12_345, 6_789, 10, 98_765), Duration.ofHours(30)));
    for (Case c : cases) {
      String line = ProgressLine.line("run 12", c.done(), c.total(), c.counters(), c.left(), EIGHTY_COLUMNS);
      assertThat(line.length()).as(line).isLessThanOrEqualTo(EIGHTY_COLUMNS);
      assertThat(barColumns(line)).as(line).isGreaterThanOrEqualTo(ProgressLine.MIN_BAR_COLUMNS);
      assertThat(line).as("the done count and the total are never left out").contains("] " + c.done() + "/" + c.total());
      assertThat(line).as("nothing is cut: the line ends with a whole part")
          .containsPattern("/" + c.total() + "(, \\d+ (failed|errored|redelivered)|, \\d+[hms]\\S* left)*$");
      if (c.counters().failed() > 0) {
        assertThat(line).as("the most important count stays").contains(c.counters().failed() + " failed");
      }
    }
  }

  @Test
  void whatDoesNotFitIsLeftOutWholeTheLeastImportantFirst() {
    RunCounters c = counters(10_000, 12, 3, 0, 45);
    String wide = ProgressLine.line("run 3", 3_333, 10_000, c, Duration.ofSeconds(125), 200);
    assertThat(wide).endsWith("] 3333/10000, 12 failed, 3 errored, 45 redelivered, 2m05s left");

    String eighty = ProgressLine.line("run 3", 3_333, 10_000, c, Duration.ofSeconds(125), EIGHTY_COLUMNS);
    assertThat(eighty).as("the redeliveries go first").endsWith("] 3333/10000, 12 failed, 3 errored, 2m05s left");
    assertThat(barColumns(eighty)).isGreaterThanOrEqualTo(ProgressLine.MIN_BAR_COLUMNS);

    String narrow = ProgressLine.line("run 3", 3_333, 10_000, c, Duration.ofSeconds(125), 62);
    assertThat(narrow).as("then the time left").endsWith("] 3333/10000, 12 failed, 3 errored");
  }

  @Test
  void onlyWhatIsNotZeroIsShownAndErroredCountsTheCasesOutOfAttempts() {
    assertThat(ProgressLine.line("run 1", 5, 10, counters(10, 0, 0, 0, 0), null, 100)).endsWith("] 5/10")
        .startsWith("run 1 [=").hasSize(100);
    assertThat(ProgressLine.line("run 1", 5, 10, counters(10, 0, 1, 2, 0), null, 100)).endsWith("] 5/10, 3 errored");
    assertThat(ProgressLine.line("run 1", 10, 10, counters(10, 0, 0, 0, 0), Duration.ZERO, 50))
        .isEqualTo("run 1 [" + "=".repeat(27) + "] 10/10, 0s left");
    assertThat(ProgressLine.line("run 1", 0, 10, null, null, 20)).as("before the first report")
        .isEqualTo("run 1 [>" + " ".repeat(6) + "] 0/10");
    assertThat(ProgressLine.timeLeft(Duration.ofSeconds(3_900))).isEqualTo("1h05m");
  }

  @Test
  void theLibraryDrawsTheLineAtTheWidthItIsGiven() {
    List<String> drawn = new CopyOnWriteArrayList<>();
    ProgressLine line = new ProgressLine();
    ProgressBar bar = RunnerCommand.progressBar(7, 10, line, new DelegatingProgressBarConsumer(drawn::add, EIGHTY_COLUMNS));
    RunnerCommand.update(bar, line, counters(10, 2, 0, 0, 1));
    bar.stepTo(5);
    bar.close(); // draws a last time
    String last = drawn.get(drawn.size() - 1);
    assertThat(last).startsWith("run 7 [").contains("] 5/10, 2 failed, 1 redelivered");
    assertThat(last.length()).isLessThanOrEqualTo(EIGHTY_COLUMNS);
    assertThat(barColumns(last)).isGreaterThanOrEqualTo(ProgressLine.MIN_BAR_COLUMNS);
  }
}

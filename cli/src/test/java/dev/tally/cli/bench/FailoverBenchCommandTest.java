package dev.tally.cli.bench;

import dev.tally.cli.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;

/**
 * The parts of {@code bench-failover} that need no processes: option checks, the median, and the log tap
 * reading the coordinator's reap and drain lines in the format they are logged in. (The measurement itself
 * is run by hand; it takes minutes.)
 */
class FailoverBenchCommandTest {
  @Test
  void badOptionsAreUsageErrorsBeforeAnythingStarts() {
    for (String[] args : List.of(
        new String[] {"--workers", "1"},
        new String[] {"--min-pause", "2s", "--max-pause", "1s"},
        new String[] {"--max-pause", "9s", "--pause-every", "10s"},
        new String[] {"--case-millis", "0"})) {
      StringWriter err = new StringWriter();
      int exit = new CommandLine(new FailoverBenchCommand()).setErr(new PrintWriter(err)).execute(args);
      assertThat(exit).as("exit for %s", List.of(args)).isEqualTo(2);
      assertThat(err.toString()).contains("Usage:");
    }
  }

  @Test
  void medianOfOddAndEvenCounts() {
    assertThat(FailoverBenchCommand.median(List.of(1L, 5L, 9L))).isEqualTo(5L);
    assertThat(FailoverBenchCommand.median(List.of(1L, 3L, 5L, 9L))).isEqualTo(4L);
  }

  @Test
  void tapReadsReapsAndDrainsAsTheCoordinatorLogsThem() {
    FailoverBenchCommand.LogTap tap = FailoverBenchCommand.LogTap.attach();
    try {
      assertThat(tap.attached).isTrue();
      // The format strings of Scheduler.onLost and WorkerConnection's drain, with their arguments.
      Logger scheduler = LoggerFactory.getLogger("dev.tally.core.schedule.Scheduler");
      scheduler.warn("worker {} lost ({}); redelivering its {} in-flight jobs", "local-2",
          "reaped after 3157ms of silence (phi-accrual(threshold=8.0, drain at 1.0))", 4);
      scheduler.warn("worker {} lost ({}); redelivering its {} in-flight jobs", "local-1", "worker said goodbye: worker closing", 4);
      Logger connection = LoggerFactory.getLogger("dev.tally.coordinator.net.WorkerConnection");
      connection.warn("worker {} ({}) is suspected: suspicion {} at or above the drain level {} ({}); no new jobs until it is heard from",
          "7f5e5c59-d9f2-4714-9d42-c3689e79d515", "local-3", "1.57", "1.0", "phi-accrual(...)");

      assertThat(tap.reaps).singleElement().satisfies(r -> {
        assertThat(r.worker()).isEqualTo("local-2");
        assertThat(r.silenceMillis()).isEqualTo(3157);
      });
      assertThat(tap.drains).containsExactly("local-3");
    } finally {
      tap.detach();
    }
  }
}

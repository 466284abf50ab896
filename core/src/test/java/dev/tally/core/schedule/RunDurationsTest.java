package dev.tally.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class RunDurationsTest {

  /** The median as the class doc defines it: the middle of the last {@value RunDurations#SAMPLES_PER_RUN}, sorted. */
  private static long naiveMedian(List<Long> all) {
    long[] last = all.subList(Math.max(0, all.size() - RunDurations.SAMPLES_PER_RUN), all.size()).stream()
        .mapToLong(Long::longValue).toArray();
    Arrays.sort(last);
    return last[last.length / 2];
  }

  @Property(tries = 200)
  void theTypicalDurationIsTheMedianOfTheLastWindowAfterEveryRecord(
      @ForAll @Size(min = 1, max = 400) List<@LongRange(min = 0, max = 50) Long> millis) {
    RunDurations d = new RunDurations();
    List<Long> seen = new ArrayList<>();
    for (long m : millis) {
      d.recorded(7, m);
      seen.add(m);
      assertThat(d.typicalMillis(7, 1)).as("after %s records", seen.size()).isEqualTo(naiveMedian(seen));
    }
  }

  @Test
  void aRunWithTooFewSamplesOrNoneHasNoTypicalDurationAndEndedRunsAreForgotten() {
    RunDurations d = new RunDurations();
    assertThat(d.typicalMillis(1, 1)).isEqualTo(-1);
    d.recorded(1, 40);
    d.recorded(1, 10);
    assertThat(d.typicalMillis(1, 3)).isEqualTo(-1);
    d.recorded(1, 20);
    assertThat(d.typicalMillis(1, 3)).isEqualTo(20);
    d.recorded(2, 5);
    d.retain(List.of(2L));
    assertThat(d.typicalMillis(1, 1)).isEqualTo(-1);
    assertThat(d.typicalMillis(2, 1)).isEqualTo(5);
  }
}

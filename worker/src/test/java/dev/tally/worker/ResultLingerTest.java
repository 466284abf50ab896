package dev.tally.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ResultLingerTest {
  private static final long MS = 1_000_000;
  private final ResultLinger linger = new ResultLinger(Duration.ofMillis(1));

  @Test
  void aResultLingersOnlyWhenAnotherEndedWithinTheLingerAndMoreAreQueuedBehindIt() {
    long t = -5 * MS; // the ticker's nanos may be negative
    assertThat(linger.ended(t, 10)).as("the first result: nothing says more are coming").isFalse();
    assertThat(linger.ended(t + MS / 2, 10)).as("half a millisecond behind another, more queued").isTrue();
    assertThat(linger.ended(t + MS / 2 + 10, 0)).as("nothing queued behind it: it may be the last").isFalse();
    assertThat(linger.ended(t + 3 * MS, 10)).as("alone for two milliseconds: a slow case's result goes at once").isFalse();
    assertThat(linger.ended(t + 3 * MS + MS - 1, 1)).isTrue();
    assertThat(linger.ended(t + 5 * MS - 1, 1)).as("exactly the linger since the last").isFalse();
  }

  @Test
  void noLingerNeverHoldsAResultBack() {
    ResultLinger none = new ResultLinger(Duration.ZERO);
    assertThat(none.ended(0, 10)).isFalse();
    assertThat(none.ended(0, 10)).as("even two at the same instant").isFalse();
    assertThatThrownBy(() -> new ResultLinger(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-");
  }
}

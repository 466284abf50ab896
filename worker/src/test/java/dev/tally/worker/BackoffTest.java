package dev.tally.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class BackoffTest {
  @Test
  void theWindowDoublesFromTheInitialDelayUpToTheMaxAndEveryDelayIsInsideIt() {
    Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), new SplittableRandom(1));
    long[] expectedCapsMillis = {100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000};
    for (long cap : expectedCapsMillis) {
      assertThat(b.currentCap()).isEqualTo(Duration.ofMillis(cap));
      Duration d = b.next();
      assertThat(d).isBetween(Duration.ZERO, Duration.ofMillis(cap));
    }
  }

  @Test
  void delaysAreSpreadOverTheWholeWindow() {
    Backoff b = new Backoff(Duration.ofMillis(1000), Duration.ofMillis(1000), new SplittableRandom(7));
    long below = 0;
    for (int i = 0; i < 1000; i++) {
      if (b.next().toMillis() < 500) {
        below++;
      }
    }
    assertThat(below).isBetween(400L, 600L); // full jitter: uniform over [0, cap]
  }

  @Test
  void resetStartsOverFromTheInitialWindow() {
    Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), new SplittableRandom(1));
    for (int i = 0; i < 10; i++) {
      b.next();
    }
    b.reset();
    assertThat(b.currentCap()).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void rejectsAMaxBelowTheInitialDelay() {
    assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1), new SplittableRandom()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least the initial backoff");
  }
}

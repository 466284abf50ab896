package dev.tally.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class RetryAfterTest {
  private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");

  @Test
  void secondsWholeOrWithAFractionAndHttpDatesAreWaits() {
    assertThat(RetryAfter.parse("3", NOW)).contains(Duration.ofSeconds(3));
    assertThat(RetryAfter.parse(" 1.5 ", NOW)).contains(Duration.ofMillis(1500));
    assertThat(RetryAfter.parse("0.0001", NOW)).as("rounded up to the millisecond").contains(Duration.ofMillis(1));
    assertThat(RetryAfter.parse("Tue, 01 Dec 2026 10:00:05 GMT", NOW)).contains(Duration.ofSeconds(5));
    assertThat(RetryAfter.parse("Tue, 01 Dec 2026 09:00:00 GMT", NOW)).as("past").contains(Duration.ZERO);
  }

  @Test
  void anythingElseIsNoWait() {
    for (String v : new String[] {"2d", "1e3", "-1", "+2", "Infinity", "NaN", "0x10", "soon", "", "1234567890"}) {
      assertThat(RetryAfter.parse(v, NOW)).as(v).isEmpty();
    }
    assertThat(RetryAfter.parse(null, NOW)).isEmpty();
  }
}

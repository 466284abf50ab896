package dev.tally.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.FleetLimits;
import dev.tally.core.store.StoreBatch.LeaseLimit;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The fleet-wide limits a run's leases get: concurrency with AIMD on rate limits, and the request rate. */
class RunGovernorTest {
  static final long T0 = 1_000_000;

  @Test
  void aRunWithoutLimitsIsNotGovernedUntilItsEndpointRateLimitsIt() {
    RunGovernor g = new RunGovernor();
    g.govern(1, FleetLimits.NONE, T0);
    assertThat(g.any()).isFalse();
    g.rateLimited(1, 0, 10, T0);
    assertThat(g.limits(T0)).containsEntry(1L, new LeaseLimit(5, 0));
    assertThat(g.limits(T0 + RunGovernor.DEFAULT_PAUSE_MILLIS)).containsEntry(1L, new LeaseLimit(5, Integer.MAX_VALUE));
  }

  @Test
  void theWindowHalvesOncePerBurstPausesForRetryAfterAndGrowsBackByOnePerWindowOfSuccesses() {
    RunGovernor g = new RunGovernor();
    g.govern(1, new FleetLimits(8, null, null, null, null, null), T0);
    assertThat(g.limits(T0)).isEqualTo(Map.of(1L, new LeaseLimit(8, Integer.MAX_VALUE)));

    g.rateLimited(1, 2_000, 8, T0);
    g.rateLimited(1, 2_000, 8, T0 + 10); // the same burst: no second halving
    assertThat(g.window(1)).isEqualTo(4.0);
    assertThat(g.limits(T0 + 1_999).get(1L).maxNew()).as("paused for Retry-After").isZero();
    assertThat(g.nextChangeMillis(T0 + 100)).isEqualTo(T0 + 2_010);
    assertThat(g.limits(T0 + 2_010).get(1L)).isEqualTo(new LeaseLimit(4, Integer.MAX_VALUE));

    g.rateLimited(1, 0, 4, T0 + 2_011); // a new burst after the last one's spacing: halved again
    assertThat(g.window(1)).isEqualTo(2.0);
    g.rateLimited(1, 0, 2, T0 + 2_500); // within this burst's spacing (1 s without a Retry-After): not halved
    assertThat(g.window(1)).isEqualTo(2.0);
    assertThat(g.limits(T0 + 3_000).get(1L).maxNew()).as("but paused a further second").isZero();
    g.rateLimited(1, 0, 2, T0 + 4_010);
    assertThat(g.window(1)).isEqualTo(1.0);
    g.rateLimited(1, 0, 2, T0 + 6_010);
    g.rateLimited(1, 0, 1, T0 + 8_010);
    assertThat(g.window(1)).as("never below one permit").isEqualTo(1.0);

    // Additive increase: 1/window per success, about one more permit per window's worth of outcomes.
    g.succeeded(1);
    assertThat(g.window(1)).isEqualTo(2.0);
    g.succeeded(1);
    g.succeeded(1);
    assertThat(g.window(1)).isCloseTo(2.9, org.assertj.core.data.Offset.offset(1e-9)); // 2 + 1/2 + 1/2.5
    for (int i = 0; i < 100; i++) {
      g.succeeded(1);
    }
    assertThat(g.window(1)).as("back up to its cap, never past it").isEqualTo(8.0);
  }

  @Test
  void theRequestRateIsABucketOfOneSecondsWorthRefilledContinuously() {
    RunGovernor g = new RunGovernor();
    g.govern(1, new FleetLimits(null, 120.0, null, null, null, null), T0); // 2 a second
    assertThat(g.limits(T0).get(1L)).isEqualTo(new LeaseLimit(Integer.MAX_VALUE, 2));
    g.leased(1, 2);
    assertThat(g.limits(T0).get(1L).maxNew()).isZero();
    assertThat(g.nextChangeMillis(T0)).isEqualTo(T0 + 500);
    assertThat(g.limits(T0 + 499).get(1L).maxNew()).isZero();
    assertThat(g.limits(T0 + 500).get(1L).maxNew()).isEqualTo(1);
    assertThat(g.limits(T0 + 60_000).get(1L).maxNew()).as("never more than a second's worth").isEqualTo(2);

    RunGovernor slow = new RunGovernor();
    slow.govern(2, new FleetLimits(null, 6.0, null, null, null, null), T0); // one every 10 s: a bucket of one
    assertThat(slow.limits(T0).get(2L).maxNew()).isEqualTo(1);
    slow.leased(2, 1);
    assertThat(slow.nextChangeMillis(T0)).isEqualTo(T0 + 10_000);
  }

  @Test
  void theTokenRateTakesTheRunsCountedTokensFromItsBucketAndWaitsOutTheDebt() {
    RunGovernor g = new RunGovernor();
    g.govern(1, new FleetLimits(null, null, 6_000.0, null, null, null), T0); // 100 a second
    dev.tally.core.store.RunCounters none = dev.tally.core.store.RunCounters.builder(10).build();
    assertThat(g.spent(1, none, T0)).isNull();
    assertThat(g.limits(T0).get(1L).maxNew()).isEqualTo(Integer.MAX_VALUE);
    g.spent(1, dev.tally.core.store.RunCounters.builder(10).tokens(250, 50).build(), T0); // 300 used: 200 in debt
    assertThat(g.limits(T0).get(1L).maxNew()).isZero();
    assertThat(g.nextChangeMillis(T0)).isEqualTo(T0 + 2_001);
    assertThat(g.limits(T0 + 2_001).get(1L).maxNew()).isEqualTo(Integer.MAX_VALUE);
  }

  @Test
  void aReachedCapStopsTheRunsNewLeasesForGoodAndSaysWhich() {
    RunGovernor g = new RunGovernor();
    g.govern(1, new FleetLimits(4, null, null, null, 0.01, new dev.tally.core.Price(1, 2)), T0);
    assertThat(g.spent(1, dev.tally.core.store.RunCounters.builder(10).tokens(4_000, 2_000).build(), T0)).isNull();
    assertThat(g.spent(1, dev.tally.core.store.RunCounters.builder(10).tokens(6_000, 2_000).build(), T0))
        .isEqualTo("its spend cap is reached: $0.0100 spent, --max-cost 0.01");
    assertThat(g.limits(T0 + 3_600_000).get(1L)).isEqualTo(new LeaseLimit(4, 0));
    assertThat(g.nextChangeMillis(T0)).as("only a raised cap ends it").isEqualTo(Long.MAX_VALUE);

    FleetLimits tokens = new FleetLimits(null, null, null, 100L, null, null);
    assertThat(tokens.capReached(dev.tally.core.store.RunCounters.builder(1).tokens(60, 39).build())).isEmpty();
    assertThat(tokens.capReached(dev.tally.core.store.RunCounters.builder(1).tokens(60, 40).build()))
        .contains("its token cap is reached: 100 tokens used, --max-tokens 100");
    assertThatThrownBy(() -> FleetLimits.parse(Map.of("max-cost", "5")))
        .hasMessage("--max-cost needs --price (the cost is the tokens used at that price)");
  }

  @Test
  void limitsAreReadFromTheRunsOptionsAndOutOfRangeValuesAreRefusedNamingTheOption() {
    assertThat(FleetLimits.parse(Map.of("max-concurrency", "16", "requests-per-minute", "500", "cmd", "x")))
        .isEqualTo(new FleetLimits(16, 500.0, null, null, null, null));
    assertThat(FleetLimits.parse(Map.of()).none()).isTrue();
    assertThatThrownBy(() -> FleetLimits.parse(Map.of("max-concurrency", "0")))
        .isInstanceOfSatisfying(FleetLimits.LimitException.class, e -> assertThat(e.key()).isEqualTo("max-concurrency"))
        .hasMessage("--max-concurrency must be from 1 to 100000, got 0");
    assertThatThrownBy(() -> FleetLimits.parse(Map.of("requests-per-minute", "lots")))
        .hasMessage("--requests-per-minute must be a number, got 'lots'");
    assertThatThrownBy(() -> FleetLimits.parse(Map.of("requests-per-minute", "-1")))
        .hasMessage("--requests-per-minute must be a positive number, got -1.0");
  }
}

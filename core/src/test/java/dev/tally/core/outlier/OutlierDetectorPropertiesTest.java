package dev.tally.core.outlier;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;

class OutlierDetectorPropertiesTest {

  /** One report: which worker (modulo the fleet), how its attempt ended, and how much time passed first. */
  record Step(int worker, Ending ending, int durationMillis, int advanceMillis) {}

  // Small thresholds and short ejections, so that random traffic ejects, returns and hits the cap often.
  private static OutlierPolicy policy(boolean touchy, double share) {
    OutlierPolicy.Builder b = OutlierPolicy.builder().maxEjectedShare(share);
    if (touchy) {
      b.consecutiveFailures(2).window(4).minAttempts(2).minWorkers(2)
          .baseEjection(Duration.ofSeconds(1)).maxEjection(Duration.ofSeconds(5));
    }
    return b.build();
  }

  @Property(tries = 300)
  void neverMoreWorkersAreEjectedAtOnceThanTheShareCapAllows(
      @ForAll @IntRange(min = 1, max = 12) int fleetSize,
      @ForAll("shares") double share,
      @ForAll @IntRange(min = 0, max = 12) int brokenWorkers,
      @ForAll boolean touchy,
      @ForAll("failureProneTraffic") List<Step> steps) {
    OutlierPolicy policy = policy(touchy, share);
    OutlierDetector detector = new OutlierDetector(policy);
    for (int i = 0; i < fleetSize; i++) {
      detector.workerJoined("w" + i, 0);
    }
    int cap = policy.maxEjected(fleetSize);
    long now = 0;
    long ejectedEvents = 0;
    for (Step s : steps) {
      now += s.advanceMillis();
      int index = s.worker() % fleetSize;
      // The first brokenWorkers workers fail everything they do not lose: some workers far worse than others.
      Ending ending = index < brokenWorkers && s.ending() == Ending.SUCCESS ? Ending.INFRA_FAILURE : s.ending();
      detector.attemptEnded("w" + index, "kind", ending, s.durationMillis(), now);
      ejectedEvents += detector.poll(now).stream().filter(e -> e.type() == OutlierEvent.Type.EJECTED).count();

      int ejected = 0;
      for (int i = 0; i < fleetSize; i++) {
        if (detector.isEjected("w" + i, now)) {
          ejected++;
        }
      }
      assertThat(ejected).isLessThanOrEqualTo(cap).isEqualTo(detector.ejectedCount(now));
      for (WorkerHealth h : detector.snapshot(now).values()) {
        if (h.ejected()) {
          assertThat(h.ejectedUntilMillis().getAsLong()).isGreaterThan(now);
        }
      }
    }
    assertThat(ejectedEvents).isEqualTo(detector.ejections());
  }

  @Property(tries = 200)
  void successesOfEqualDurationNeverEjectWhateverTheirVerdicts(
      @ForAll @IntRange(min = 1, max = 8) int fleetSize,
      @ForAll @IntRange(min = 0, max = 100_000) int durationMillis,
      @ForAll("workerSequence") List<Integer> workers) {
    OutlierDetector detector = new OutlierDetector(policy(true, 1.0));
    for (int i = 0; i < fleetSize; i++) {
      detector.workerJoined("w" + i, 0);
    }
    long now = 0;
    for (int w : workers) {
      now += durationMillis;
      detector.attemptEnded("w" + (w % fleetSize), "kind", Ending.SUCCESS, durationMillis, now);
    }
    assertThat(detector.ejections()).isZero();
    assertThat(detector.poll(now)).isEmpty();
  }

  @Provide
  Arbitrary<Double> shares() {
    return Arbitraries.of(0.1, 0.25, 1.0 / 3, 0.5, 0.75, 1.0);
  }

  @Provide
  Arbitrary<List<Integer>> workerSequence() {
    return Arbitraries.integers().between(0, 1_000).list().ofMaxSize(300);
  }

  @Provide
  Arbitrary<List<Step>> failureProneTraffic() {
    // Skewed towards low indexes, so worker 0 reports (and fails) most.
    Arbitrary<Integer> worker = Arbitraries.frequencyOf(
        Tuple.of(6, Arbitraries.just(0)), Tuple.of(3, Arbitraries.integers().between(0, 3)),
        Tuple.of(2, Arbitraries.integers().between(0, 11)));
    Arbitrary<Ending> ending = Arbitraries.frequency(
        Tuple.of(5, Ending.INFRA_FAILURE), Tuple.of(4, Ending.SUCCESS), Tuple.of(1, Ending.LOST));
    Arbitrary<Integer> duration = Arbitraries.frequencyOf(
        Tuple.of(8, Arbitraries.integers().between(0, 200)), Tuple.of(2, Arbitraries.integers().between(0, 20_000)));
    Arbitrary<Integer> advance = Arbitraries.frequencyOf(
        Tuple.of(8, Arbitraries.integers().between(0, 500)), Tuple.of(2, Arbitraries.integers().between(0, 60_000)));
    return Combinators.combine(worker, ending, duration, advance).as(Step::new).list().ofMaxSize(400);
  }
}

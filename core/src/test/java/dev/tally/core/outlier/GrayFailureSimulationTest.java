package dev.tally.core.outlier;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/**
 * The pure-logic twin of the gray-failure requirement: 400 cases on 4 workers, one of which fails every
 * case in a few milliseconds, and at least 99% of cases still end in success.
 *
 * <p>The model, in virtual time and one seeded random source: each worker runs one case at a time; a free
 * worker that is not ejected takes the case at the head of the queue (among several free workers, one at
 * random); an infrastructure failure puts the case back at the head of the queue, to be taken by whichever
 * worker is free next, until it has used {@value #MAX_ATTEMPTS} attempts. Like Tally's scheduler, the retry
 * does not avoid the worker that failed it, which is what makes a fast-failing worker a black hole: it is
 * free again after 3 ms, while the good ones are busy for 80, so without a detector it takes most retries
 * too, and cases run out of attempts.
 */
class GrayFailureSimulationTest {
  private static final int CASES = 400;
  private static final int MAX_ATTEMPTS = 3;
  private static final List<String> WORKERS = List.of("w1", "w2", "w3", "bad");

  record Result(int succeeded, int failed, int mostEjectedAtOnce, long ejections, int attemptsOnBad) {}

  private static final class Case {
    int attempts;
  }

  private static final class Running {
    final Case job;
    final long startMillis;
    final long endMillis;

    Running(Case job, long startMillis, long endMillis) {
      this.job = job;
      this.startMillis = startMillis;
      this.endMillis = endMillis;
    }
  }

  static Result simulate(long seed, boolean withDetector, int goodMinMillis, int goodMaxMillis) {
    SplittableRandom random = new SplittableRandom(seed);
    OutlierDetector detector = new OutlierDetector(OutlierPolicy.defaults());
    WORKERS.forEach(w -> detector.workerJoined(w, 0));
    int cap = detector.policy().maxEjected(WORKERS.size());
    Deque<Case> queue = new ArrayDeque<>();
    for (int i = 0; i < CASES; i++) {
      queue.add(new Case());
    }
    Running[] running = new Running[WORKERS.size()];
    int succeeded = 0;
    int failed = 0;
    int mostEjected = 0;
    int attemptsOnBad = 0;
    long now = 0;
    while (succeeded + failed < CASES) {
      // Lease: free, non-ejected workers take queued cases, in random order.
      List<Integer> free = new ArrayList<>();
      for (int w = 0; w < running.length; w++) {
        if (running[w] == null && !(withDetector && detector.isEjected(WORKERS.get(w), now))) {
          free.add(w);
        }
      }
      while (!queue.isEmpty() && !free.isEmpty()) {
        int w = free.remove(random.nextInt(free.size()));
        boolean bad = WORKERS.get(w).equals("bad");
        long duration = bad ? 2 + random.nextInt(3) : goodMinMillis + random.nextInt(goodMaxMillis - goodMinMillis + 1);
        Case job = queue.poll();
        job.attempts++;
        attemptsOnBad += bad ? 1 : 0;
        running[w] = new Running(job, now, now + duration);
      }
      // Advance to the next ending (or, with nothing running, to the next moment an ejection may end).
      long next = Long.MAX_VALUE;
      for (Running r : running) {
        if (r != null) {
          next = Math.min(next, r.endMillis);
        }
      }
      now = next == Long.MAX_VALUE ? now + 1_000 : next;
      for (int w = 0; w < running.length; w++) {
        Running r = running[w];
        if (r == null || r.endMillis > now) {
          continue;
        }
        running[w] = null;
        boolean bad = WORKERS.get(w).equals("bad");
        detector.attemptEnded(WORKERS.get(w), "run-1", bad ? Ending.INFRA_FAILURE : Ending.SUCCESS,
            r.endMillis - r.startMillis, now);
        if (!bad) {
          succeeded++;
        } else if (r.job.attempts >= MAX_ATTEMPTS) {
          failed++;
        } else {
          queue.addFirst(r.job);
        }
      }
      int ejected = detector.ejectedCount(now);
      assertThat(ejected).as("ejected at %d ms", now).isLessThanOrEqualTo(cap);
      mostEjected = Math.max(mostEjected, ejected);
    }
    return new Result(succeeded, failed, mostEjected, detector.ejections(), attemptsOnBad);
  }

  @Property(tries = 50)
  void withOneOfFourWorkersFailingEveryCaseInAFewMillisAtLeast99PercentOfCasesSucceed(@ForAll long seed) {
    Result r = simulate(seed, true, 60, 100);

    assertThat(r.succeeded()).as("%s", r).isGreaterThanOrEqualTo(CASES * 99 / 100);
    assertThat(r.mostEjectedAtOnce()).isEqualTo(1);
    assertThat(r.ejections()).isGreaterThanOrEqualTo(1);
  }

  @Property(tries = 20)
  void theBrokenWorkerIsEjectedAgainAfterEachReturnAndStill99PercentSucceed(@ForAll long seed) {
    // Slower good cases: the run lasts well past the first 30 s ejection, so the bad worker returns.
    Result r = simulate(seed, true, 200, 400);

    assertThat(r.ejections()).as("%s", r).isGreaterThanOrEqualTo(2);
    assertThat(r.succeeded()).as("%s", r).isGreaterThanOrEqualTo(CASES * 99 / 100);
    assertThat(r.mostEjectedAtOnce()).isEqualTo(1);
  }

  @Test
  void withoutTheDetectorTheSameFleetLosesManyCases() {
    // The control: it shows the two properties above measure the detector and not the model.
    Result r = simulate(42, false, 60, 100);

    assertThat(r.failed()).as("%s", r).isGreaterThan(CASES / 10);
  }
}

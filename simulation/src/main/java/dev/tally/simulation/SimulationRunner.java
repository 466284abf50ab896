package dev.tally.simulation;

import dev.tally.core.store.RunCounters;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Runs simulated histories and checks each: one seed ({@link #run}), or a range of seeds ({@link
 * #runMany}). The command line ({@code tally simulate}) is a thin shell over this class.
 *
 * <p>Thread-safety: immutable; each history runs in the calling thread.
 */
public final class SimulationRunner {
  private final PlantedFault planted;

  /** A runner of correct histories. */
  public SimulationRunner() {
    this(null);
  }

  /** A runner with {@code planted} planted in every history (null for none). */
  public SimulationRunner(PlantedFault planted) {
    this.planted = planted;
  }

  /** Plays and checks the history of {@code seed}, without keeping its trace's text. */
  public SimulationResult run(long seed) {
    return run(seed, false);
  }

  /** Plays and checks the history of {@code seed}; {@code keepTrace} keeps the trace's text for printing. */
  public SimulationResult run(long seed, boolean keepTrace) {
    History h = new Simulation(seed, planted, keepTrace).run();
    List<String> violations = Checker.check(h);
    long redeliveries = 0;
    long duplicates = 0;
    long fenced = 0;
    for (long runId : h.runIds()) {
      RunCounters c = h.store().run(runId).orElseThrow().counters();
      redeliveries += c.redeliveries();
      duplicates += c.duplicatesSuppressed();
      fenced += c.staleResultsFenced();
    }
    // Speculation at work: attempts that lost the race to another attempt of their case, and among them those
    // whose worker finished the case and sent its outcome all the same (both attempts finished).
    java.util.Set<String> sentOutcome = new java.util.HashSet<>();
    for (WorkerLog.Entry e : h.log().entries()) {
      if (e.kind() == WorkerLog.Kind.SENT_OUTCOME) {
        sentOutcome.add(e.jobId() + "/" + e.token());
      }
    }
    long abandoned = 0;
    long bothFinished = 0;
    for (long runId : h.runIds()) {
      for (dev.tally.core.store.AttemptView a : h.store().attempts(runId)) {
        if (a.ending().equals(dev.tally.core.store.BatchRules.ABANDONED_ENDING)) {
          abandoned++;
          if (sentOutcome.contains(a.jobId() + "/" + a.token())) {
            bothFinished++;
          }
        }
      }
    }
    return new SimulationResult(seed, planted, violations.isEmpty(), List.copyOf(violations), h.traceHash(), h.trace(),
        h.cases(), h.faults(), redeliveries, duplicates, fenced, h.endedAtMillis(), h.endReason(), abandoned, bothFinished,
        Math.max(0, h.epochs().stream().filter(e -> e.kind() == EpochLedger.Kind.LEAD).count() - 1),
        h.epochs().stream().filter(e -> e.kind() == EpochLedger.Kind.REFUSED).count());
  }

  /** Summary of many seeds. */
  public record Summary(int seeds, int passed, List<SimulationResult> failures, long cases,
      Map<FaultKind, Integer> faults, long redeliveries, long duplicates, long fenced, long wallMillis, long abandoned,
      long bothFinished, long takeovers, long staleWritesRefused) {
    /** Whether every history passed. */
    public boolean allPassed() {
      return failures.isEmpty();
    }

    /** Histories per wall-clock second. */
    public double seedsPerSecond() {
      return seeds * 1000.0 / Math.max(1, wallMillis);
    }
  }

  /** Runs seeds {@code start .. start + count - 1}. */
  public Summary runMany(long start, int count) {
    return runMany(start, count, r -> { });
  }

  /**
   * Runs seeds {@code start .. start + count - 1}, calling {@code each} after every history (for progress).
   *
   * @throws IllegalArgumentException if {@code count < 0}
   */
  public Summary runMany(long start, int count, Consumer<SimulationResult> each) {
    if (count < 0) {
      throw new IllegalArgumentException("count must be >= 0, got " + count);
    }
    long began = System.nanoTime();
    List<SimulationResult> failures = new ArrayList<>();
    Map<FaultKind, Integer> faults = new EnumMap<>(FaultKind.class);
    long cases = 0;
    long redeliveries = 0;
    long duplicates = 0;
    long fenced = 0;
    long abandoned = 0;
    long bothFinished = 0;
    long takeovers = 0;
    long refused = 0;
    for (int i = 0; i < count; i++) {
      SimulationResult r = run(start + i);
      if (!r.passed()) {
        failures.add(r);
      }
      cases += r.cases();
      redeliveries += r.redeliveries();
      duplicates += r.duplicates();
      fenced += r.fenced();
      abandoned += r.abandoned();
      bothFinished += r.bothFinished();
      takeovers += r.takeovers();
      refused += r.staleWritesRefused();
      r.faults().forEach((k, n) -> faults.merge(k, n, Integer::sum));
      each.accept(r);
    }
    long wallMillis = (System.nanoTime() - began) / 1_000_000;
    return new Summary(count, count - failures.size(), List.copyOf(failures), cases, faults, redeliveries,
        duplicates, fenced, wallMillis, abandoned, bothFinished, takeovers, refused);
  }

  /** The first failing seed among {@code start .. start + count - 1}, or null if all pass. */
  public SimulationResult firstFailure(long start, int count) {
    for (int i = 0; i < count; i++) {
      SimulationResult r = run(start + i);
      if (!r.passed()) {
        return r;
      }
    }
    return null;
  }
}

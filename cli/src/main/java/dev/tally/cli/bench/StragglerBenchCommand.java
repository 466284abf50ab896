package dev.tally.cli.bench;

import dev.tally.cli.CoordinatorOptions;
import dev.tally.cli.HostPort;
import dev.tally.cli.LocalWorkerProcesses;
import dev.tally.cli.Main;
import dev.tally.cli.ProductDefaults;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.schedule.SpeculationPolicy;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.BatchRules;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import dev.tally.worker.eval.StretchedEvaluator;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * {@code tally bench-stragglers}: the makespan of one run of {@code sleep} cases on local worker processes,
 * in three fleets in one sitting: healthy; one worker {@code --stretch} times slower with speculative
 * execution off; the same with it on (the product's default). The promise measured: with speculation, a
 * fleet with one straggler finishes within {@value #TARGET_RATIO}x the healthy fleet's makespan.
 *
 * <p>Each fleet is a fresh coordinator on a fresh store with fresh workers (the straggler is worker 1,
 * started with {@code tally worker --stretch}), runs a warm-up run first (JVMs warm, connections up), then
 * the measured run. The makespan is from the run's submission to its last case recorded.
 *
 * <p>Threading: picocli calls {@link #call} on one thread.
 */
@Command(name = "bench-stragglers", mixinStandardHelpOptions = true, defaultValueProvider = ProductDefaults.class,
    description = {"Measure a run's makespan with one worker many times slower than the rest: healthy fleet, slow worker"
        + " without speculative execution, slow worker with it (its default), in one sitting. Target: with speculation,"
        + " at most " + StragglerBenchCommand.TARGET_RATIO + "x the healthy fleet's makespan."})
public final class StragglerBenchCommand implements Callable<Integer> {
  /** The makespan with speculation, against the healthy fleet's, that the benchmark holds Tally to. */
  static final double TARGET_RATIO = 1.3;

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--workers", defaultValue = "4", description = "Local worker processes (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int workers;

  @Option(names = "--slots", defaultValue = "1", description = "Slots per worker (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int slots;

  @Option(names = "--cases", defaultValue = "160", description = "Cases in the measured run (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int cases;

  @Option(names = "--case-millis", defaultValue = "500",
      description = "How long each case sleeps on a healthy worker, ms (default: ${DEFAULT-VALUE}).", paramLabel = "MILLIS")
  long caseMillis;

  @Option(names = "--stretch", defaultValue = "10",
      description = "How many times slower the straggling worker runs each case (default: ${DEFAULT-VALUE}).", paramLabel = "NUMBER")
  double stretch;

  @Mixin CoordinatorOptions coordinatorOptions;

  /** One fleet's measured run. */
  private record Sitting(String name, long makespanMillis, RunCounters counters, long abandoned, long backupWins) {}

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    if (workers < 2) {
      throw new ParameterException(spec.commandLine(), "--workers must be >= 2 (one straggler and the others), got " + workers);
    }
    dev.tally.cli.RunnerCommand.requireWorkerJavaOptions(spec.commandLine(), workers, LocalWorkerProcesses.Jvm.CASES);
    if (slots < 1 || cases < 1 || caseMillis < 1) {
      throw new ParameterException(spec.commandLine(), "--slots, --cases and --case-millis must be >= 1");
    }
    if (!(stretch >= 1 && stretch <= StretchedEvaluator.MAX_FACTOR)) {
      throw new ParameterException(spec.commandLine(),
          "--stretch must be from 1 to " + (long) StretchedEvaluator.MAX_FACTOR + ", got " + trim(stretch));
    }
    if (coordinatorOptions.given("--speculation")) {
      throw new ParameterException(spec.commandLine(),
          "--speculation is the benchmark's to set: it measures the fleet without it, then with its default");
    }
    List<Sitting> sittings = new ArrayList<>();
    sittings.add(sit("healthy fleet", 1.0, CoordinatorBuilder.DEFAULT_SPECULATION));
    sittings.add(sit("1 slow, speculation off", stretch, SpeculationPolicy.Mode.OFF));
    sittings.add(sit("1 slow, speculation " + CoordinatorBuilder.DEFAULT_SPECULATION.name().toLowerCase(Locale.ROOT),
        stretch, CoordinatorBuilder.DEFAULT_SPECULATION));

    out.printf("tally bench-stragglers: %d cores, %s %s, %s %s; java %s%n",
        Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"), System.getProperty("os.arch"),
        System.getProperty("java.vm.name"), System.getProperty("java.vm.version"), System.getProperty("java.version"));
    out.printf("command: tally %s%n", String.join(" ", spec.commandLine().getParseResult().originalArgs()));
    out.printf("settings: --workers %d --slots %d --cases %d --case-millis %d --stretch %s; sleep evaluator; the straggler"
        + " is worker local-1 (tally worker --stretch); each fleet a fresh coordinator, store and workers, warmed up%n",
        workers, slots, cases, caseMillis, trim(stretch));
    out.printf("ideal makespan: %d ms (cases x case-millis / (workers x slots))%n", cases * caseMillis / ((long) workers * slots));
    long healthy = sittings.get(0).makespanMillis();
    boolean exact = true;
    for (Sitting s : sittings) {
      RunCounters c = s.counters();
      boolean once = c.recorded() == cases && c.passed() == cases;
      exact &= once;
      out.printf("%-28s makespan %6d ms  %.2fx healthy  backups that won %d, attempts abandoned %d, fenced %d,"
          + " redeliveries %d, recorded %d of %d%s%n", s.name() + ":", s.makespanMillis(),
          (double) s.makespanMillis() / Math.max(1, healthy), s.backupWins(), s.abandoned(), c.staleResultsFenced(),
          c.redeliveries(), c.recorded(), cases, once ? "" : "  <-- NOT EXACT");
    }
    double ratio = (double) sittings.get(2).makespanMillis() / Math.max(1, healthy);
    boolean met = ratio <= TARGET_RATIO;
    out.printf("with speculation: %.2fx the healthy fleet's makespan (target <= %sx)%s%n", ratio, trim(TARGET_RATIO),
        met ? "" : "  <-- TARGET MISSED");
    return exact ? Main.EXIT_PASSED : Main.EXIT_FAILED;
  }

  /** Starts a fleet (worker 1 stretched by {@code factor}), warms it up, measures one run, and stops it. */
  private Sitting sit(String name, double factor, SpeculationPolicy.Mode speculation) throws Exception {
    Path dir = Files.createTempDirectory("tally-bench-stragglers");
    try {
      CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder()).speculation(speculation)
          .storeFile(dir.resolve("bench.db"));
      List<String> straggler = factor == 1.0 ? List.of() : List.of("--stretch=" + factor);
      try (Coordinator coordinator = start(builder);
          LocalWorkerProcesses local = LocalWorkerProcesses.start(workers, slots,
              new HostPort("127.0.0.1", coordinator.port()), dir.resolve("logs"), builder.workerToken().orElse(null),
              i -> i == 1 ? straggler : List.of())) {
        Store store = coordinator.store();
        measure(store, coordinator, Math.max(workers * slots, cases / 10), "warmup");
        long[] abandoned = new long[2];
        long t0 = System.nanoTime();
        long runId = createRun(store, cases, "measured");
        RunCounters c = coordinator.submit(runId).get(30, TimeUnit.MINUTES);
        long makespan = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        for (AttemptView a : store.attempts(runId)) {
          if (a.ending().equals(BatchRules.ABANDONED_ENDING)) {
            abandoned[0]++;
          }
        }
        // A backup that won is a recorded attempt whose job had an attempt abandoned with a lower token.
        java.util.Map<Long, Long> recordedToken = new java.util.HashMap<>();
        for (AttemptView a : store.attempts(runId)) {
          if (a.ending().equals("recorded")) {
            recordedToken.put(a.jobId(), a.token());
          }
        }
        for (AttemptView a : store.attempts(runId)) {
          if (a.ending().equals(BatchRules.ABANDONED_ENDING) && a.token() < recordedToken.getOrDefault(a.jobId(), 0L)) {
            abandoned[1]++;
          }
        }
        return new Sitting(name, makespan, c, abandoned[0], abandoned[1]);
      }
    } finally {
      deleteTree(dir);
    }
  }

  private void measure(Store store, Coordinator coordinator, int n, String name) throws Exception {
    coordinator.submit(createRun(store, n, name)).get(30, TimeUnit.MINUTES);
  }

  private long createRun(Store store, int n, String name) {
    List<CaseRecord> records = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String id = name + "-" + i;
      records.add(new CaseRecord(i, id, "{\"id\":\"" + id + "\"}"));
    }
    EvaluatorSpec sleep = new EvaluatorSpec("sleep", Map.of("millis", Long.toString(caseMillis)), Duration.ofMinutes(10));
    return store.createRun(new RunSpec("bench-stragglers:" + name, sleep,
        dev.tally.core.RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS), records);
  }

  private Coordinator start(CoordinatorBuilder builder) throws IOException {
    try {
      return builder.start();
    } catch (CoordinatorBuilder.StartException e) {
      throw new IOException("tally bench-stragglers: " + e.getMessage(), e);
    }
  }

  private static String trim(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      System.err.println("tally bench-stragglers: could not delete " + dir + ": " + e.getMessage());
    }
  }
}

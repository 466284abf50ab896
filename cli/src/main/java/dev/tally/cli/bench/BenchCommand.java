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
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;

/**
 * {@code tally bench}: end-to-end throughput of {@code noop} evals with local worker processes and the
 * SQLite store, and store commits per eval. A warm-up run (a tenth of the cases) comes first so the
 * measured run sees connected workers and compiled code.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, defaultValueProvider = BenchCommand.Defaults.class, description = "Measure noop evals per second end to end, and store commits per eval.")
public final class BenchCommand implements Callable<Integer> {
  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--workers", defaultValue = "3", description = "Local worker processes (default: ${DEFAULT-VALUE}).")
  int workers;

  @Option(names = "--slots", defaultValue = "2", description = "Slots per worker (default: ${DEFAULT-VALUE}).")
  int slots;

  @Option(names = "--cases", defaultValue = "200000", description = "Cases in the measured run (default: ${DEFAULT-VALUE}).")
  int cases;

  @Option(names = "--db", description = "Store file (default: a fresh temporary file, deleted afterwards).")
  Path db;

  @Mixin CoordinatorOptions coordinatorOptions;

  /**
   * The bench's prefetch unless --prefetch is given: a noop eval takes microseconds, so a worker needs
   * many assignments in hand to stay busy across the round trip and the group commit. (tally run keeps
   * the cautious default, slots again, because real cases are long and a deep prefetch holds back the tail.)
   */
  static final int BENCH_PREFETCH = 128;

  /** The product's defaults, but {@link #BENCH_PREFETCH} for {@code --prefetch}. */
  public static final class Defaults extends ProductDefaults {
    @Override
    public String defaultValue(ArgSpec arg) {
      return arg instanceof OptionSpec o && o.longestName().equals("--prefetch") ? Integer.toString(BENCH_PREFETCH) : super.defaultValue(arg);
    }
  }

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    if (workers < 1 || slots < 1 || cases < 1) {
      System.err.println("tally bench: --workers, --slots and --cases must be >= 1");
      return Main.EXIT_USAGE;
    }
    CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder());
    if (!coordinatorOptions.given("--prefetch")) {
      builder.prefetch(BENCH_PREFETCH);
    }
    Path dir = db == null ? Files.createTempDirectory("tally-bench") : db.toAbsolutePath().getParent();
    Path dbFile = db == null ? dir.resolve("bench.db") : db;
    EvaluatorSpec noop = new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1));
    try (Coordinator coordinator = start(builder.storeFile(dbFile));
        LocalWorkerProcesses local = LocalWorkerProcesses.start(workers, slots, new HostPort("127.0.0.1", coordinator.port()), dir.resolve("bench-logs"),
            builder.workerToken().orElse(null))) {
      Store store = coordinator.store();
      Measurement warmup = measure(store, coordinator, noop, Math.max(1, cases / 10), "warmup");
      Measurement m = measure(store, coordinator, noop, cases, "measured");
      out.printf("tally bench: %d cores, %s %s, %s %s; java %s%n",
          Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"), System.getProperty("os.arch"),
          System.getProperty("java.vm.name"), System.getProperty("java.vm.version"), System.getProperty("java.version"));
      out.printf("settings: --workers %d --slots %d --cases %d --prefetch %d, evaluator noop, SQLite WAL synchronous=NORMAL, store %s%n",
          workers, slots, cases, coordinator.serverSettings().prefetch(), dbFile);
      out.printf("warm-up: %d evals in %d ms%n", warmup.evals, warmup.millis);
      out.printf("%d evals in %d ms, %d store commits%n", m.evals, m.millis, m.commits);
      out.printf("%.0f evals/s%n", m.evals * 1000.0 / Math.max(1, m.millis));
      out.printf("%.4f commits/eval%n", (double) m.commits / m.evals);
      boolean exact = m.counters.recorded() == cases && m.counters.passed() == cases;
      out.printf("recorded %d of %d (duplicates suppressed %d, fenced %d, redeliveries %d)%s%n",
          m.counters.recorded(), cases, m.counters.duplicatesSuppressed(), m.counters.staleResultsFenced(), m.counters.redeliveries(),
          exact ? "" : "  <-- NOT EXACT");
      return exact ? Main.EXIT_PASSED : Main.EXIT_FAILED;
    } finally {
      if (db == null) {
        deleteTree(dir);
      }
    }
  }

  private Coordinator start(CoordinatorBuilder builder) throws IOException {
    try {
      return builder.start();
    } catch (CoordinatorBuilder.StartException e) {
      throw new IOException("tally bench: " + e.getMessage(), e);
    }
  }

  private record Measurement(long evals, long millis, long commits, RunCounters counters) {}

  private static Measurement measure(Store store, Coordinator coordinator, EvaluatorSpec noop, int n, String name) throws Exception {
    List<CaseRecord> records = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String id = name + "-" + i;
      records.add(new CaseRecord(i, id, "{\"id\":\"" + id + "\"}"));
    }
    long runId = store.createRun(new RunSpec("bench:" + name, noop, dev.tally.core.RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS), records);
    long commitsBefore = store.commits();
    long t0 = System.nanoTime();
    RunCounters c = coordinator.submit(runId).get(30, TimeUnit.MINUTES);
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    return new Measurement(n, millis, store.commits() - commitsBefore, c);
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (java.io.IOException e) {
      System.err.println("tally bench: could not delete " + dir + ": " + e.getMessage());
    }
  }
}

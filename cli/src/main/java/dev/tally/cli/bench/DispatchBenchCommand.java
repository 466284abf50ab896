package dev.tally.cli.bench;

import dev.tally.cli.CoordinatorOptions;
import dev.tally.cli.DurationConverter;
import dev.tally.cli.HostPort;
import dev.tally.cli.Main;
import dev.tally.cli.ProductDefaults;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.Store;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code tally bench-dispatch}: dispatch latency, from a lease to the worker starting the case, with an
 * ordinary fleet at a share of its capacity (by default 4 workers of 4 slots, cases of 5 ms, at most half the
 * slots busy). The target is p50 at most 1 ms and p99 at most 5 ms on loopback.
 *
 * <p>The coordinator runs in this process, on a fresh SQLite store with the product's settings (its
 * durability included: {@code --durability} changes it). Each worker is a real {@code WorkerSession} (the
 * worker's own protocol code and slot threads) in a JVM of its own, over TCP on loopback, running {@link
 * ConnectionsBenchCommand.StampEvaluator} cases: each notes {@link System#nanoTime()} as its slot thread
 * enters it, then sleeps the case's time. The lease's time is when the coordinator's commit that issued it
 * returned ({@link dev.tally.core.schedule.SchedulerObserver#leased}); on Linux both clocks are the host's
 * one {@code CLOCK_MONOTONIC}, so the two pair across processes. The load is the run's max-concurrency
 * ({@code --load} x the fleet's slots): every lease finds a free slot, so what is measured is dispatch, not
 * queueing. A warm-up run (a tenth of the cases, at least 200) goes first and is not counted: a JVM's first
 * thousand passes over a path run interpreted. Percentiles are exact (every latency sorted).
 *
 * <p>Threading: picocli calls {@link #call} on one thread; the lease stamps are written by the scheduler's
 * thread into a concurrent map.
 */
@Command(name = "bench-dispatch", mixinStandardHelpOptions = true, defaultValueProvider = ProductDefaults.class,
    description = {"Measure dispatch latency (a lease's commit to the worker starting the case) with an ordinary fleet at a"
        + " share of its capacity: worker JVMs on loopback, cases of a few ms; prints p50, p90, p99 and the settings."})
public final class DispatchBenchCommand implements Callable<Integer> {
  /** How long the workers may take to connect: a few JVMs starting on a loaded machine. */
  static final Duration CONNECT_TIMEOUT = Duration.ofMinutes(2);

  /** The targets on loopback, printed beside the figures. */
  static final double TARGET_P50_MILLIS = 1.0;
  static final double TARGET_P99_MILLIS = 5.0;

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--workers", defaultValue = "4", description = "Worker processes (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int workers;

  @Option(names = "--slots", defaultValue = "4", description = "Slots of each worker (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int slots;

  @Option(names = "--load", defaultValue = "0.5", description = "Share of the fleet's slots busy at once (default: ${DEFAULT-VALUE}).", paramLabel = "NUMBER")
  double load;

  @Option(names = "--case-millis", defaultValue = "5", description = "How long each case runs, ms (default: ${DEFAULT-VALUE}).", paramLabel = "MILLIS")
  long caseMillis;

  // 20,000: with 5,000 (about 7 s) the C2 compiler still took a third of a core during the measured run on a
  // quiet 2-core machine, and its p50 and p99 were twice those of a 20,000-case run (2026-12-04).
  @Option(names = "--cases", defaultValue = "20000", description = "Cases measured (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int cases;

  @Mixin CoordinatorOptions coordinatorOptions;

  @Override
  public Integer call() throws Exception {
    if (workers < 1 || slots < 1 || !(load > 0 && load <= 1) || caseMillis < 0 || cases < 1) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(),
          "--workers and --slots must be >= 1, --load in (0, 1], --case-millis >= 0, --cases >= 1");
    }
    int concurrency = Math.max(1, (int) Math.round(workers * slots * load));
    PrintStream out = System.out;
    ConnectionsBenchCommand.LeaseStamps stamps = new ConnectionsBenchCommand.LeaseStamps();
    Path dir = Files.createTempDirectory("tally-bench-dispatch");
    CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder())
        .storeFile(dir.resolve("bench.db"))
        .listen(new InetSocketAddress("127.0.0.1", 0))
        .observer(stamps);
    List<Process> children = new ArrayList<>();
    try (Coordinator coordinator = builder.start()) {
      HostPort address = new HostPort("127.0.0.1", coordinator.port());
      for (int p = 0; p < workers; p++) {
        children.add(ConnectionsBenchCommand.startSimulator(address, 1, slots, "w" + p + "-", dir.resolve("worker-" + p + ".log")));
      }
      boolean joined = ConnectionsBenchCommand.await(() -> coordinator.connectedWorkers() >= workers, CONNECT_TIMEOUT);
      out.printf("tally bench-dispatch: %d cores, %s %s, %s %s; java %s%n", Runtime.getRuntime().availableProcessors(),
          System.getProperty("os.name"), System.getProperty("os.arch"), System.getProperty("java.vm.name"),
          System.getProperty("java.vm.version"), System.getProperty("java.version"));
      out.printf("command: tally %s%n", String.join(" ", spec.commandLine().getParseResult().originalArgs()));
      out.printf("settings: %d workers x %d slots (one JVM each, real worker sessions over TCP on loopback), cases of %d ms,"
          + " at most %d leased at once (%.0f%% of %d slots); SQLite store, durability %s%n", workers, slots, caseMillis,
          concurrency, load * 100, workers * slots, builder.durability().name().toLowerCase(java.util.Locale.ROOT));
      if (!joined) {
        out.printf("only %d of %d workers connected within %s  <-- FAILED%n", coordinator.connectedWorkers(), workers,
            DurationConverter.text(CONNECT_TIMEOUT));
        return Main.EXIT_FAILED;
      }
      Store store = coordinator.store();
      int warmCases = Math.max(200, cases / 10);
      long warm = ConnectionsBenchCommand.createStampRun(store, "bench-dispatch:warm-up", "warm", warmCases, concurrency, caseMillis);
      coordinator.submit(warm).get(10, TimeUnit.MINUTES);

      String loadBefore = ConnectionsBenchCommand.loadAverage();
      ConnectionsBenchCommand.Cpu cpu = ConnectionsBenchCommand.Cpu.start();
      long runId = ConnectionsBenchCommand.createStampRun(store, "bench-dispatch", "case", cases, concurrency, caseMillis);
      long t0 = System.nanoTime();
      RunCounters c = coordinator.submit(runId).get(30, TimeUnit.MINUTES);
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      long[] latencies = stamps.latencies(store, runId);
      Arrays.sort(latencies);
      double p50 = ConnectionsBenchCommand.percentileMillis(latencies, 50);
      double p99 = ConnectionsBenchCommand.percentileMillis(latencies, 99);
      out.printf("load average %s before, %s after%n", loadBefore, ConnectionsBenchCommand.loadAverage());
      out.printf("run: %d cases in %d ms (%.0f evals/s, %.0f%% of the fleet's capacity at %d ms a case), coordinator CPU %.1f%% of"
          + " one core; recorded %d, redeliveries %d%n", cases, millis, cases * 1000.0 / Math.max(1, millis),
          caseMillis == 0 ? Double.NaN : 100.0 * cases * caseMillis / Math.max(1.0, (double) millis * workers * slots), caseMillis,
          cpu.percent(), c.recorded(), c.redeliveries());
      out.printf("dispatch latency, lease to the case's start (%d paired of %d): p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms%n",
          latencies.length, cases, p50, ConnectionsBenchCommand.percentileMillis(latencies, 90), p99,
          ConnectionsBenchCommand.percentileMillis(latencies, 100));
      out.printf("target: p50 <= %.0f ms %s, p99 <= %.0f ms %s%n", TARGET_P50_MILLIS, p50 <= TARGET_P50_MILLIS ? "met" : "NOT MET",
          TARGET_P99_MILLIS, p99 <= TARGET_P99_MILLIS ? "met" : "NOT MET");
      boolean exact = c.recorded() == cases && c.passed() == cases && latencies.length == cases;
      if (!exact) {
        out.println("run: NOT EXACT (every case recorded once and paired with its lease)");
      }
      return exact ? Main.EXIT_PASSED : Main.EXIT_FAILED;
    } catch (CoordinatorBuilder.StartException e) {
      System.err.println("tally bench-dispatch: " + e.getMessage());
      return Main.EXIT_FAILED;
    } finally {
      ConnectionsBenchCommand.stopAndDelete(children, dir);
    }
  }
}

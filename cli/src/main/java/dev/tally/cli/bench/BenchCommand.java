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
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import dev.tally.worker.eval.ModelSettings;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
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
 * SQLite store, store commits per eval and fsyncs per eval, at the coordinator's durability ({@code
 * --durability}). Warm-up runs (a tenth of the cases each) come first so the measured run sees connected
 * workers and compiled code: as many as it takes the JIT compilers to quiet ({@link #warmUp}).
 *
 * <p>Fsyncs are counted, not inferred, with {@code --count-fsyncs}: {@link FsyncCounter} attaches strace to
 * this process (the coordinator) over the measured run, which slows its system calls, so that run's
 * evals/s is not the one to quote. Without it the report says what the store does per commit instead.
 * The workers' CPU time per eval is reported beside the coordinator's: on a machine of few cores the
 * two share them, and evals/s is bounded by their sum.
 *
 * <p>With {@code --evaluator model} the evals are the model evaluator's, against {@link FakeEndpoint} (the
 * fake OpenAI-compatible endpoint in a process of its own, answering after {@code --latency}): evals/s at a
 * concurrency of workers x slots, the requests billed, the most in flight at once, and the coordinator's CPU
 * time per eval (this process's CPU time over the measured run: the coordinator and the benchmark's own
 * waiting, not the workers' nor the endpoint's).
 *
 * <p>Threading: picocli calls {@link #call} on one thread.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, defaultValueProvider = BenchCommand.Defaults.class,
    description = {"Measure evals per second end to end, and store commits per eval: noop evals, or with --evaluator model"
        + " the model evaluator's against a fake endpoint on loopback with a fixed latency (also the requests billed,"
        + " the most in flight and the coordinator's CPU per eval)."})
public final class BenchCommand implements Callable<Integer> {
  /** The evaluators the benchmark runs. */
  enum Kind { noop, model }

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--workers", defaultValue = "3", description = "Local worker processes (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int workers;

  @Option(names = "--slots", defaultValue = "2", description = "Slots per worker (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int slots;

  @Option(names = "--cases", description = "Cases in the measured run (default: " + NOOP_CASES + " noop, " + MODEL_CASES + " model).", paramLabel = "N")
  Integer cases;

  @Option(names = "--evaluator", defaultValue = "noop",
      description = "noop or model (default: ${DEFAULT-VALUE}); model keeps tally run's prefetch unless --prefetch is given.", paramLabel = "KIND")
  Kind evaluator;

  @Option(names = "--latency", converter = dev.tally.cli.DurationConverter.class,
      description = "model: how long the fake endpoint waits before each answer (default: " + MODEL_LATENCY_TEXT + ").", paramLabel = "DURATION")
  Duration latency;

  @Option(names = "--db", converter = dev.tally.cli.DbOptions.Converter.class, paramLabel = "STORE",
      description = "The store: " + dev.tally.cli.DbOptions.GRAMMAR + " (default: a fresh temporary SQLite file, deleted afterwards).")
  StoreLocation db;

  @Mixin dev.tally.cli.DbOptions dbOptions;

  @Option(names = "--count-fsyncs",
      description = "Count the coordinator's fsync and fdatasync calls over the measured run with strace (attached to"
          + " this process; it slows every system call, so quote evals/s from a run without it).")
  boolean countFsyncs;

  @Option(names = "--repeat", description = "Measured runs, one after another on the warmed-up fleet; the report gives each"
      + " one's evals/s and quotes the median run (default: " + NOOP_REPEAT + " noop, 1 model; at most " + MAX_REPEAT + ").", paramLabel = "N")
  Integer repeat;

  @Mixin CoordinatorOptions coordinatorOptions;

  /**
   * The noop bench's measured runs unless --repeat is given: on a shared 2-core machine one run's evals/s
   * moves by a third from one run to the next (README, Benchmark), so the figure quoted is the median of three.
   */
  static final int NOOP_REPEAT = 3;

  /** The most measured runs --repeat takes. */
  static final int MAX_REPEAT = 50;

  /**
   * The noop bench's prefetch unless --prefetch is given: a noop eval takes microseconds, so a worker needs
   * many assignments in hand to stay busy across the round trip and the group commit: the most the
   * protocol allows. With 128, the bench's figure until 2026-12-04, the fleet waited on round trips and
   * made a third fewer evals/s (measured in one sitting: README, Benchmark). (tally run keeps the cautious
   * default, slots again, because real cases are long and a deep prefetch holds back the tail.)
   */
  static final int BENCH_PREFETCH = dev.tally.protocol.ProtocolLimits.MAX_PREFETCH;

  /** The noop run's cases: enough that start-up weighs little against 10^4-10^5 evals/s. */
  static final int NOOP_CASES = 200_000;

  /** The model run's cases: at 64 requests at once and 50 ms each, about 16 s, so a run fits a sitting. */
  static final int MODEL_CASES = 20_000;

  /** The fake endpoint's default latency: a fast hosted model's time to a one-token answer. */
  static final String MODEL_LATENCY_TEXT = "50ms";

  /** The variable the model evaluator reads a key from; the fake endpoint takes any key, or none. */
  static final String MODEL_KEY_ENV = "TALLY_BENCH_API_KEY";

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
    int n = cases != null ? cases : evaluator == Kind.model ? MODEL_CASES : NOOP_CASES;
    int runs = repeat != null ? repeat : evaluator == Kind.noop ? NOOP_REPEAT : 1;
    if (runs < 1 || runs > MAX_REPEAT) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--repeat must be from 1 to " + MAX_REPEAT + ", got " + runs);
    }
    if (workers < 1 || slots < 1 || n < 1) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--workers, --slots and --cases must be >= 1, got "
          + workers + ", " + slots + " and " + n);
    }
    if (evaluator != Kind.model && latency != null) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--latency is only for --evaluator model");
    }
    if (countFsyncs && !FsyncCounter.available()) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--count-fsyncs needs " + FsyncCounter.STRACE
          + " on the PATH (apt-get install strace)");
    }
    Duration endpointLatency = latency != null ? latency : dev.tally.core.DurationText.parse(MODEL_LATENCY_TEXT);
    CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder());
    if (!coordinatorOptions.given("--prefetch") && evaluator == Kind.noop) {
      // A model eval lasts the endpoint's latency, like a real case: tally run's prefetch keeps a worker busy,
      // and a deeper one only makes queued cases look slow to outlier detection.
      builder.prefetch(BENCH_PREFETCH);
    }
    dev.tally.cli.RunnerCommand.requireWorkerJavaOptions(spec.commandLine(), workers, LocalWorkerProcesses.Jvm.THROUGHPUT);
    StoreLocation given = db != null ? db : new StoreLocation.SqliteFile(Path.of("bench.db"));
    Stores.Options storeOptions = dbOptions.storeOptions(given);
    if (db instanceof StoreLocation.SqliteFile f) {
      dev.tally.cli.RunnerCommand.requireDirectoryOf(spec.commandLine(), "--db", f.file());
    }
    // Logs (and a temporary store) go in a temporary directory, or beside the store's file.
    Path dir = db instanceof StoreLocation.SqliteFile f ? f.file().toAbsolutePath().getParent() : Files.createTempDirectory("tally-bench");
    StoreLocation store = db != null ? db : new StoreLocation.SqliteFile(dir.resolve("bench.db"));
    Path logs = Files.createDirectories(dir.resolve("bench-logs"));
    try (FakeEndpoint endpoint = evaluator == Kind.model ? FakeEndpoint.start(endpointLatency, logs.resolve("fake-endpoint.log")) : null;
        Coordinator coordinator = start(builder.storeLocation(store, storeOptions));
        // A noop worker's own code is the load: its JVM keeps both compilers.
        LocalWorkerProcesses local = LocalWorkerProcesses.start(workers, slots, new HostPort("127.0.0.1", coordinator.port()), logs,
            builder.workerToken().orElse(null), LocalWorkerProcesses.Jvm.THROUGHPUT)) {
      EvaluatorSpec spec = endpoint == null ? new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)) : modelSpec(endpoint.baseUrl());
      Store opened = coordinator.store();
      // The model bench warms up by the same rule: with one warm-up run (until 2026-12-04) the JIT compilers
      // still took a third of the measured run's CPU, and the workers' CPU per eval was mostly theirs.
      Warmup warmup = warmUp(opened, coordinator, local, spec, Math.max(1, n / 10), endpoint, MAX_WARMUP_RUNS);
      long waitedMillis = awaitEjectionsEnded(opened);
      List<Measurement> measured = new ArrayList<>(runs);
      for (int r = 1; r <= runs; r++) {
        measured.add(measure(opened, coordinator, local, spec, n, runs == 1 ? "measured" : "measured" + r, endpoint,
            countFsyncs ? logs.resolve("strace-summary-" + r + ".txt") : null));
      }
      List<Measurement> byRate = measured.stream().sorted(java.util.Comparator.comparingDouble(Measurement::evalsPerSecond)).toList();
      Measurement m = byRate.get((byRate.size() - 1) / 2); // the median (the lower of the middle two for an even count)
      out.printf("tally bench: %d cores, %s %s, %s %s; java %s%n",
          Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"), System.getProperty("os.arch"),
          System.getProperty("java.vm.name"), System.getProperty("java.vm.version"), System.getProperty("java.version"));
      // the parse result's arguments are the whole command line, from the subcommand's name on
      out.printf("command: tally %s%n", String.join(" ", this.spec.commandLine().getParseResult().originalArgs()));
      out.printf("settings: --workers %d --slots %d --cases %d --prefetch %d --durability %s, evaluator %s, store %s%n",
          workers, slots, n, coordinator.serverSettings().prefetch(), builder.durability().configName(),
          endpoint == null ? "noop" : "model against a fake endpoint on loopback (its own process), latency "
              + dev.tally.cli.DurationConverter.text(endpointLatency) + ", concurrency " + (long) workers * slots + " (workers x slots)",
          store.describe());
      out.printf("store: %s%n", Stores.describe(store, builder.durability()));
      out.printf("warm-up: %d evals in %d ms (%d runs%s)%s%n", warmup.evals, warmup.millis, warmup.runs,
          warmup.lastJitShare < 0 ? "" : String.format(java.util.Locale.ROOT, "; JIT compilers %.0f%% of the last one's CPU",
              warmup.lastJitShare * 100),
          waitedMillis > 0 ? "; then " + waitedMillis + " ms until workers ejected by outlier detection in it (cold JVMs) were back" : "");
      if (runs > 1) {
        out.printf("measured runs: %d of %d cases each, evals/s in order: %s; min %.0f, max %.0f; the figures below are the"
            + " median run's (run %d)%n", runs, n,
            String.join(", ", measured.stream().map(x -> String.format(java.util.Locale.ROOT, "%.0f", x.evalsPerSecond())).toList()),
            byRate.get(0).evalsPerSecond(), byRate.get(runs - 1).evalsPerSecond(), measured.indexOf(m) + 1);
      }
      out.printf("%d evals in %d ms, %d store commits%n", m.evals, m.millis, m.commits);
      out.printf("%.0f evals/s%s%n", m.evalsPerSecond(), runs > 1 ? " (median of " + runs + " runs)" : "");
      out.printf("%.4f commits/eval%n", (double) m.commits / m.evals);
      if (m.fsyncs >= 0) {
        out.printf("%.4f fsyncs/eval (measured: strace counted %d fsync and fdatasync calls of the coordinator over the"
            + " measured run, which it slowed)%n", (double) m.fsyncs / m.evals, m.fsyncs);
      } else {
        out.printf("fsyncs/eval: not measured (--count-fsyncs counts them with strace); the store %s%n",
            Stores.fsyncs(store, builder.durability()));
      }
      if (m.jitShare >= 0) {
        out.printf("JIT compilers: %.0f%% of the measured run's CPU (coordinator and workers)%n", m.jitShare * 100);
      }
      if (m.cpuNanos >= 0) {
        out.printf("coordinator CPU: %d ms, %.1f us/eval (this process: coordinator and benchmark; not the workers, not the endpoint)%n",
            TimeUnit.NANOSECONDS.toMillis(m.cpuNanos), m.cpuNanos / 1000.0 / m.evals);
      } else {
        out.println("coordinator CPU: not measurable on this JVM");
      }
      if (m.workerCpuNanos >= 0) {
        out.printf("workers CPU: %d ms, %.1f us/eval (the %d worker processes together)%n",
            TimeUnit.NANOSECONDS.toMillis(m.workerCpuNanos), m.workerCpuNanos / 1000.0 / m.evals, workers);
      }
      boolean billedOnce = true;
      boolean exact = true;
      for (int r = 0; r < runs; r++) {
        Measurement x = measured.get(r);
        String inRun = runs > 1 ? " in run " + (r + 1) : "";
        if (x.endpoint != null) {
          boolean runBilledOnce = x.endpoint.billed() == n;
          billedOnce &= runBilledOnce;
          out.printf("endpoint%s: %d requests billed for %d evals, %d requests, most in flight at once %d of %d%s%n",
              inRun, x.endpoint.billed(), n, x.endpoint.requests(),
              x.endpoint.maxInFlight(), (long) workers * slots, runBilledOnce ? "" : "  <-- NOT ONE BILL PER EVAL");
        }
        boolean runExact = x.counters.recorded() == n && x.counters.passed() == n;
        exact &= runExact;
        out.printf("recorded %d of %d%s (duplicates suppressed %d, fenced %d, redeliveries %d)%s%n",
            x.counters.recorded(), n, inRun, x.counters.duplicatesSuppressed(),
            x.counters.staleResultsFenced(), x.counters.redeliveries(), runExact ? "" : "  <-- NOT EXACT");
      }
      return exact && billedOnce ? Main.EXIT_PASSED : Main.EXIT_FAILED;
    } finally {
      if (!(db instanceof StoreLocation.SqliteFile)) {
        deleteTree(dir);
      }
    }
  }

  /**
   * Waits until no worker is ejected by outlier detection: a worker whose JVM was slower to warm up can be
   * ejected during the warm-up, and the measured run would run without it. Reads the statuses the coordinator
   * saves; returns how long it waited, in milliseconds.
   */
  private static long awaitEjectionsEnded(Store store) throws InterruptedException {
    long start = System.currentTimeMillis();
    boolean waited = false;
    while (true) {
      long until = store.workerStatuses().stream().mapToLong(dev.tally.core.store.WorkerStatus::ejectedUntilMillis).max().orElse(0);
      long now = System.currentTimeMillis();
      if (until <= now) {
        return waited ? now - start : 0;
      }
      waited = true;
      Thread.sleep(until - now + 100); // the ejection's own end, not a guess
    }
  }

  /** The model evaluator against the fake endpoint: no key (the variable is normally unset), no scorer. */
  private static EvaluatorSpec modelSpec(String baseUrl) {
    Map<String, String> options = new java.util.LinkedHashMap<>();
    options.put(ModelSettings.Option.BASE_URL.key, baseUrl);
    options.put(ModelSettings.Option.MODEL.key, "bench");
    options.put(ModelSettings.Option.API_KEY_ENV.key, MODEL_KEY_ENV);
    ModelSettings.parse(options); // what a worker will do with them: a mistake here fails now, not per case
    return new EvaluatorSpec("model", options, Duration.ofMinutes(1));
  }

  private Coordinator start(CoordinatorBuilder builder) throws IOException {
    try {
      return builder.start();
    } catch (CoordinatorBuilder.StartException e) {
      // As tally run says a store or a port it cannot use: bad input, exit 2.
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e);
    }
  }

  /**
   * One run's figures.
   *
   * @param cpuNanos this process's CPU time over the run, or -1 if the JVM cannot say
   * @param workerCpuNanos the local workers' CPU time over the run, or -1 if the operating system does not say
   * @param fsyncs the coordinator's fsync and fdatasync calls over the run, counted by strace; -1 if not counted
   * @param endpoint the endpoint's counters over the run (billed and requests as differences, the peak since
   *     its start), or null without one
   */
  private record Measurement(long evals, long millis, long commits, RunCounters counters, long cpuNanos, long workerCpuNanos,
      long fsyncs, FakeEndpoint.Counters endpoint, double jitShare) {
    double evalsPerSecond() {
      return evals * 1000.0 / Math.max(1, millis);
    }
  }

  /**
   * At most this many warm-up runs: a JIT that never quiets (a machine too busy for its compiler threads)
   * must not stretch the bench without end; eight tenths of the measured run's cases is then the warm-up.
   */
  static final int MAX_WARMUP_RUNS = 8;

  /**
   * The warm-up ends after the run in which the JIT compilers took at most this share of the CPU of the
   * coordinator and the workers. Measured here (2 cores, the noop bench): after one run of a tenth of
   * 200,000 cases they still took about half of the coordinator's CPU; once the hot path is compiled they
   * take a few percent, which C2's later recompilations keep up.
   */
  static final double WARM_JIT_SHARE = 0.10;

  /**
   * The warm-up's figures.
   *
   * @param lastJitShare the JIT compilers' share of the last warm-up run's CPU, or -1 if not known
   */
  private record Warmup(long evals, long millis, int runs, double lastJitShare) {}

  /**
   * Runs warm-up runs of {@code n} cases until the code is compiled: until the JIT compilers took at most
   * {@link #WARM_JIT_SHARE} of a run's CPU (coordinator and workers, {@link JitCpu}), or for {@code maxRuns}
   * runs. Where the share cannot be read (not Linux), one run.
   */
  private static Warmup warmUp(Store store, Coordinator coordinator, LocalWorkerProcesses local, EvaluatorSpec evaluator, int n,
      FakeEndpoint endpoint, int maxRuns) throws Exception {
    long evals = 0;
    long millis = 0;
    for (int run = 1; ; run++) {
      Measurement m = measure(store, coordinator, local, evaluator, n, "warmup" + run, endpoint, null);
      evals += m.evals;
      millis += m.millis;
      if (m.jitShare < 0 || m.jitShare <= WARM_JIT_SHARE || run >= maxRuns) {
        return new Warmup(evals, millis, run, m.jitShare);
      }
    }
  }

  /** This process and the local workers. */
  private static List<Long> jvms(LocalWorkerProcesses local) {
    List<Long> pids = new ArrayList<>(local.pids());
    pids.add(ProcessHandle.current().pid());
    return pids;
  }

  /**
   * Runs {@code n} cases and measures the run.
   *
   * @param straceSummary where strace writes its summary when it counts this run's fsyncs; null: not counted
   */
  private static Measurement measure(Store store, Coordinator coordinator, LocalWorkerProcesses local, EvaluatorSpec evaluator, int n,
      String name, FakeEndpoint endpoint, Path straceSummary) throws Exception {
    List<CaseRecord> records = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String id = name + "-" + i;
      // The model's question (the fake endpoint answers it); noop ignores it.
      records.add(new CaseRecord(i, id, "{\"id\":\"" + id + "\",\"input\":\"What is " + i + " + 1?\"}"));
    }
    long runId = store.createRun(new RunSpec("bench:" + name, evaluator, dev.tally.core.RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS), records);
    FakeEndpoint.Counters before = endpoint == null ? null : endpoint.resetPeak();
    FsyncCounter fsyncCounter = straceSummary == null ? null : FsyncCounter.attach(ProcessHandle.current().pid(), straceSummary);
    long fsyncs = -1;
    long commitsBefore = store.commits();
    long cpuBefore = processCpuNanos();
    long workerCpuBefore = local.cpuNanos();
    JitCpu.Sample jitBefore = JitCpu.sample(jvms(local));
    long t0 = System.nanoTime();
    RunCounters c;
    try {
      c = coordinator.submit(runId).get(30, TimeUnit.MINUTES);
    } catch (Exception | Error e) {
      if (fsyncCounter != null) {
        fsyncCounter.close();
      }
      throw e;
    }
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    long cpuAfter = processCpuNanos();
    long workerCpuAfter = local.cpuNanos();
    double jitShare = JitCpu.sample(jvms(local)).shareSince(jitBefore);
    long commits = store.commits() - commitsBefore;
    if (fsyncCounter != null) {
      fsyncs = fsyncCounter.stop();
    }
    FakeEndpoint.Counters run = null;
    if (endpoint != null) {
      FakeEndpoint.Counters after = endpoint.counters();
      run = new FakeEndpoint.Counters(after.requests() - before.requests(), after.billed() - before.billed(), after.inFlight(), after.maxInFlight());
    }
    return new Measurement(n, millis, commits, c, cpuBefore < 0 || cpuAfter < 0 ? -1 : cpuAfter - cpuBefore,
        workerCpuBefore < 0 || workerCpuAfter < 0 ? -1 : workerCpuAfter - workerCpuBefore, fsyncs, run, jitShare);
  }

  /** This process's CPU time (all its threads, user and system) in nanoseconds, or -1 if the JVM cannot say. */
  private static long processCpuNanos() {
    return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
        ? os.getProcessCpuTime() : -1;
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (java.io.IOException e) {
      System.err.println("tally bench: could not delete " + dir + ": " + e.getMessage());
    }
  }
}

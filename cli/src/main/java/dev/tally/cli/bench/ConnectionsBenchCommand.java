package dev.tally.cli.bench;

import dev.tally.cli.CoordinatorOptions;
import dev.tally.cli.DurationConverter;
import dev.tally.cli.HostPort;
import dev.tally.cli.Main;
import dev.tally.cli.ProductDefaults;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.FleetLimits;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.Verdict;
import dev.tally.core.schedule.SchedulerObserver;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import dev.tally.worker.WorkerSession;
import dev.tally.worker.WorkerSettings;
import dev.tally.worker.eval.EvalContext;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import dev.tally.worker.eval.EvaluatorFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code tally bench-connections}: one coordinator (in this process, on a fresh SQLite store) and a
 * thousand simulated workers, each a real {@link WorkerSession} (the worker's own protocol code: hello,
 * heartbeats, assignments, results, outbox) over its own TCP connection on loopback, many sessions to a
 * process in a few child JVMs. It measures, in phases:
 *
 * <ol>
 *   <li><b>Idle:</b> every worker connected and heartbeating, no work: the coordinator's CPU (this process's
 *       CPU time over the phase's wall time, from {@code OperatingSystemMXBean}), and that none was reaped.
 *   <li><b>Dispatch at a share of the fleet's capacity</b> ({@code --load}, default 50%): a run whose cases
 *       each take {@code --case-millis}, with at most load x workers x 1 slot leased at once (the run's
 *       {@code max-concurrency}), so half the slots are free for every lease. <b>Dispatch latency</b> is
 *       from the lease (the coordinator's commit that issued it returned: {@link SchedulerObserver#leased})
 *       to the worker starting the case (its slot thread entering the evaluator), both read from
 *       {@link System#nanoTime()}, which on Linux is the host's one monotonic clock ({@code CLOCK_MONOTONIC})
 *       in every process: the worker stamps its start into the case's output, and the bench pairs it with
 *       the lease by job and fencing token. Percentiles are exact (every latency sorted). The phase's
 *       coordinator CPU is printed too.
 *   <li><b>Detection:</b> one child process frozen (SIGSTOP: its connections stay open and fall silent) until
 *       the coordinator has convicted every one of its workers, then another killed ({@code kill -9}: the
 *       kernel closes its sockets); the time to the last of each process's workers gone.
 *   <li><b>Dispatch after the losses:</b> a second run on the survivors finishes with every case recorded once.
 * </ol>
 *
 * <p>The simulated workers' mode is this command with {@code --simulate} (hidden): it starts that many
 * sessions against {@code --coordinator} and runs until its stdin closes.
 *
 * <p>Threading: picocli calls {@link #call} on one thread; the lease stamps are written by the scheduler's
 * thread into a concurrent map.
 */
@Command(name = "bench-connections", mixinStandardHelpOptions = true, defaultValueProvider = ProductDefaults.class,
    description = {"Measure one coordinator with many worker connections (simulated workers: real sessions over TCP,"
        + " many to a process): its CPU with every worker heartbeating, dispatch latency (lease to the case's start)"
        + " at a share of the fleet's capacity, and detection of a frozen and a killed process's workers."})
public final class ConnectionsBenchCommand implements Callable<Integer> {
  /** The evaluator the simulated workers run: sleeps the case's time, and reports when it started. */
  static final String STAMP_KIND = "bench-stamp";

  /** How long the simulated workers may take to connect: a thousand JVM-side sessions on a loaded machine. */
  static final Duration CONNECT_TIMEOUT = Duration.ofMinutes(3);

  /** How long a process's workers may take to be convicted: far above the detector's window, so a slow one shows. */
  static final Duration DETECTION_TIMEOUT = Duration.ofMinutes(2);

  /** Simulated worker JVMs are small: sessions are mostly idle threads and buffers. */
  private static final List<String> SIMULATOR_JVM_OPTIONS = List.of("-Xmx384m", "-XX:+UseSerialGC", "-Xss256k");

  /** Event-loop threads per simulator process: one per core of this machine's kind is plenty for idle sessions. */
  private static final int SIMULATOR_IO_THREADS = 2;

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--workers", defaultValue = "1000", description = "Simulated workers, one connection and one slot each (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int workers;

  @Option(names = "--processes", defaultValue = "4", description = "JVMs the simulated workers share, at least 3 (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int processes;

  @Option(names = "--load", defaultValue = "0.5", description = "Share of the fleet's slots busy during the dispatch phase (default: ${DEFAULT-VALUE}).", paramLabel = "NUMBER")
  double load;

  @Option(names = "--case-millis", defaultValue = "1000", description = "How long each case runs, ms (default: ${DEFAULT-VALUE}).", paramLabel = "MILLIS")
  long caseMillis;

  @Option(names = "--cases", description = "Cases of the dispatch phase (default: enough for about 20 s at the load).", paramLabel = "N")
  Integer cases;

  @Option(names = "--idle", defaultValue = "10s", converter = DurationConverter.class, description = "Length of the idle phase (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration idle;

  @Option(names = "--simulate", hidden = true, description = "Run this many simulated workers against --coordinator until stdin closes.", paramLabel = "N")
  Integer simulate;

  @Option(names = "--coordinator", hidden = true, converter = HostPort.Converter.class, description = "With --simulate: the coordinator.", paramLabel = "HOST:PORT")
  HostPort coordinatorAddress;

  @Option(names = "--name-prefix", hidden = true, defaultValue = "sim", description = "With --simulate: the workers' name prefix.", paramLabel = "PREFIX")
  String namePrefix;

  @Option(names = "--sim-slots", hidden = true, defaultValue = "1", description = "With --simulate: slots of each simulated worker.", paramLabel = "N")
  int simSlots;

  @Mixin CoordinatorOptions coordinatorOptions;

  @Override
  public Integer call() throws Exception {
    if (simulate != null) {
      return simulate();
    }
    if (workers < processes || processes < 3 || load <= 0 || load > 1 || caseMillis < 0 || (cases != null && cases < 1)) {
      // Three processes at least: the detection phase freezes one and kills another, and a third runs on.
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--processes must be >= 3 and <= --workers,"
          + " --load in (0, 1], --case-millis >= 0, --cases >= 1");
    }
    int concurrency = Math.max(1, (int) Math.round(workers * load));
    int n = cases != null ? cases : (int) Math.max(1_000, concurrency * 20_000L / Math.max(1, caseMillis));
    PrintStream out = System.out;
    LeaseStamps stamps = new LeaseStamps();
    Path dir = Files.createTempDirectory("tally-bench-connections");
    CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder())
        .storeFile(dir.resolve("bench.db"))
        .listen(new InetSocketAddress("127.0.0.1", 0))
        .observer(stamps);
    List<Process> children = new ArrayList<>();
    try (Coordinator coordinator = builder.start()) {
      HostPort address = new HostPort("127.0.0.1", coordinator.port());
      long startedNanos = System.nanoTime();
      for (int p = 0; p < processes; p++) {
        int share = workers / processes + (p < workers % processes ? 1 : 0);
        children.add(startSimulator(address, share, 1, "sim" + p + "-", dir.resolve("simulator-" + p + ".log")));
      }
      boolean joined = await(() -> coordinator.connectedWorkers() >= workers, CONNECT_TIMEOUT);
      long connectMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
      out.printf("tally bench-connections: %d cores, %s %s, %s %s; java %s; load average %s%n",
          Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"), System.getProperty("os.arch"),
          System.getProperty("java.vm.name"), System.getProperty("java.vm.version"), System.getProperty("java.version"), loadAverage());
      out.printf("command: tally %s%n", String.join(" ", spec.commandLine().getParseResult().originalArgs()));
      out.printf("settings: %d simulated workers (1 slot each) in %d processes, over TCP on loopback; heartbeat every %s;"
          + " SQLite store; dispatch at %.0f%% of the slots (max-concurrency %d), cases of %d ms%n", workers, processes,
          DurationConverter.text(coordinator.serverSettings().heartbeatInterval()), load * 100, concurrency, caseMillis);
      if (!joined) {
        out.printf("only %d of %d workers connected within %s  <-- FAILED%n", coordinator.connectedWorkers(), workers,
            DurationConverter.text(CONNECT_TIMEOUT));
        return Main.EXIT_FAILED;
      }
      out.printf("connected: %d workers in %d ms%n", coordinator.connectedWorkers(), connectMillis);

      // Idle: heartbeats only.
      Cpu idleCpu = Cpu.start();
      Thread.sleep(idle.toMillis()); // the phase is a length of time, not a condition
      int afterIdle = coordinator.connectedWorkers();
      out.printf("idle %s: coordinator CPU %.1f%% of one core (%.0f us per heartbeat at %d heartbeats/s); %d of %d still connected%s%n",
          DurationConverter.text(idle), idleCpu.percent(), idleCpu.cpuNanos() / 1000.0
              / Math.max(1, workers * (idle.toNanos() / (double) coordinator.serverSettings().heartbeatInterval().toNanos())),
          Math.round(workers * 1e9 / coordinator.serverSettings().heartbeatInterval().toNanos()), afterIdle, workers,
          afterIdle == workers ? "" : "  <-- WORKERS REAPED WHILE IDLE");

      // Dispatch at the load.
      Store store = coordinator.store();
      Cpu dispatchCpu = Cpu.start();
      long runId = createRun(store, "dispatch", n, concurrency);
      long t0 = System.nanoTime();
      RunCounters c = coordinator.submit(runId).get(30, TimeUnit.MINUTES);
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      long[] latencies = stamps.latencies(store, runId);
      Arrays.sort(latencies);
      out.printf("dispatch: %d cases in %d ms (%.0f evals/s), coordinator CPU %.1f%% of one core; recorded %d, fenced %d, redeliveries %d%n",
          n, millis, n * 1000.0 / Math.max(1, millis), dispatchCpu.percent(), c.recorded(), c.staleResultsFenced(), c.redeliveries());
      out.printf("dispatch latency, lease to the case's start (%d paired of %d): p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms%n",
          latencies.length, n, percentileMillis(latencies, 50), percentileMillis(latencies, 90), percentileMillis(latencies, 99),
          percentileMillis(latencies, 100));
      long[] onWorker = store.attempts(runId).stream().mapToLong(a -> a.timing().queuedMillis()).filter(q -> q >= 0).sorted().toArray();
      out.printf("  of which on the worker, from the assignment's arrival to the start (its own figure, whole ms): p50 %d ms, p99 %d ms, max %d ms%n",
          percentile(onWorker, 50), percentile(onWorker, 99), percentile(onWorker, 100));
      boolean exact = c.recorded() == n && c.passed() == n;

      // Detection: one process frozen, another killed.
      int before = coordinator.connectedWorkers();
      int frozenShare = workers / processes + (0 < workers % processes ? 1 : 0);
      long frozeAt = System.nanoTime();
      signal(children.get(0), "STOP");
      boolean frozenGone = await(() -> coordinator.connectedWorkers() <= before - frozenShare, DETECTION_TIMEOUT);
      long frozenMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - frozeAt);
      children.get(0).destroyForcibly();
      out.printf("detection: SIGSTOP of a process of %d workers: all convicted in %d ms%s%n", frozenShare, frozenMillis,
          frozenGone ? "" : "  <-- NOT DETECTED within " + DurationConverter.text(DETECTION_TIMEOUT));
      int beforeKill = coordinator.connectedWorkers();
      int killedShare = workers / processes + (1 < workers % processes ? 1 : 0);
      long killedAt = System.nanoTime();
      children.get(1).destroyForcibly(); // SIGKILL
      boolean killedGone = await(() -> coordinator.connectedWorkers() <= beforeKill - killedShare, DETECTION_TIMEOUT);
      long killedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
      out.printf("detection: kill -9 of a process of %d workers: all gone in %d ms%s; %d workers left%n", killedShare, killedMillis,
          killedGone ? "" : "  <-- NOT DETECTED within " + DurationConverter.text(DETECTION_TIMEOUT), coordinator.connectedWorkers());

      // Dispatch goes on with the survivors.
      int after = Math.max(1_000, coordinator.connectedWorkers() * 2);
      long afterRun = createRun(store, "after", after, Math.max(1, (int) Math.round(coordinator.connectedWorkers() * load)));
      long t1 = System.nanoTime();
      RunCounters c2 = coordinator.submit(afterRun).get(30, TimeUnit.MINUTES);
      boolean exactAfter = c2.recorded() == after && c2.passed() == after;
      out.printf("after the losses: %d cases on %d workers in %d ms, recorded %d of %d%s%n", after, coordinator.connectedWorkers(),
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1), c2.recorded(), after, exactAfter ? "" : "  <-- NOT EXACT");
      boolean ok = exact && exactAfter && frozenGone && killedGone && afterIdle == workers && latencies.length == n;
      if (!exact) {
        out.println("dispatch run: NOT EXACT");
      }
      return ok ? Main.EXIT_PASSED : Main.EXIT_FAILED;
    } catch (CoordinatorBuilder.StartException e) {
      System.err.println("tally bench-connections: " + e.getMessage());
      return Main.EXIT_FAILED;
    } finally {
      stopAndDelete(children, dir);
    }
  }

  /** A run of {@code n} stamping cases at most {@code concurrency} leased at once. */
  private long createRun(Store store, String name, int n, int concurrency) {
    return createStampRun(store, "bench-connections:" + name, name, n, concurrency, caseMillis);
  }

  /**
   * A run of {@code n} {@link StampEvaluator} cases of {@code caseMillis} ms each (ids {@code name-i}), at
   * most {@code concurrency} leased at once (the run's max-concurrency).
   */
  static long createStampRun(Store store, String dataset, String name, int n, int concurrency, long caseMillis) {
    List<CaseRecord> records = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      records.add(new CaseRecord(i, name + "-" + i, "{\"id\":\"" + name + "-" + i + "\"}"));
    }
    Map<String, String> options = new LinkedHashMap<>();
    options.put("millis", Long.toString(caseMillis));
    options.put(FleetLimits.MAX_CONCURRENCY, Integer.toString(concurrency));
    return store.createRun(new RunSpec(dataset, new EvaluatorSpec(STAMP_KIND, options, Duration.ofMinutes(1)),
        RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS, name), records);
  }

  /**
   * Starts a JVM of {@code sessions} simulated workers of {@code slots} slots each, running {@link StampEvaluator}
   * cases against {@code coordinator}, until its stdin closes; its output goes to {@code log}.
   */
  static Process startSimulator(HostPort coordinator, int sessions, int slots, String prefix, Path log) throws IOException {
    List<String> command = dev.tally.cli.LocalWorkerProcesses.javaCommand(SIMULATOR_JVM_OPTIONS, Main.class.getName());
    command.add("bench-connections");
    command.add("--simulate=" + sessions);
    command.add("--sim-slots=" + slots);
    command.add("--coordinator=" + coordinator);
    command.add("--name-prefix=" + prefix);
    return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
  }

  /** The simulated workers' process: {@code simulate} sessions, until stdin closes (the bench ended or died). */
  private int simulate() throws Exception {
    if (coordinatorAddress == null || simulate < 1 || simSlots < 1) {
      System.err.println("tally bench-connections: --simulate needs a count >= 1, --sim-slots >= 1 and --coordinator HOST:PORT");
      return Main.EXIT_USAGE;
    }
    List<WorkerSession> sessions = new ArrayList<>(simulate);
    // The sessions share a few event-loop threads (each keeps to one of them), so that a process holds
    // hundreds of sessions without a thread each: what makes the workers light, not the protocol.
    EventLoopGroup loops = new MultiThreadIoEventLoopGroup(SIMULATOR_IO_THREADS, new DefaultThreadFactory("sim-io", true),
        NioIoHandler.newFactory());
    for (int i = 0; i < simulate; i++) {
      WorkerSession s = new WorkerSession(WorkerSettings.builder(coordinatorAddress.host(), coordinatorAddress.port())
          .slots(simSlots).name(namePrefix + i).drainTimeout(Duration.ZERO)
          .evaluatorFactory((kind, options) -> STAMP_KIND.equals(kind) ? new StampEvaluator(options) : EvaluatorFactory.create(kind, options))
          .build(), loops);
      sessions.add(s);
      s.start();
    }
    while (System.in.read() >= 0) {
      // the bench writes nothing: end of input is its end
    }
    for (WorkerSession s : sessions) {
      s.close("bench over");
    }
    loops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    return Main.EXIT_PASSED;
  }

  /**
   * The simulated case: notes {@link System#nanoTime()} as it starts (its output, for the bench to pair with
   * the lease), then sleeps the run's {@code millis}.
   */
  static final class StampEvaluator implements Evaluator {
    private final long millis;

    StampEvaluator(Map<String, String> options) {
      this.millis = Long.parseLong(options.getOrDefault("millis", "0"));
    }

    @Override
    public Evaluation evaluate(EvalContext ctx) {
      long startedNanos = System.nanoTime();
      try {
        if (millis > 0 && ctx.awaitCancellation(Duration.ofMillis(millis))) {
          return Evaluation.failed(dev.tally.core.InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled", ctx.elapsedMillis());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return Evaluation.failed(dev.tally.core.InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted", ctx.elapsedMillis());
      }
      return Evaluation.finished(Verdict.PASS, 1.0, Long.toString(startedNanos), ctx.elapsedMillis());
    }
  }

  /** When each lease's commit returned, by job (the latest token's), written by the scheduler's thread. */
  static final class LeaseStamps implements SchedulerObserver {
    private final Map<Long, long[]> byJob = new ConcurrentHashMap<>();

    @Override
    public void leased(long jobId, long token, long committedAtNanos) {
      byJob.put(jobId, new long[] {token, committedAtNanos});
    }

    /** Lease-to-start latencies (ns) of the run's recorded cases whose recorded lease was stamped. */
    long[] latencies(Store store, long runId) {
      List<JobView> jobs = store.jobs(runId);
      long[] out = new long[jobs.size()];
      int k = 0;
      for (JobView j : jobs) {
        long[] lease = byJob.get(j.jobId());
        if (j.state() == JobState.DONE && lease != null && lease[0] == j.token()) {
          out[k++] = Long.parseLong(j.outcome().outputTail()) - lease[1];
        }
      }
      return Arrays.copyOf(out, k);
    }
  }

  /** The exact percentile {@code p} (nearest rank) of sorted nanoseconds, in milliseconds. */
  static double percentileMillis(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return percentile(sorted, p) / 1e6;
  }

  /** The exact percentile {@code p} (nearest rank) of sorted values; -1 for none. */
  static long percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return -1;
    }
    int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }

  /** This process's CPU time from a start. */
  record Cpu(long cpuAt, long wallAt) {
    static Cpu start() {
      return new Cpu(cpuNanos0(), System.nanoTime());
    }

    long cpuNanos() {
      return cpuNanos0() - cpuAt;
    }

    double percent() {
      return 100.0 * cpuNanos() / Math.max(1, System.nanoTime() - wallAt);
    }

    private static long cpuNanos0() {
      return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
          ? os.getProcessCpuTime() : 0;
    }
  }

  static boolean await(BooleanSupplier condition, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(20); // polling a counter: the detection times printed are within this much
    }
    return true;
  }

  private static void signal(Process p, String signal) throws IOException, InterruptedException {
    new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start().waitFor();
  }

  static String loadAverage() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).split(" ", 4)[0];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  /** Kills the simulator JVMs {@code children} (waiting up to 10 s for each) and deletes the bench's {@code dir}. */
  static void stopAndDelete(List<Process> children, Path dir) throws InterruptedException {
    for (Process p : children) {
      p.destroyForcibly();
    }
    for (Process p : children) {
      p.waitFor(10, TimeUnit.SECONDS);
    }
    deleteTree(dir);
  }

  static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      System.err.println("tally bench-connections: could not delete " + dir + ": " + e.getMessage());
    }
  }
}

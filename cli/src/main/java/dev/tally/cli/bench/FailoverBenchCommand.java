package dev.tally.cli.bench;

import dev.tally.cli.CoordinatorOptions;
import dev.tally.cli.DurationConverter;
import dev.tally.cli.HostPort;
import dev.tally.cli.LocalWorkerProcesses;
import dev.tally.cli.Main;
import dev.tally.cli.ProductDefaults;
import dev.tally.cli.RunnerCommand;
import dev.tally.cli.Signals;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.LocalHealth;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code tally bench-failover}: the two figures the failure detector promises, measured end to end with
 * real worker processes and real signals, under the detector the options choose (by default phi accrual
 * with its defaults, see {@link DetectorSettings}).
 *
 * <p><b>1. Failover time</b> (target: 3 s or less). An embedded coordinator on a fresh SQLite store, N
 * local worker JVMs ({@link LocalWorkerProcesses}) of K slots, and one run of {@code sleep} cases of
 * U[0.5, 1.5] x {@code --case-millis} each (2 s on average by default; varied, so the fleet's results do
 * not come in lockstep bursts), so that every worker always holds jobs: K running and as many again
 * prefetched. Each sample waits {@code --settle} (the connections build a heartbeat history) plus a
 * random part of a case's length or heartbeat interval (so the stop falls at a random point of both
 * cycles, not always just after a frame), checks that every worker is connected and holds a lease, and
 * reads from the store the jobs the victim holds ({@code LEASED}, owner {@code local-N}) with their
 * fencing tokens, sends {@code kill -STOP} to the victim's pid, and polls the store every {@value
 * #POLL_MILLIS} ms until one of those jobs carries a greater token: it was leased again, to another
 * worker. The sample is the time from the return of the {@code kill -STOP} command to the start of the
 * read that first showed the new lease. The victim then gets {@code kill -CONT}, reconnects (its old
 * leases are fenced), and the next sample freezes the next worker in turn. Case lengths and stop phases
 * come from a {@link Random} seeded with {@code --seed}. Each sample is split, from the attempt history,
 * into stop → reap (the {@code worker_lost} attempt's end: the detector's conviction plus the reaper's
 * check period) and reap → re-lease (the retry backoff, the wait for a survivor with room — the fleet is
 * saturated on purpose, so a redelivered job waits for a survivor's next result — and the scheduler's
 * step). The coordinator's own log line for the reap says how long the victim had been silent; minus stop
 * → reap, that is how long before the stop its last frame arrived, which the bench cannot control (it
 * reads the line through a logback appender; without it the split shows "?").
 *
 * <p><b>2. False reaps under GC-like pauses</b> (target: none). A fresh coordinator, store and fleet run
 * short {@code sleep} cases ({@code --short-case-millis}) continuously for {@code --duration}, in runs
 * submitted back to back (two are always active, so the workers never run dry), while worker {@code
 * local-1} is frozen with {@code kill -STOP} for a pause drawn uniformly from {@code [--min-pause,
 * --max-pause]} every {@code --pause-every} (±20%, uniform), then thawed with {@code kill -CONT}. Pauses
 * and gaps come from one {@link Random} seeded with {@code --seed}. A false reap is a pause after which
 * the paused worker's session was lost: its jobs ended {@code worker_lost} in the attempt history (each
 * pause is charged with those that ended before the next pause began). Also counted: the runs'
 * redeliveries counter, and the "lost the coordinator" lines in the worker's own log (a lost session
 * that held no job would show only there).
 *
 * <p><b>3. A starved machine</b> ({@code --starved}, instead of parts 1 and 2; targets: no false reap, and
 * a {@code kill -9} of a worker detected within {@value #KILL_DETECTION_TARGET_SECONDS} s). Many worker
 * processes, more than there are cores (say {@code --workers 30 --slots 1} on 2 cores), run cases that
 * keep the CPU busy ({@code sleep} with {@code burn=true}, U[0.5, 1.5] x {@code --case-millis} each, runs
 * fed back to back), so that the load average passes the core count many times over and every process,
 * the coordinator's included, is starved. Nobody is stopped or killed for {@code --duration} after the
 * fleet is busy and {@code --settle} has passed: every session reaped meanwhile (from startup on) is a
 * false reap, with the jobs it cost ({@code worker_lost} attempts). Then the last worker is killed with
 * {@code kill -9}: detection is the time from the kill to the end of its first {@code worker_lost}
 * attempt (its session's loss, recorded), and the re-lease of one of its jobs is timed as in part 1. The
 * whole pass runs twice in one sitting with the same settings and seed: first with local health off
 * ({@link LocalHealth.Config#off()}: the detector's settings alone, as before local health), then with the
 * coordinator's own setting (on by default), so the two can be compared as a ratio on one machine. The
 * pass also prints the highest load average and local health multiplier it saw.
 *
 * <p><b>Limits.</b>
 *
 * <ul>
 *   <li>The store is polled, so a failover sample is late by up to one poll period ({@value
 *       #POLL_MILLIS} ms) plus a read; the lease's commit precedes the assignment's send by the
 *       scheduler step's tail, well under a millisecond here.
 *   <li>Time starts when {@code kill} returns, not when the kernel stopped the process (a few ms
 *       earlier); the detector counts silence from the victim's last frame, which precedes the stop by up
 *       to one heartbeat interval (less on a busy worker, whose results are frames too). So samples
 *       scatter over about one interval.
 *   <li>A pause's length is measured from the return of {@code kill -STOP} to the return of {@code kill
 *       -CONT}; starting {@code kill} takes a few ms on a loaded machine, so the true freeze is that
 *       long, give or take them.
 *   <li>Everything shares one machine: the coordinator, the workers and this bench's polling compete
 *       for the cores, which is part of what is measured but makes numbers machine-dependent.
 *   <li>Linux only: worker pids are found through {@code /proc/PID/cmdline} ({@code --name=local-N}).
 * </ul>
 *
 * <p>Every worker frozen by the bench is thawed before the fleet is closed, also on failure and (by a
 * shutdown hook) on Ctrl-C, so no stopped JVM is left behind. Exit code 0 when both targets are met, 1
 * when one is missed or a measurement could not be taken, 2 on bad usage.
 */
@Command(name = "bench-failover", mixinStandardHelpOptions = true, defaultValueProvider = ProductDefaults.class,
    description = "Measure failover time after a SIGSTOP and false reaps under GC-like pauses, with real worker processes.")
public final class FailoverBenchCommand implements Callable<Integer> {
  /** How often the store is read while a failover is awaited. */
  static final long POLL_MILLIS = 20;
  /** The failover promise. */
  static final Duration FAILOVER_TARGET = Duration.ofSeconds(3);
  /** How long any one wait (a re-lease, a rejoin, workers getting busy) may take before the bench gives up. */
  static final Duration WAIT_LIMIT = Duration.ofSeconds(60);
  /** The worker log line of a lost session (see WorkerSession). */
  static final String LOST_SESSION_LINE = "lost the coordinator";
  /** The starved part's promise: a worker killed outright is found within this many seconds. */
  static final int KILL_DETECTION_TARGET_SECONDS = 5;
  /**
   * How long a starved fleet may take to connect and get busy: dozens of JVMs starting on two busy cores
   * take minutes, not the seconds {@link #WAIT_LIMIT} allows elsewhere.
   */
  static final Duration STARVED_WAIT_LIMIT = Duration.ofMinutes(10);

  @Spec CommandSpec spec;

  @Mixin CoordinatorOptions coordinatorOptions;

  @Option(names = "--workers", defaultValue = "3", description = "Local worker processes (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int workers;

  @Option(names = "--slots", defaultValue = "2", description = "Slots per worker (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int slots;

  @Option(names = "--samples", defaultValue = "5", description = "Failover samples, rotating over the workers; 0 skips the failover part (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int samples;

  @Option(names = "--case-millis", defaultValue = "2000", description = "Mean length of the cases in the failover part, each U[0.5, 1.5] x this (default: ${DEFAULT-VALUE}).", paramLabel = "MILLIS")
  long caseMillis;

  @Option(names = "--settle", defaultValue = "10s", converter = DurationConverter.class,
      description = "Quiet time before each failover sample and before the pauses begin, so connections have a heartbeat history (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration settle;

  @Option(names = "--duration", defaultValue = "5m", converter = DurationConverter.class,
      description = "Length of the pause part; 0s skips it (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration duration;

  @Option(names = "--short-case-millis", defaultValue = "100", description = "Length of each case in the pause part (default: ${DEFAULT-VALUE}).", paramLabel = "MILLIS")
  long shortCaseMillis;

  @Option(names = "--pause-every", defaultValue = "10s", converter = DurationConverter.class,
      description = "Mean time from one pause's start to the next, varied by +-20%% (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration pauseEvery;

  @Option(names = "--min-pause", defaultValue = "500ms", converter = DurationConverter.class, description = "Shortest pause (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration minPause;

  @Option(names = "--max-pause", defaultValue = "1500ms", converter = DurationConverter.class, description = "Longest pause (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration maxPause;

  @Option(names = "--seed", defaultValue = "20241130", description = "Seed of the failover part's case lengths and stop times, and of the pause lengths and gaps (default: ${DEFAULT-VALUE}).", paramLabel = "SEED")
  long seed;

  @Option(names = "--starved", description = "Instead of the failover and pause parts: many busy workers (more than cores: e.g. --workers 30 --slots 1) burn CPU for --duration;"
      + " count false reaps, then kill -9 one worker and time its detection; done twice, without and with local health.")
  boolean starved;

  @Option(names = "--dir", description = "Where the stores and worker logs go (default: a fresh temporary directory, deleted afterwards).", paramLabel = "DIR")
  Path dir;

  /** The detector the options choose; set once they are checked. */
  private DetectorSettings detector;

  /** Pids this bench has stopped and not yet continued; thawed by {@link #thawAll()} whatever happens. */
  private final Set<Long> stopped = ConcurrentHashMap.newKeySet();

  /** Runs the benchmark through picocli, for use without the {@code tally} launcher. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new FailoverBenchCommand()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    validate();
    PrintStream out = System.out;
    CoordinatorBuilder settings = coordinatorOptions.applyTo(Coordinator.builder());
    detector = settings.detectorSettings();

    out.printf("tally bench-failover: %d cores, %s %s %s; %s %s; java %s%n",
        Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"), System.getProperty("os.version"),
        System.getProperty("os.arch"), System.getProperty("java.vm.name"), System.getProperty("java.vm.version"),
        System.getProperty("java.version"));
    // Under Main the original arguments start with this command's name; run on its own, they do not.
    List<String> args = spec.commandLine().getParseResult().originalArgs();
    boolean named = !args.isEmpty() && args.get(0).equals(spec.name());
    out.printf("command: %s%n", ((named ? "tally " : "tally bench-failover ") + String.join(" ", args)).trim());
    out.printf("settings: --workers %d --slots %d --prefetch %d, detector %s, heartbeat every %d ms,"
            + " steady-state conviction after %d ms of silence, drain after %d ms; retry backoff base %d ms; seed %d%n",
        workers, slots, settings.workerServerSettings().prefetch(), detector.describe(), detector.heartbeatInterval().toMillis(),
        detector.detectionWindow().toMillis(), detector.drainWindow().toMillis(),
        settings.redelivery().base().toMillis(), seed);
    out.flush();

    Path base = dir != null ? Files.createDirectories(dir.toAbsolutePath()) : Files.createTempDirectory("tally-bench-failover");
    Thread thawOnExit = new Thread(this::thawAll, "tally-bench-failover-thaw");
    Runtime.getRuntime().addShutdownHook(thawOnExit);
    boolean met = true;
    try {
      if (starved) {
        met = starved(out, base, seed);
      } else if (samples > 0) {
        met &= failover(out, base.resolve("failover"), new Random(seed));
      }
      if (!starved && !duration.isZero()) {
        met &= pauses(out, base.resolve("pauses"), new Random(seed));
      }
    } finally {
      thawAll();
      Runtime.getRuntime().removeShutdownHook(thawOnExit);
      if (dir == null) {
        deleteTree(base);
      }
    }
    return met ? Main.EXIT_PASSED : Main.EXIT_FAILED;
  }

  private void validate() {
    List<String> problems = new ArrayList<>();
    if (workers < 2 || workers > RunnerCommand.MAX_LOCAL_WORKERS) {
      problems.add("--workers must be from 2 (a failover needs somewhere to go) to " + RunnerCommand.MAX_LOCAL_WORKERS);
    }
    if (slots < 1 || slots > WorkerServer.MAX_WORKER_SLOTS) {
      problems.add("--slots must be from 1 to " + WorkerServer.MAX_WORKER_SLOTS);
    }
    if (samples < 0) {
      problems.add("--samples must be >= 0");
    }
    if (caseMillis < 2 || shortCaseMillis < 1) {
      problems.add("--case-millis must be >= 2 and --short-case-millis >= 1");
    }
    if (settle.isNegative() || duration.isNegative() || pauseEvery.isNegative() || pauseEvery.isZero()) {
      problems.add("--settle and --duration must be >= 0, --pause-every > 0");
    }
    if (minPause.isNegative() || minPause.isZero() || maxPause.compareTo(minPause) < 0
        || maxPause.compareTo(pauseEvery.multipliedBy(8).dividedBy(10)) >= 0) {
      problems.add("pauses need 0 < --min-pause <= --max-pause < 0.8 x --pause-every");
    }
    if (starved && duration.isZero()) {
      problems.add("--starved needs a --duration above 0 (the quiet time in which false reaps are counted)");
    }
    if (!problems.isEmpty()) {
      throw new ParameterException(spec.commandLine(), String.join("; ", problems));
    }
  }

  // ------------------------------------------------------------------ part 1: failover time

  private boolean failover(PrintStream out, Path phaseDir, Random random) throws Exception {
    int slotsTotal = workers * slots;
    // Each stop comes at a random point of the heartbeat and case cycles: a fixed wait after the previous
    // rejoin (itself right after a result) would always stop the victim just after a frame — the worst case.
    long phaseMillis = Math.max(caseMillis, detector.heartbeatInterval().toMillis());
    // Enough work for every sample with room to spare: the run is abandoned when the samples are taken.
    long budgetSeconds = settle.toSeconds() + samples * (settle.toSeconds() + 45);
    int cases = (int) Math.min(1_000_000, Math.max(4L * slotsTotal, budgetSeconds * slotsTotal * 1000 / caseMillis));
    out.printf("%nfailover: %d samples, freezing local-1..local-%d in turn, each after %s + U[0, %d] ms; %d sleep cases of U[%d, %d] ms;"
            + " store polled every %d ms%n",
        samples, workers, human(settle), phaseMillis, cases, caseMillis / 2, caseMillis / 2 + caseMillis, POLL_MILLIS);
    out.flush();
    List<Long> totals = new ArrayList<>();
    List<Long> reapParts = new ArrayList<>();
    List<Long> releaseParts = new ArrayList<>();
    List<Long> silences = new ArrayList<>();
    boolean complete = true;
    try (Fleet fleet = new Fleet(phaseDir)) {
      long runId = fleet.store.createRun(new RunSpec("bench-failover:failover", sleep(caseMillis), dev.tally.core.RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS),
          records("f", cases, () -> caseMillis / 2 + (long) (random.nextDouble() * caseMillis)));
      fleet.coordinator.submit(runId);
      awaitCondition("all " + workers + " workers connected and busy", () -> fleet.allBusy(List.of(runId)));
      for (int i = 0; i < samples; i++) {
        String victim = "local-" + (i % workers + 1);
        Thread.sleep(settle.toMillis() + (long) (random.nextDouble() * phaseMillis));
        awaitCondition("all " + workers + " workers connected and busy", () -> fleet.allBusy(List.of(runId)));
        Sample s = sample(fleet, runId, victim);
        String line;
        if (s.failoverNanos < 0) {
          complete = false;
          line = String.format("none within %d s", WAIT_LIMIT.toSeconds());
        } else {
          totals.add(s.failoverNanos);
          line = String.format("%s (stop -> reap %s, reap -> re-lease %s; reaped after %s of silence: last frame %s before the stop;"
                  + " job %d went to %s)",
              sec(s.failoverNanos), s.reapMillis < 0 ? "?" : sec(s.reapMillis * 1_000_000L),
              s.reapMillis < 0 ? "?" : sec(s.failoverNanos - s.reapMillis * 1_000_000L),
              s.silenceMillis < 0 ? "?" : sec(s.silenceMillis * 1_000_000L),
              s.silenceMillis < 0 || s.reapMillis < 0 ? "?" : sec((s.silenceMillis - s.reapMillis) * 1_000_000L), s.jobId, s.newHolder);
          reapParts.add(s.reapMillis);
          releaseParts.add(s.reapMillis < 0 ? -1 : TimeUnit.NANOSECONDS.toMillis(s.failoverNanos) - s.reapMillis);
          silences.add(s.silenceMillis);
        }
        out.printf("  sample %d: %s (pid %d) held %d jobs; SIGSTOP -> first re-lease %s; thawed, rejoined in %s%n",
            i + 1, victim, s.pid, s.held, line, s.rejoinNanos < 0 ? "(not within " + WAIT_LIMIT.toSeconds() + " s)" : sec(s.rejoinNanos));
        out.flush();
        if (s.rejoinNanos < 0) {
          complete = false;
        }
      }
    }
    if (totals.isEmpty()) {
      out.println("failover: no sample  <-- MISSED");
      return false;
    }
    List<Long> sorted = totals.stream().sorted().toList();
    boolean met = complete && sorted.get(sorted.size() - 1) <= FAILOVER_TARGET.toNanos();
    out.printf("failover: %d samples: min %s, median %s, max %s (target <= %d s: %s)%n", sorted.size(),
        sec(sorted.get(0)), sec(median(sorted)), sec(sorted.get(sorted.size() - 1)), FAILOVER_TARGET.toSeconds(),
        met ? "met" : "MISSED");
    out.printf("  parts (min / median / max): stop -> reap %s; reap -> re-lease %s; silence at the reap %s%n",
        spread(reapParts), spread(releaseParts), spread(silences));
    out.flush();
    return met;
  }

  /** "min / median / max" of millisecond values, ignoring unknown (negative) ones. */
  private static String spread(List<Long> millis) {
    List<Long> known = millis.stream().filter(m -> m >= 0).sorted().toList();
    if (known.isEmpty()) {
      return "?";
    }
    return String.format(Locale.ROOT, "%.3f / %.3f / %.3f s", known.get(0) / 1e3, median(known) / 1e3, known.get(known.size() - 1) / 1e3);
  }

  /**
   * One failover sample.
   *
   * @param failoverNanos stop -> first re-lease seen, or -1 if none within {@link #WAIT_LIMIT}
   * @param reapMillis stop -> the end of the victim's first {@code worker_lost} attempt, or -1 if not found
   * @param silenceMillis the silence the coordinator reaped the victim after (from its log), or -1
   * @param rejoinNanos thaw -> the victim holding a new lease, or -1 if not within {@link #WAIT_LIMIT}
   */
  private record Sample(long pid, int held, long failoverNanos, long reapMillis, long silenceMillis, long jobId, String newHolder, long rejoinNanos) {}

  private Sample sample(Fleet fleet, long runId, String victim) throws Exception {
    Store store = fleet.store;
    long pid = workerPid(victim).orElseThrow(() -> new IllegalStateException("no process for worker " + victim));
    Map<Long, Long> held = new HashMap<>();
    awaitCondition(victim + " holding a lease", () -> {
      for (JobView j : store.jobs(runId)) {
        if (j.state() == JobState.LEASED && victim.equals(j.worker())) {
          held.put(j.jobId(), j.token());
        }
      }
      return !held.isEmpty();
    });
    signal(pid, "STOP");
    long stopNanos = System.nanoTime();
    long stopMillis = System.currentTimeMillis();
    long failoverNanos = -1;
    JobView moved = null;
    try {
      for (long tick = 0; moved == null; tick++) {
        long readNanos = System.nanoTime();
        if (readNanos - stopNanos > WAIT_LIMIT.toNanos()) {
          break;
        }
        for (JobView j : store.jobs(runId)) {
          Long token = held.get(j.jobId());
          if (token != null && j.token() > token) {
            moved = j;
            failoverNanos = readNanos - stopNanos;
            break;
          }
        }
        if (moved == null) {
          sleepUntil(stopNanos + (tick + 1) * TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
      }
    } finally {
      continueWorker(pid);
    }
    long thawNanos = System.nanoTime();
    // Rejoined: connected again and holding a lease it was not holding when frozen.
    long rejoinNanos = awaitQuietly(() -> fleet.coordinator.connectedWorkers() >= workers
        && store.jobs(runId).stream().anyMatch(j -> j.state() == JobState.LEASED && victim.equals(j.worker())
            && !Long.valueOf(j.token()).equals(held.get(j.jobId()))), POLL_MILLIS)
        ? System.nanoTime() - thawNanos : -1;
    long reapMillis = store.attempts(runId).stream()
        .filter(a -> held.containsKey(a.jobId()) && a.token() == held.get(a.jobId()) && isWorkerLost(a))
        .mapToLong(a -> a.endedAtMillis() - stopMillis).min().orElse(-1);
    // A job re-leased to a worker is LEASED by it; one that has already run again may show its recorder.
    String newHolder = moved == null ? null : moved.worker() != null ? moved.worker() : "?";
    long silenceMillis = fleet.tap.reaps.stream().filter(r -> r.worker.equals(victim) && r.atMillis >= stopMillis)
        .mapToLong(LogTap.Reap::silenceMillis).findFirst().orElse(-1);
    return new Sample(pid, held.size(), failoverNanos, reapMillis, silenceMillis, moved == null ? -1 : moved.jobId(), newHolder, rejoinNanos);
  }

  // ------------------------------------------------------------------ part 2: false reaps under pauses

  /** One injected pause: when it began (ms after the first), how long was asked for and how long it held. */
  private record Pause(long atMillis, long startEpochMillis, long requestedMillis, long heldNanos) {}

  private boolean pauses(PrintStream out, Path phaseDir, Random random) throws Exception {
    int slotsTotal = workers * slots;
    // Each run holds about 20 s of work; two are kept active so the fleet never runs dry between them.
    int batch = (int) Math.min(1_000_000, Math.max(4L * slotsTotal, 20_000L * slotsTotal / shortCaseMillis));
    String victim = "local-1";
    out.printf("%npauses: %s frozen for U[%d, %d] ms every %d s +-20%% for %s, while %d workers x %d slots run sleep cases of %d ms"
            + " (runs of %d cases back to back)%n",
        victim, minPause.toMillis(), maxPause.toMillis(), pauseEvery.toSeconds(), human(duration), workers, slots,
        shortCaseMillis, batch);
    out.flush();
    List<Pause> pauses = new ArrayList<>();
    List<Long> runIds = new ArrayList<>();
    List<CompletableFuture<?>> active = new ArrayList<>();
    long lostLines;
    long tappedReaps;
    long drains;
    List<AttemptView> attempts = new ArrayList<>();
    long redeliveries = 0;
    long recordedDuring = 0;
    long wallNanos;
    try (Fleet fleet = new Fleet(phaseDir)) {
      Runnable feed = () -> {
        active.removeIf(CompletableFuture::isDone);
        while (active.size() < 2) {
          long id = fleet.store.createRun(new RunSpec("bench-failover:pauses-" + (runIds.size() + 1), sleep(shortCaseMillis), dev.tally.core.RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS),
              records("p" + (runIds.size() + 1), batch, () -> shortCaseMillis));
          runIds.add(id);
          active.add(fleet.coordinator.submit(id));
        }
      };
      feed.run();
      awaitCondition("all " + workers + " workers connected and busy", () -> {
        feed.run();
        return fleet.allBusy(runIds);
      });
      sleepFeeding(settle.toMillis(), feed);
      long recordedBefore = recorded(fleet.store, runIds);
      long startNanos = System.nanoTime();
      long endNanos = startNanos + duration.toNanos();
      long nextNanos = startNanos + gapNanos(random);
      while (nextNanos + maxPause.toNanos() <= endNanos) {
        sleepFeeding(TimeUnit.NANOSECONDS.toMillis(nextNanos - System.nanoTime()), feed);
        long pid = workerPid(victim).orElseThrow(() -> new IllegalStateException("no process for worker " + victim));
        long requested = minPause.toMillis() + (long) (random.nextDouble() * (maxPause.toMillis() - minPause.toMillis()));
        signal(pid, "STOP");
        long stopNanos = System.nanoTime();
        long stopEpoch = System.currentTimeMillis();
        try {
          sleepUntil(stopNanos + TimeUnit.MILLISECONDS.toNanos(requested));
        } finally {
          continueWorker(pid);
        }
        pauses.add(new Pause(TimeUnit.NANOSECONDS.toMillis(stopNanos - startNanos), stopEpoch, requested, System.nanoTime() - stopNanos));
        nextNanos = stopNanos + gapNanos(random);
      }
      sleepFeeding(TimeUnit.NANOSECONDS.toMillis(endNanos - System.nanoTime()), feed);
      wallNanos = System.nanoTime() - startNanos;
      recordedDuring = recorded(fleet.store, runIds) - recordedBefore;
      // A reap comes within one detection window of the last frame: give the last pause that long to show.
      sleepFeeding(Math.max(5_000, 2 * detector.detectionWindow().toMillis()), feed);
      for (long id : runIds) {
        attempts.addAll(fleet.store.attempts(id));
        redeliveries += fleet.store.run(id).orElseThrow().counters().redeliveries();
      }
      lostLines = countLines(fleet.workers.logDir().resolve("worker-1.log"), LOST_SESSION_LINE);
      tappedReaps = fleet.tap.attached ? fleet.tap.reaps.stream().filter(r -> r.worker.equals(victim)).count() : -1;
      drains = fleet.tap.attached ? fleet.tap.drains.stream().filter(victim::equals).count() : -1;
    }

    List<AttemptView> lost = attempts.stream().filter(FailoverBenchCommand::isWorkerLost).toList();
    long victimLost = lost.stream().filter(a -> victim.equals(a.worker())).count();
    int falseReaps = 0;
    StringBuilder list = new StringBuilder();
    for (int i = 0; i < pauses.size(); i++) {
      Pause p = pauses.get(i);
      long from = p.startEpochMillis;
      long to = i + 1 < pauses.size() ? pauses.get(i + 1).startEpochMillis : Long.MAX_VALUE;
      long reaped = lost.stream().filter(a -> victim.equals(a.worker()) && a.endedAtMillis() >= from && a.endedAtMillis() < to).count();
      if (reaped > 0) {
        falseReaps++;
      }
      list.append(String.format(Locale.ROOT, "%s+%.1fs %d/%.3f%s", i == 0 ? "" : ", ", p.atMillis / 1000.0, p.requestedMillis,
          p.heldNanos / 1e9, reaped > 0 ? " REAPED(" + reaped + " jobs)" : ""));
    }
    long[] held = pauses.stream().mapToLong(Pause::heldNanos).sorted().toArray();
    out.printf("  %d pauses (at +time: requested ms / held s): %s%n", pauses.size(), list);
    if (held.length > 0) {
      out.printf("  pause lengths held: min %s, median %s, max %s, total %s of %s (%.1f%%)%n", sec(held[0]),
          sec(median(java.util.Arrays.stream(held).boxed().toList())), sec(held[held.length - 1]),
          sec(java.util.Arrays.stream(held).sum()), sec(wallNanos), 100.0 * java.util.Arrays.stream(held).sum() / wallNanos);
    }
    out.printf("  %d evals recorded in %s (%.0f/s) over %d runs%n", recordedDuring, sec(wallNanos), recordedDuring * 1e9 / wallNanos, runIds.size());
    boolean met = falseReaps == 0 && lost.isEmpty() && lostLines == 0 && tappedReaps <= 0 && !pauses.isEmpty();
    out.printf("  %s drained (suspected: no new jobs until heard from) %s times%n", victim, drains < 0 ? "?" : Long.toString(drains));
    out.printf("false reaps: %d of %d pauses (worker_lost attempts: %d on %s, %d on others; redeliveries %d;"
            + " reaps of %s in the coordinator's log: %s; \"%s\" in %s's log: %d) (target none: %s)%n",
        falseReaps, pauses.size(), victimLost, victim, lost.size() - victimLost, redeliveries, victim,
        tappedReaps < 0 ? "?" : Long.toString(tappedReaps), LOST_SESSION_LINE, victim, lostLines, met ? "met" : "MISSED");
    out.flush();
    return met;
  }

  private long gapNanos(Random random) {
    return (long) (pauseEvery.toNanos() * (0.8 + 0.4 * random.nextDouble()));
  }

  // ------------------------------------------------------------------ part 3: a starved machine

  /** What one starved pass found. */
  private record StarvedPass(String label, long reapedSessions, long reapedAtStartup, long lostJobs, long workerLostCoordinator,
      long redeliveries, long recorded, long quietNanos, double maxLoad, double maxMultiplier, long lateTicks,
      long correlatedTicks, long detectionMillis, long releaseNanos) {}

  private boolean starved(PrintStream out, Path base, long seed) throws Exception {
    int cores = Runtime.getRuntime().availableProcessors();
    out.printf("%nstarved: %d workers x %d slots of CPU-burning cases of U[%d, %d] ms on %d cores%s; quiet for %s after %s"
            + " of settling, then local-%d is killed with kill -9; twice: local health off, then as configured (%s)%n",
        workers, slots, caseMillis / 2, caseMillis / 2 + caseMillis, cores,
        workers * slots > cores ? "" : " (NOT starved: give more busy slots than cores)", human(duration), human(settle), workers,
        coordinatorOptions.applyTo(Coordinator.builder()).workerServerSettings().localHealth().describe());
    out.flush();
    StarvedPass off = starvedPass(out, base.resolve("starved-off"), "local health off", LocalHealth.Config.off(), new Random(seed));
    StarvedPass on = starvedPass(out, base.resolve("starved-on"), "local health on", null, new Random(seed));
    boolean met = on.reapedSessions == 0 && on.lostJobs == 0 && on.detectionMillis >= 0
        && on.detectionMillis <= KILL_DETECTION_TARGET_SECONDS * 1000L;
    out.printf("starved: false reaps %d without local health (%d at start-up), %d with it (%d at start-up) (target 0: %s); kill -9 detected in %s without,"
            + " %s with (target <= %d s: %s); jobs run again after a false reap %d without, %d with%n",
        off.reapedSessions, off.reapedAtStartup, on.reapedSessions, on.reapedAtStartup, on.reapedSessions == 0 && on.lostJobs == 0 ? "met" : "MISSED",
        millisText(off.detectionMillis), millisText(on.detectionMillis), KILL_DETECTION_TARGET_SECONDS,
        on.detectionMillis >= 0 && on.detectionMillis <= KILL_DETECTION_TARGET_SECONDS * 1000L ? "met" : "MISSED",
        off.lostJobs, on.lostJobs);
    out.flush();
    return met;
  }

  /**
   * One starved pass on a fresh store and fleet; {@code health} replaces the coordinator's local health
   * setting, or null keeps it.
   */
  private StarvedPass starvedPass(PrintStream out, Path phaseDir, String label, LocalHealth.Config health, Random random)
      throws Exception {
    int slotsTotal = workers * slots;
    // Each run holds about 20 s of work for the whole fleet; two are kept active so it never runs dry.
    int batch = (int) Math.min(1_000_000, Math.max(4L * slotsTotal, 20_000L * slotsTotal / caseMillis));
    String victim = "local-" + workers;
    List<Long> runIds = new ArrayList<>();
    List<CompletableFuture<?>> active = new ArrayList<>();
    double[] maxLoad = {0};
    double[] maxMultiplier = {1};
    long quietNanos;
    long recorded;
    long killMillis;
    long releaseNanos = -1;
    List<AttemptView> attempts = new ArrayList<>();
    long redeliveries = 0;
    long reapedBeforeKill;
    long reapedAtStartup;
    long lostCoordinatorLines = 0;
    LocalHealth.Snapshot healthAtEnd;
    out.printf("  %s: starting %d workers%n", label, workers);
    out.flush();
    long passStartMillis = System.currentTimeMillis();
    try (Fleet fleet = new Fleet(phaseDir, health)) {
      Runnable feed = () -> {
        active.removeIf(CompletableFuture::isDone);
        while (active.size() < 2) {
          String prefix = "s" + (runIds.size() + 1);
          long id = fleet.store.createRun(new RunSpec("bench-failover:starved-" + (runIds.size() + 1), burn(caseMillis),
                  dev.tally.core.RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS),
              records(prefix, batch, () -> caseMillis / 2 + (long) (random.nextDouble() * caseMillis)));
          runIds.add(id);
          active.add(fleet.coordinator.submit(id));
        }
        maxLoad[0] = Math.max(maxLoad[0], loadAverage());
        maxMultiplier[0] = Math.max(maxMultiplier[0], fleet.coordinator.localHealth().multiplier());
      };
      feed.run();
      long deadline = System.nanoTime() + STARVED_WAIT_LIMIT.toNanos();
      while (!fleet.allBusy(runIds)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("gave up waiting " + STARVED_WAIT_LIMIT.toMinutes() + " min for all " + workers
              + " workers to connect and get busy (" + fleet.coordinator.connectedWorkers() + " connected)");
        }
        sleepFeeding(200, feed);
      }
      long busyAtMillis = System.currentTimeMillis();
      reapedAtStartup = fleet.tap.reaps.stream().filter(r -> r.atMillis() < busyAtMillis).count();
      out.printf("  %s: all %d workers busy after %s (sessions reaped meanwhile: %d)%n", label, workers,
          sec((busyAtMillis - passStartMillis) * 1_000_000L), reapedAtStartup);
      out.flush();
      sleepFeeding(settle.toMillis(), feed);
      long recordedBefore = recorded(fleet.store, runIds);
      long quietStart = System.nanoTime();
      sleepFeeding(duration.toMillis(), feed);
      quietNanos = System.nanoTime() - quietStart;
      recorded = recorded(fleet.store, runIds) - recordedBefore;

      // kill -9 of the last worker, holding at least one lease.
      Map<Long, Long> held = new HashMap<>();
      awaitCondition(victim + " holding a lease", () -> {
        feed.run();
        for (long id : List.copyOf(runIds)) {
          for (JobView j : fleet.store.jobs(id)) {
            if (j.state() == JobState.LEASED && victim.equals(j.worker())) {
              held.put(j.jobId(), j.token());
            }
          }
        }
        return !held.isEmpty();
      });
      reapedBeforeKill = fleet.tap.reaps.size();
      long pid = workerPid(victim).orElseThrow(() -> new IllegalStateException("no process for worker " + victim));
      Signals.send(pid, "KILL");
      long killNanos = System.nanoTime();
      killMillis = System.currentTimeMillis();
      for (long tick = 0; releaseNanos < 0 && System.nanoTime() - killNanos < WAIT_LIMIT.toNanos(); tick++) {
        long readNanos = System.nanoTime();
        for (long id : List.copyOf(runIds)) {
          for (JobView j : fleet.store.jobs(id)) {
            Long token = held.get(j.jobId());
            if (token != null && j.token() > token) {
              releaseNanos = readNanos - killNanos;
            }
          }
        }
        if (releaseNanos < 0) {
          sleepUntil(killNanos + (tick + 1) * TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
      }
      // Give the loss time to be recorded if the re-lease came first (it cannot, but the read is cheap).
      sleepFeeding(1_000, feed);
      for (long id : runIds) {
        attempts.addAll(fleet.store.attempts(id));
        redeliveries += fleet.store.run(id).orElseThrow().counters().redeliveries();
      }
      for (int i = 1; i <= workers; i++) {
        lostCoordinatorLines += countLines(fleet.workers.logDir().resolve("worker-" + i + ".log"), LOST_SESSION_LINE);
      }
      healthAtEnd = fleet.coordinator.localHealth();
    }
    long victimKill = killMillis;
    long lostJobs = attempts.stream().filter(a -> isWorkerLost(a) && a.endedAtMillis() < victimKill).count();
    long detectionMillis = attempts.stream().filter(a -> isWorkerLost(a) && victim.equals(a.worker()) && a.endedAtMillis() >= victimKill)
        .mapToLong(a -> a.endedAtMillis() - victimKill).min().orElse(-1);
    StarvedPass p = new StarvedPass(label, reapedBeforeKill, reapedAtStartup, lostJobs, lostCoordinatorLines, redeliveries, recorded, quietNanos,
        maxLoad[0], maxMultiplier[0], healthAtEnd.lateTicks(), healthAtEnd.correlatedTicks(), detectionMillis, releaseNanos);
    out.printf("  %s: %d evals recorded in %s of quiet (%.0f/s); load average up to %.1f; local health multiplier up to x%.0f"
            + " (late ticks %d, ticks with many workers silent %d)%n",
        label, p.recorded, sec(p.quietNanos), p.recorded * 1e9 / Math.max(1, p.quietNanos), p.maxLoad, p.maxMultiplier,
        p.lateTicks, p.correlatedTicks);
    out.printf("  %s: false reaps %d (sessions reaped before the kill, %d of them while the fleet was starting; %d jobs ended worker_lost by them, redeliveries %d in all;"
            + " \"%s\" in the workers' logs: %d); kill -9 of %s: detected in %s, a job of it re-leased in %s%n",
        label, p.reapedSessions, p.reapedAtStartup, p.lostJobs, p.redeliveries, LOST_SESSION_LINE, p.workerLostCoordinator, victim,
        millisText(p.detectionMillis), p.releaseNanos < 0 ? "(not within " + WAIT_LIMIT.toSeconds() + " s)" : sec(p.releaseNanos));
    out.flush();
    return p;
  }

  /** The one-minute load average, or 0 where /proc/loadavg cannot be read. */
  private static double loadAverage() {
    try {
      return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+")[0]);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  private static String millisText(long millis) {
    return millis < 0 ? "(not found)" : sec(millis * 1_000_000L);
  }

  // ------------------------------------------------------------------ the fleet

  /** A store, an embedded coordinator and the local workers, closed in that order's reverse. */
  private final class Fleet implements AutoCloseable {
    final Store store;
    final Coordinator coordinator;
    final LocalWorkerProcesses workers;
    final LogTap tap = LogTap.attach();

    Fleet(Path phaseDir) throws IOException {
      this(phaseDir, null);
    }

    /** A fleet whose coordinator uses {@code health} instead of the options' local health setting, unless null. */
    Fleet(Path phaseDir, LocalHealth.Config health) throws IOException {
      Files.createDirectories(phaseDir);
      Coordinator c;
      CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder());
      if (health != null) {
        builder.localHealth(health);
      }
      try {
        c = builder.storeFile(phaseDir.resolve("bench.db")).start();
      } catch (CoordinatorBuilder.StartException e) {
        tap.detach();
        throw new IOException(e.getMessage(), e);
      }
      try {
        this.workers = LocalWorkerProcesses.start(FailoverBenchCommand.this.workers, slots, new HostPort("127.0.0.1", c.port()), phaseDir.resolve("logs"),
            builder.workerToken().orElse(null));
      } catch (IOException | RuntimeException e) {
        c.close();
        tap.detach();
        throw e;
      }
      this.store = c.store();
      this.coordinator = c;
    }

    /** Whether every worker is connected and holds a lease in one of these runs. */
    boolean allBusy(List<Long> runIds) {
      if (coordinator.connectedWorkers() < FailoverBenchCommand.this.workers) {
        return false;
      }
      Set<String> busy = new HashSet<>();
      for (long id : List.copyOf(runIds)) {
        for (JobView j : store.jobs(id)) {
          if (j.state() == JobState.LEASED && j.worker() != null) {
            busy.add(j.worker());
          }
        }
      }
      for (int i = 1; i <= FailoverBenchCommand.this.workers; i++) {
        if (!busy.contains("local-" + i)) {
          return false;
        }
      }
      return true;
    }

    /** Thaws every worker this bench stopped (a stopped JVM cannot act on being told to stop), then closes all. */
    @Override
    public void close() {
      thawAll();
      try {
        workers.close();
      } finally {
        try {
          coordinator.close(); // and the store it opened
        } finally {
          tap.detach();
        }
      }
    }
  }

  /**
   * Reads the coordinator's WARN lines about reaps ("worker local-1 lost (reaped after 3201ms of
   * silence ...") and drains ("worker ID (local-1) is suspected: ...") as they are logged. Only a
   * diagnostic: the figures come from the store; if logging is not logback, or these lines change, the
   * bench prints "?" for what it would have read here.
   */
  static final class LogTap extends AppenderBase<ILoggingEvent> {
    private static final Pattern REAPED = Pattern.compile("worker (\\S+) lost \\(reaped after (\\d+)ms of silence");
    private static final Pattern DRAINED = Pattern.compile("worker \\S+ \\((\\S+)\\) is suspected");

    /** A reap: the worker's name, the silence it was convicted after, and when (epoch ms). */
    record Reap(String worker, long silenceMillis, long atMillis) {}

    final ConcurrentLinkedQueue<Reap> reaps = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> drains = new ConcurrentLinkedQueue<>();
    boolean attached;

    /** A tap on the root logger, or an unattached one if logging is not logback. */
    static LogTap attach() {
      LogTap tap = new LogTap();
      if (LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx) {
        tap.setContext(ctx);
        tap.setName("tally-bench-failover-tap");
        tap.start();
        ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).addAppender(tap);
        tap.attached = true;
      }
      return tap;
    }

    void detach() {
      if (attached && getContext() instanceof LoggerContext ctx) {
        ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).detachAppender(this);
        stop();
      }
    }

    @Override
    protected void append(ILoggingEvent event) {
      String message = event.getFormattedMessage();
      Matcher m = REAPED.matcher(message);
      if (m.find()) {
        reaps.add(new Reap(m.group(1), Long.parseLong(m.group(2)), event.getTimeStamp()));
        return;
      }
      m = DRAINED.matcher(message);
      if (m.find()) {
        drains.add(m.group(1));
      }
    }
  }

  // ------------------------------------------------------------------ processes and signals

  /** The pid of the local worker named {@code name}, found by its {@code --name=} argument. */
  static OptionalLong workerPid(String name) {
    String arg = "--name=" + name;
    return ProcessHandle.current().descendants().filter(h -> commandLine(h.pid()).contains(arg))
        .mapToLong(ProcessHandle::pid).findFirst();
  }

  /** A process's arguments from /proc (ProcessHandle.Info may leave them out for long command lines). */
  private static List<String> commandLine(long pid) {
    try {
      return List.of(Files.readString(Path.of("/proc", Long.toString(pid), "cmdline")).split("\0"));
    } catch (IOException e) {
      return List.of();
    }
  }

  private void signal(long pid, String signal) throws IOException, InterruptedException {
    if (signal.equals("STOP")) {
      stopped.add(pid); // before the signal: if kill is interrupted, the finally still thaws
    }
    Signals.send(pid, signal);
  }

  private void continueWorker(long pid) throws IOException, InterruptedException {
    signal(pid, "CONT");
    stopped.remove(pid);
  }

  /** Sends SIGCONT to every process still stopped by this bench; never throws. */
  private void thawAll() {
    for (Long pid : List.copyOf(stopped)) {
      try {
        continueWorker(pid);
      } catch (IOException | InterruptedException | RuntimeException e) {
        System.err.println("tally bench-failover: could not SIGCONT " + pid + " (do it by hand: kill -CONT " + pid + "): " + e);
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  // ------------------------------------------------------------------ helpers

  private static boolean isWorkerLost(AttemptView a) {
    return a.ending().equalsIgnoreCase(InfraFailure.Kind.WORKER_LOST.name());
  }

  private static long recorded(Store store, List<Long> runIds) {
    long n = 0;
    for (long id : runIds) {
      n += store.run(id).map(r -> r.counters().recorded()).orElse(0L);
    }
    return n;
  }

  private static EvaluatorSpec sleep(long millis) {
    return new EvaluatorSpec("sleep", Map.of("millis", Long.toString(millis)), Duration.ofMinutes(1));
  }

  /** Cases that keep a slot's CPU busy for their {@code millis}. */
  private static EvaluatorSpec burn(long millis) {
    return new EvaluatorSpec("sleep", Map.of("millis", Long.toString(millis), "burn", "true"), Duration.ofMinutes(1));
  }

  /** {@code n} sleep cases, each with its own {@code millis}. */
  private static List<CaseRecord> records(String prefix, int n, LongSupplier millis) {
    List<CaseRecord> records = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String id = prefix + "-" + i;
      records.add(new CaseRecord(i, id, "{\"id\":\"" + id + "\",\"millis\":" + millis.getAsLong() + "}"));
    }
    return records;
  }

  /** Polls {@code condition} every 100 ms until it holds; throws if it does not within {@link #WAIT_LIMIT}. */
  private static void awaitCondition(String what, BooleanSupplier condition) throws InterruptedException {
    if (!awaitQuietly(condition, 100)) {
      throw new IllegalStateException("gave up waiting " + WAIT_LIMIT.toSeconds() + " s for: " + what);
    }
  }

  /** Polls {@code condition} every {@code pollMillis} until it holds (true) or {@link #WAIT_LIMIT} passes (false). */
  private static boolean awaitQuietly(BooleanSupplier condition, long pollMillis) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT_LIMIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(pollMillis);
    }
    return true;
  }

  /** Sleeps {@code millis}, topping up the work every 100 ms. */
  private static void sleepFeeding(long millis, Runnable feed) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, millis));
    feed.run();
    while (System.nanoTime() < end) {
      sleepUntil(Math.min(end, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100)));
      feed.run();
    }
  }

  private static void sleepUntil(long nanoTime) throws InterruptedException {
    long left;
    while ((left = nanoTime - System.nanoTime()) > 0) {
      TimeUnit.NANOSECONDS.sleep(left);
    }
  }

  private static long countLines(Path file, String needle) throws IOException {
    if (!Files.exists(file)) {
      return 0;
    }
    try (var lines = Files.lines(file)) {
      return lines.filter(l -> l.contains(needle)).count();
    }
  }

  /** The median of sorted values (the mean of the middle two for an even count). */
  static long median(List<Long> sorted) {
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  private static String sec(long nanos) {
    return String.format(Locale.ROOT, "%.3f s", nanos / 1e9);
  }

  private static String human(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      System.err.println("tally bench-failover: could not delete " + dir + ": " + e.getMessage());
    }
  }
}

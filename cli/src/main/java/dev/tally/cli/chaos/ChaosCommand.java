package dev.tally.cli.chaos;

import dev.tally.cli.*;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.CaseRecord;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.simulation.Checker;
import dev.tally.store.SqliteStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code tally chaos}: real-process chaos. Starts a coordinator and N workers as separate JVMs on loopback,
 * runs datasets through them, and for a set time injects faults at random (seeded) moments: {@code kill -9}
 * of a worker (a replacement starts after a short delay), {@code SIGSTOP} of a worker for 0.5-4 s then
 * {@code SIGCONT}, and {@code kill -9} of the coordinator (started again with the same command, which
 * resumes its unfinished run from the store). Then it stops injecting, lets the run in progress finish,
 * checks the invariants from the store (with the simulation's {@link Checker}, the one invariant checker) and the results files ({@link ResultsFileCheck}), and prints what it did
 * and what it found. Exit 0 only if nothing was violated.
 *
 * <p><b>Runs back to back.</b> Rather than one dataset sized to outlast the fault period (whose length
 * would have to be guessed from a throughput that the faults themselves change), the chaos run works
 * through a sequence of runs: run 1 on {@code cases-1.jsonl}, and as soon as a run finishes (its
 * coordinator exits by itself) the next starts with a new coordinator on the same port, until the fault
 * period is over. The run in progress when it ends is let finish; so a run is always in progress while
 * faults are injected, the tail after the fault period is at most one run, and every run is checked. The
 * generated datasets have {@code --cases-per-run} sleep cases of 20-200 ms each (by default about 10 s of
 * work for the fleet); a {@code --dataset} is run again and again instead (with the sleep evaluator: each
 * case sleeps its {@code millis} field, or 100 ms).
 *
 * <p><b>Faults.</b> The gap between faults is uniform in [0.25, 1.75] times {@code --fault-interval}; the
 * first three faults are one of each kind, in a seeded order, so that even a short run sees every kind;
 * after that a worker kill has weight 0.35, a freeze 0.40, a coordinator kill 0.25. A fault that would
 * leave no healthy (alive and not frozen) worker is not chosen (with one worker, a short gap is allowed).
 * In the last {@value #QUIET_TAIL_SECONDS} s of the fault period a worker is killed only while the
 * coordinator has been up for {@value #SETTLED_SECONDS} s: a worker that dies while no coordinator sees it
 * leaves leases that only expire after 30 s, which would stretch the tail. Choices come from the seed;
 * timing is real, so two runs with one seed inject the same sequence of decisions, not the same history.
 *
 * <p><b>Processes.</b> Every process it starts it ends: in a {@code finally} and in a shutdown hook, each
 * stopped process is continued before it is killed ({@link ChaosFleet}), and each child exits by itself if
 * this process disappears. Child logs go to {@code logs/} in the work directory, which is printed.
 */
@Command(
    name = "chaos",
    mixinStandardHelpOptions = true,
    description = {
      "Run datasets on a coordinator and worker processes while killing, freezing and restarting them, then check that no case was lost or counted twice.",
      "Exit code: 0 no invariant was violated; 1 a violation (each is printed); 2 bad usage."
    })
public final class ChaosCommand implements Callable<Integer> {
  static final int QUIET_TAIL_SECONDS = 35;
  static final int SETTLED_SECONDS = 8;
  /** A coordinator that exits by itself this many times in a row without finishing its run ends the chaos run. */
  static final int MAX_UNEXPECTED_COORDINATOR_EXITS = 5;

  enum Kind {
    WORKER_KILL("worker kill -9"),
    WORKER_FREEZE("worker SIGSTOP/SIGCONT"),
    COORDINATOR_KILL("coordinator kill -9");

    final String label;

    Kind(String label) {
      this.label = label;
    }
  }

  @Spec CommandSpec spec;

  @Option(names = "--workers", defaultValue = "3", description = "Worker processes (default: ${DEFAULT-VALUE}).")
  int workers;

  @Option(names = "--slots", defaultValue = "2", description = "Slots per worker (default: ${DEFAULT-VALUE}).")
  int slots;

  @Option(names = "--duration", defaultValue = "60s", converter = DurationConverter.class, description = "How long faults are injected (default: ${DEFAULT-VALUE}).")
  Duration duration;

  @Option(names = "--dataset", description = "A dataset to run (again and again) instead of generated sleep cases; run with --evaluator sleep, each case sleeping its millis field or 100 ms.")
  Path dataset;

  @Option(names = "--cases-per-run", defaultValue = "0", description = "Cases in each generated dataset (default: 100 x workers x slots, about 10 s of work).")
  int casesPerRun;

  @Option(names = "--seed", description = "Seed of every random choice (default: a random seed, printed).")
  Long seed;

  @Option(names = "--db", description = "The store, a file that must not exist yet (default: chaos.db in the work directory).")
  Path db;

  @Option(names = "--work-dir", description = "Where datasets, results, summaries and logs go (default: a new temporary directory).")
  Path workDir;

  @Option(names = "--fault-interval", defaultValue = "4s", converter = DurationConverter.class, description = "Mean time between faults (default: ${DEFAULT-VALUE}).")
  Duration faultInterval;

  @Option(names = "--finish-timeout", defaultValue = "120s", converter = DurationConverter.class, description = "How long the run in progress may take to finish once the faults stop (default: ${DEFAULT-VALUE}).")
  Duration finishTimeout;

  /** One run of the sequence: a dataset, its results and summary files, and (once known) its run id. */
  private static final class Round {
    final int number;
    final Path dataset;
    final List<String> caseIds;
    final Path results;
    final Path summary;
    long runId = -1;
    int coordinatorStarts;
    boolean finished;

    Round(int number, Path dataset, List<String> caseIds, Path results, Path summary) {
      this.number = number;
      this.dataset = dataset;
      this.caseIds = caseIds;
      this.results = results;
      this.summary = summary;
    }
  }

  private PrintWriter out;
  private SplittableRandom random;
  private long seedUsed;
  private Path dir;
  private Path dbFile;
  private int port;
  private ChaosFleet fleet;
  private long t0;
  private long deadline;
  private final List<Round> rounds = new ArrayList<>();
  private Round round;
  private final Set<Long> runsOfEarlierRounds = new HashSet<>();
  private Process coordinator;
  private long coordinatorStartedAt;
  private long coordinatorRestartAt = -1;
  private int unexpectedCoordinatorExitsInARow;
  private final Map<Kind, Integer> injected = new EnumMap<>(Kind.class);
  private final Deque<Kind> forced = new ArrayDeque<>();
  private final List<String> violations = new ArrayList<>();
  private int workerStarts;
  private int coordinatorStarts;
  private int unexpectedExits;
  private List<CaseRecord> givenCases;

  public static void main(String[] args) {
    System.exit(new CommandLine(new ChaosCommand()).setCaseInsensitiveEnumValuesAllowed(true).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    out = spec.commandLine().getOut();
    CommandLine cl = spec.commandLine();
    if (workers < 1 || workers > RunnerCommand.MAX_LOCAL_WORKERS) {
      throw new ParameterException(cl, "--workers must be from 1 to " + RunnerCommand.MAX_LOCAL_WORKERS + ", got " + workers);
    }
    if (slots < 1 || slots > WorkerServer.MAX_WORKER_SLOTS) {
      throw new ParameterException(cl, "--slots must be from 1 to " + WorkerServer.MAX_WORKER_SLOTS + ", got " + slots);
    }
    if (duration.isNegative() || duration.isZero()) {
      throw new ParameterException(cl, "--duration must be positive, got " + DurationConverter.text(duration));
    }
    if (faultInterval.toMillis() < 100 || finishTimeout.isNegative() || finishTimeout.isZero()) {
      throw new ParameterException(cl, "--fault-interval must be at least 100ms and --finish-timeout positive");
    }
    if (casesPerRun < 0) {
      throw new ParameterException(cl, "--cases-per-run must be >= 0, got " + casesPerRun);
    }
    if (casesPerRun == 0) {
      casesPerRun = 100 * workers * slots;
    }
    if (dataset != null) {
      try {
        givenCases = new ArrayList<>();
        // Chaos checks every case of every round by id, so it keeps them: its datasets are small.
        try (Dataset.Reading reading = Dataset.read(dataset).open()) {
          for (CaseRecord c; (c = reading.next()) != null; ) {
            givenCases.add(c);
          }
        } catch (dev.tally.core.cases.CaseSourceException e) {
          throw new DatasetException(dataset, e.line(), e.detail());
        }
      } catch (DatasetException e) {
        spec.commandLine().getErr().println("tally: " + e.getMessage());
        return Main.EXIT_USAGE;
      }
      if (givenCases.isEmpty()) {
        throw new ParameterException(cl, "--dataset " + dataset + " has no cases");
      }
    }
    seedUsed = seed != null ? seed : new SplittableRandom().nextLong();
    random = new SplittableRandom(seedUsed);
    dir = workDir != null ? Files.createDirectories(workDir).toAbsolutePath() : Files.createTempDirectory("tally-chaos").toAbsolutePath();
    dbFile = db != null ? db.toAbsolutePath() : dir.resolve("chaos.db");
    if (Files.exists(dbFile)) {
      throw new ParameterException(cl, "the store " + dbFile + " exists already; chaos needs a fresh one (give --db a new file, or a new --work-dir)");
    }
    port = Ports.freeFixedLoopbackPort();
    HostPort address = new HostPort("127.0.0.1", port);
    fleet = new ChaosFleet(dir.resolve("logs"), address, workers, slots);
    Thread hook = new Thread(fleet::close, "tally-chaos-stop");
    Runtime.getRuntime().addShutdownHook(hook);

    out.printf("tally chaos: seed %d; %d workers x %d slots; faults for %s, about one per %s; coordinator on %s%n",
        seedUsed, workers, slots, human(duration), human(faultInterval), address);
    out.printf("tally chaos: work dir %s (store %s, child logs in %s)%n", dir, dbFile, fleet.logDir());
    out.printf("tally chaos: %s%n", dataset != null
        ? "runs " + dataset + " (" + givenCases.size() + " cases) again and again"
        : "runs generated datasets of " + casesPerRun + " sleep cases (20-200 ms) back to back");
    out.flush();
    boolean finishedInTime;
    try {
      finishedInTime = loop();
    } finally {
      fleet.close();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // Shutting down already: the hook closes the fleet (again, harmlessly).
      }
    }
    long left = fleet.aliveCount();
    event("all processes ended (%d left running)", left);
    if (left > 0) {
      violations.add(left + " child processes were still running after the chaos run ended them");
    }
    if (!finishedInTime) {
      violations.add("run " + (round.runId >= 0 ? round.runId : round.number) + " did not finish within " + human(finishTimeout)
          + " after the faults stopped");
    }
    return report(check());
  }

  // ---------------------------------------------------------------------------------------------
  // the loop

  /** Injects faults until the deadline, then lets the run in progress finish; false if it did not in time. */
  private boolean loop() throws IOException, InterruptedException {
    t0 = System.nanoTime();
    deadline = t0 + duration.toNanos();
    forced.addAll(shuffled(List.of(Kind.values())));
    startRound(t0);
    for (ChaosFleet.Worker w : fleet.workers()) {
      startWorker(w, t0, false);
    }
    long nextFault = t0 + Math.max(TimeUnit.SECONDS.toNanos(2), gap());
    boolean faultsOver = false;
    long finishBy = Long.MAX_VALUE;
    while (true) {
      long now = System.nanoTime();
      for (ChaosFleet.Worker w : fleet.workers()) {
        if (w.frozen && now >= w.thawAtNanos) {
          thaw(w, now);
        }
        if (w.process != null && !w.process.isAlive()) {
          unexpectedExits++;
          violations.add("worker " + w.name + " (pid " + w.process.pid() + ") exited by itself with code " + w.process.exitValue());
          event("worker %s (pid %d) exited by itself with code %d; replacement in 1 s", w.name, w.process.pid(), w.process.exitValue());
          w.process = null;
          w.frozen = false;
          w.replaceAtNanos = now + TimeUnit.SECONDS.toNanos(1);
        }
        if (w.process == null && w.replaceAtNanos != 0 && now >= w.replaceAtNanos) {
          startWorker(w, now, true);
        }
      }
      if (coordinator == null) {
        if (coordinatorRestartAt >= 0 && now >= coordinatorRestartAt) {
          coordinatorRestartAt = -1;
          startCoordinator(now);
        }
      } else if (!coordinator.isAlive()) {
        if (coordinatorExited(now) && (faultsOver || now >= deadline)) {
          if (!faultsOver) {
            event("fault period over, as the run in progress finished");
          }
          return true;
        }
        if (unexpectedCoordinatorExitsInARow >= MAX_UNEXPECTED_COORDINATOR_EXITS) {
          violations.add("the coordinator exited by itself " + unexpectedCoordinatorExitsInARow + " times in a row; giving up");
          return true;
        }
      }
      if (!faultsOver && now >= deadline) {
        faultsOver = true;
        finishBy = now + finishTimeout.toNanos();
        int frozen = 0;
        int down = 0;
        for (ChaosFleet.Worker w : fleet.workers()) {
          if (w.frozen) {
            thaw(w, now);
            frozen++;
          }
          if (w.process == null) {
            startWorker(w, now, true);
            down++;
          }
        }
        event("fault period over: no more faults (%d frozen workers continued, %d workers started); waiting up to %s for run %s to finish",
            frozen, down, human(finishTimeout), round.runId >= 0 ? Long.toString(round.runId) : "of " + round.dataset.getFileName());
        if (coordinator == null) {
          coordinatorRestartAt = -1;
          startCoordinator(now);
        }
        continue;
      }
      if (faultsOver && now > finishBy) {
        return false;
      }
      if (!faultsOver && now >= nextFault) {
        nextFault = inject(now) ? now + gap() : now + TimeUnit.MILLISECONDS.toNanos(500);
      }
      Thread.sleep(TICK_MILLIS);
    }
  }

  /**
   * The chaos loop's tick: how often it looks at its processes and its fault schedule. It is the pace of a
   * control loop, not a wait for a condition; 20 ms keeps fault times precise to a few hundredths of a
   * second at a negligible cost.
   */
  private static final long TICK_MILLIS = 20;

  private List<Kind> shuffled(List<Kind> kinds) {
    List<Kind> list = new ArrayList<>(kinds);
    for (int i = list.size() - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      Kind t = list.get(i);
      list.set(i, list.get(j));
      list.set(j, t);
    }
    return list;
  }

  private long gap() {
    double f = 0.25 + 1.5 * random.nextDouble();
    return (long) (faultInterval.toNanos() * f);
  }

  private long uniformMillis(long min, long max) {
    return min + random.nextLong(max - min + 1);
  }

  private void startRound(long now) throws IOException {
    int number = rounds.size() + 1;
    Path data;
    List<String> ids;
    if (givenCases != null) {
      data = dataset.toAbsolutePath();
      ids = givenCases.stream().map(CaseRecord::caseId).toList();
    } else {
      data = dir.resolve("cases-" + number + ".jsonl");
      Random r = new Random(seedUsed * 1_000_003L + number);
      List<String> lines = new ArrayList<>(casesPerRun);
      List<String> generated = new ArrayList<>(casesPerRun);
      for (int i = 0; i < casesPerRun; i++) {
        String id = "r" + number + "-" + i;
        generated.add(id);
        lines.add("{\"id\":\"" + id + "\",\"millis\":" + (20 + r.nextInt(181)) + "}");
      }
      Files.write(data, lines, StandardCharsets.UTF_8);
      ids = generated;
    }
    round = new Round(number, data, ids, dir.resolve("results-" + number + ".jsonl"), dir.resolve("summary-" + number + ".json"));
    rounds.add(round);
    unexpectedCoordinatorExitsInARow = 0;
    startCoordinator(now);
  }

  /** Starts the coordinator for the current round: {@code tally run} again, or {@code tally resume} of a run already finished. */
  private void startCoordinator(long now) throws IOException {
    List<RunView> runs = runsOfRound();
    List<String> args = new ArrayList<>();
    String what;
    if (runs.size() == 1 && runs.get(0).ended()) {
      // Killed after the run's last outcome but before (or while) writing its results: write them.
      what = "resume run " + runs.get(0).runId() + " (finished; writes its results)";
      args.addAll(List.of("resume", Long.toString(runs.get(0).runId())));
    } else {
      what = runs.isEmpty() ? "run " + round.dataset.getFileName() : "run " + round.dataset.getFileName() + " again (resumes run " + runs.get(0).runId() + ")";
      args.addAll(List.of("run", round.dataset.toString(), "--evaluator=sleep", "--millis=100"));
    }
    args.addAll(List.of("--listen=127.0.0.1:" + port, "--workers=0", "--db=" + dbFile, "--out=" + round.results,
        "--summary=" + round.summary, "--no-progress"));
    coordinator = fleet.startCoordinator(args);
    coordinatorStartedAt = now;
    coordinatorStarts++;
    round.coordinatorStarts++;
    event("start coordinator (pid %d): %s", coordinator.pid(), what);
  }

  /**
   * The coordinator exited by itself: its run finished (the round is over) or something is wrong.
   *
   * @return whether the round is over
   */
  private boolean coordinatorExited(long now) throws IOException {
    int code = coordinator.exitValue();
    long pid = coordinator.pid();
    coordinator = null;
    List<RunView> runs = runsOfRound();
    if (runs.size() == 1 && runs.get(0).ended() && (code == Main.EXIT_PASSED || code == Main.EXIT_FAILED)) {
      RunView run = runs.get(0);
      round.runId = run.runId();
      round.finished = true;
      runsOfEarlierRounds.add(run.runId());
      RunCounters c = run.counters();
      event("run %d finished (coordinator pid %d exited with %d): %d cases, %d redeliveries, %d duplicates, %d fenced; %d coordinator starts",
          run.runId(), pid, code, c.total(), c.redeliveries(), c.duplicatesSuppressed(), c.staleResultsFenced(), round.coordinatorStarts);
      if (now < deadline) {
        startRound(now);
      }
      return true;
    }
    unexpectedExits++;
    unexpectedCoordinatorExitsInARow++;
    String state = runs.isEmpty() ? "no run yet" : "run " + runs.get(0).runId() + (runs.get(0).ended() ? " finished" : " unfinished");
    violations.add("the coordinator (pid " + pid + ") exited by itself with code " + code + " (" + state + "); see " + fleet.logDir().resolve("coordinator.log"));
    event("coordinator (pid %d) exited by itself with code %d (%s); starting it again in 1 s", pid, code, state);
    coordinatorRestartAt = now + TimeUnit.SECONDS.toNanos(1);
    return false;
  }

  /** The runs the current round's coordinators created (read only while no coordinator runs, or to look). */
  private List<RunView> runsOfRound() {
    if (!Files.exists(dbFile)) {
      return List.of();
    }
    try (SqliteStore store = SqliteStore.open(dbFile)) {
      List<RunView> runs = store.runs().stream()
          .filter(r -> !runsOfEarlierRounds.contains(r.runId()) && r.spec().dataset().equals(round.dataset.toString()))
          .toList();
      if (runs.size() > 1) {
        violations.add("the runs " + runs.stream().map(RunView::runId).toList() + " were created for one dataset: a restarted coordinator started over instead of resuming");
      }
      return runs;
    }
  }

  private void startWorker(ChaosFleet.Worker w, long now, boolean replacement) throws IOException {
    Process p = fleet.startWorker(w);
    workerStarts++;
    event("start worker %s (pid %d)%s", w.name, p.pid(), replacement ? " as a replacement" : "");
  }

  private void thaw(ChaosFleet.Worker w, long now) throws IOException, InterruptedException {
    w.frozen = false;
    if (w.alive()) {
      ChaosFleet.signal(w.process, "CONT");
      event("SIGCONT worker %s (pid %d)", w.name, w.process.pid());
    }
  }

  // ---------------------------------------------------------------------------------------------
  // faults

  /** Injects one fault of a kind that is possible now; false if none is. */
  private boolean inject(long now) throws IOException, InterruptedException {
    Kind kind = null;
    for (Kind k : forced) {
      if (eligible(k, now)) {
        kind = k;
        break;
      }
    }
    if (kind != null) {
      forced.remove(kind);
    } else {
      List<Kind> possible = new ArrayList<>();
      double total = 0;
      for (Kind k : Kind.values()) {
        if (eligible(k, now)) {
          possible.add(k);
          total += weight(k);
        }
      }
      if (possible.isEmpty()) {
        return false;
      }
      double x = random.nextDouble() * total;
      for (Kind k : possible) {
        kind = k;
        x -= weight(k);
        if (x < 0) {
          break;
        }
      }
    }
    injected.merge(kind, 1, Integer::sum);
    switch (kind) {
      case WORKER_KILL -> {
        ChaosFleet.Worker w = pick(killable(now));
        long pid = w.process.pid();
        boolean wasFrozen = w.frozen;
        ChaosFleet.kill9(w.process);
        w.process = null;
        w.frozen = false;
        long delay = uniformMillis(500, 3000);
        w.replaceAtNanos = now + TimeUnit.MILLISECONDS.toNanos(delay);
        event("FAULT kill -9 worker %s (pid %d%s); replacement in %.1f s", w.name, pid, wasFrozen ? ", frozen" : "", delay / 1000.0);
      }
      case WORKER_FREEZE -> {
        ChaosFleet.Worker w = pick(freezable());
        long hold = uniformMillis(500, 4000);
        ChaosFleet.signal(w.process, "STOP");
        w.frozen = true;
        w.thawAtNanos = now + TimeUnit.MILLISECONDS.toNanos(hold);
        event("FAULT SIGSTOP worker %s (pid %d) for %.1f s", w.name, w.process.pid(), hold / 1000.0);
      }
      default -> {
        long pid = coordinator.pid();
        ChaosFleet.kill9(coordinator);
        if (coordinator.exitValue() != 137) {
          event("(the coordinator had exited with %d just before the kill)", coordinator.exitValue());
        }
        coordinator = null;
        long delay = uniformMillis(200, 2000);
        coordinatorRestartAt = now + TimeUnit.MILLISECONDS.toNanos(delay);
        event("FAULT kill -9 coordinator (pid %d); restart in %.1f s", pid, delay / 1000.0);
      }
    }
    return true;
  }

  private static double weight(Kind k) {
    return switch (k) {
      case WORKER_KILL -> 0.35;
      case WORKER_FREEZE -> 0.40;
      case COORDINATOR_KILL -> 0.25;
    };
  }

  private boolean eligible(Kind k, long now) {
    return switch (k) {
      case WORKER_KILL -> !killable(now).isEmpty();
      case WORKER_FREEZE -> !freezable().isEmpty();
      case COORDINATOR_KILL -> coordinator != null && coordinator.isAlive();
    };
  }

  private long healthyWorkers() {
    return fleet.workers().stream().filter(ChaosFleet.Worker::healthy).count();
  }

  /** Live workers whose death leaves a healthy worker (any live one with a single-worker fleet). */
  private List<ChaosFleet.Worker> killable(long now) {
    boolean settled = coordinator != null && coordinator.isAlive() && now - coordinatorStartedAt >= TimeUnit.SECONDS.toNanos(SETTLED_SECONDS);
    if (now > deadline - TimeUnit.SECONDS.toNanos(QUIET_TAIL_SECONDS) && !settled) {
      return List.of();
    }
    long healthy = healthyWorkers();
    return fleet.workers().stream()
        .filter(w -> w.alive() && (workers == 1 || healthy - (w.healthy() ? 1 : 0) >= 1))
        .toList();
  }

  /** Healthy workers whose freeze leaves another healthy one (the only one with a single-worker fleet). */
  private List<ChaosFleet.Worker> freezable() {
    long healthy = healthyWorkers();
    return fleet.workers().stream().filter(w -> w.healthy() && (workers == 1 || healthy >= 2)).toList();
  }

  private ChaosFleet.Worker pick(List<ChaosFleet.Worker> candidates) {
    return candidates.get(random.nextInt(candidates.size()));
  }

  // ---------------------------------------------------------------------------------------------
  // checking and reporting

  private List<Checker.RunCheck> check() {
    List<Checker.RunCheck> checks = new ArrayList<>();
    if (!Files.exists(dbFile)) {
      violations.add("no store was written at " + dbFile);
      return checks;
    }
    try (SqliteStore store = SqliteStore.open(dbFile)) {
      Set<String> roundDatasets = new HashSet<>();
      for (Round r : rounds) {
        roundDatasets.add(r.dataset.toString());
        long runId = r.runId;
        if (runId < 0) {
          List<RunView> runs = store.runs().stream()
              .filter(v -> !runsOfEarlierRounds.contains(v.runId()) && v.spec().dataset().equals(r.dataset.toString())).toList();
          if (runs.isEmpty()) {
            violations.add("round " + r.number + " (" + r.dataset.getFileName() + ") left no run in the store");
            continue;
          }
          runId = runs.get(0).runId();
        }
        Checker.RunCheck c = Checker.checkRun(store, runId, r.caseIds);
        checks.add(c);
        violations.addAll(c.violations());
        violations.addAll(ResultsFileCheck.check(store, runId, r.caseIds, r.results));
      }
      long runsInStore = store.runs().size();
      if (runsInStore != rounds.size()) {
        violations.add("the store has " + runsInStore + " runs for " + rounds.size() + " datasets run");
      }
    }
    return checks;
  }

  private int report(List<Checker.RunCheck> checks) {
    long cases = 0;
    long passed = 0;
    long failed = 0;
    long errored = 0;
    long endedFailed = 0;
    long redeliveries = 0;
    long duplicates = 0;
    long fenced = 0;
    long finishedRuns = 0;
    for (Checker.RunCheck c : checks) {
      RunCounters k = c.counters();
      if (k == null) {
        continue;
      }
      cases += k.total();
      passed += k.passed();
      failed += k.failed();
      errored += k.errored();
      endedFailed += k.jobsFailed();
      redeliveries += k.redeliveries();
      duplicates += k.duplicatesSuppressed();
      fenced += k.staleResultsFenced();
      finishedRuns += k.finished() ? 1 : 0;
    }
    int faults = injected.values().stream().mapToInt(Integer::intValue).sum();
    StringBuilder byKind = new StringBuilder();
    for (Kind k : Kind.values()) {
      byKind.append(byKind.length() == 0 ? "" : ", ").append(k.label).append(' ').append(injected.getOrDefault(k, 0));
    }
    out.printf("---- tally chaos: seed %d, %s of faults, %s in all; work dir %s%n", seedUsed, human(duration),
        human(Duration.ofNanos(System.nanoTime() - t0)), dir);
    out.printf("faults injected: %d (%s)%n", faults, byKind);
    out.printf("processes started: %d coordinators, %d workers; unexpected exits: %d%n", coordinatorStarts, workerStarts, unexpectedExits);
    out.printf("runs: %d (%d finished)%n", checks.size(), finishedRuns);
    out.printf("cases: %d (%d passed, %d failed, %d errored, %d ended failed after their attempts)%n", cases, passed, failed, errored, endedFailed);
    out.printf("redeliveries: %d%n", redeliveries);
    out.printf("duplicates suppressed: %d%n", duplicates);
    out.printf("stale results fenced: %d%n", fenced);
    out.printf("violations: %d%n", violations.size());
    int shown = 0;
    for (String v : violations) {
      if (shown++ == 50) {
        out.printf("  ... and %d more%n", violations.size() - 50);
        break;
      }
      out.printf("  VIOLATION %s%n", v);
    }
    out.flush();
    return violations.isEmpty() ? 0 : 1;
  }

  private void event(String format, Object... args) {
    double seconds = (System.nanoTime() - t0) / 1e9;
    out.printf("+%8.3fs %s%n", seconds, String.format(format, args));
    out.flush();
  }

  private static String human(Duration d) {
    long ms = d.toMillis();
    if (ms % 60_000 == 0 && ms >= 60_000) {
      return (ms / 60_000) + " min";
    }
    return ms % 1000 == 0 ? (ms / 1000) + " s" : String.format("%.1f s", ms / 1000.0);
  }


}

package dev.tally.cli.chaos;

import dev.tally.cli.*;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.CaseRecord;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.lead.LeaderEpoch;
import dev.tally.simulation.Checker;
import dev.tally.store.JdbcStore;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
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
import picocli.CommandLine.Mixin;
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
 * <p><b>Several coordinators.</b> With {@code --coordinators 2} or {@code 3}, it starts that many {@code tally
 * server}s on the store instead (a SQLite file they share on this machine, or a PostgreSQL database: {@code
 * --db postgresql://...}), each on fixed ports of its own; the workers are given every server's worker port
 * and each run is submitted with {@code tally submit --server URL,URL,...} and its results fetched with
 * {@code tally results} the same way, so the client finds the leader. The coordinator faults are then the
 * leader's: {@code kill -9} (started again once a standby has taken over, so it stands by) and, on
 * PostgreSQL, {@code SIGSTOP} (continued once a standby has taken over: it must step down and exit, and is
 * started again; why not on SQLite is {@link Kind}'s).
 *
 * <p><b>The database's network.</b> On PostgreSQL the coordinators are given a {@link StoreRelay}'s loopback
 * port as the database's, and two more faults take the network away for 1 to 4 s: every connection cut and
 * new ones refused, or every byte held. None is done while a leader fault awaits its takeover, and no leader
 * fault while one is in effect or ended less than {@value #LEADER_SETTLED_SECONDS} s ago: a takeover is timed
 * from its fault. The chaos checks read the store directly, not through the relay.
 * Who leads, and each takeover, chaos reads from the store's history of epochs ({@link LeaderWatch}); at
 * the end it also checks that the epoch grew by one per takeover, that no deposed epoch wrote after its
 * deposition, and it reports each takeover with the time it took from the fault.
 *
 * <p><b>Processes.</b> Every process it starts it ends: in a {@code finally} and in a shutdown hook, each
 * stopped process is continued before it is killed ({@link ChaosFleet}), and each child exits by itself if
 * this process disappears. Child logs go to {@code logs/} in the work directory, which is printed.
 */
@Command(
    name = "chaos",
    mixinStandardHelpOptions = true,
    description = {
      "Run datasets on a coordinator (or, with --coordinators 2 or 3, tally servers sharing the store) and worker processes while killing,"
          + " freezing and restarting them (and, on PostgreSQL, cutting and stalling the database's network), then check that no case was"
          + " lost or counted twice (and, with several coordinators, that each takeover happened once and no deposed leader wrote).",
      "Exit code: 0 no invariant was violated; 1 a violation (each is printed); 2 bad usage."
    })
public final class ChaosCommand implements Callable<Integer> {
  static final int QUIET_TAIL_SECONDS = 35;
  static final int SETTLED_SECONDS = 8;
  /** A coordinator that exits by itself this many times in a row without finishing its run ends the chaos run. */
  static final int MAX_UNEXPECTED_COORDINATOR_EXITS = 5;

  /** A leader fault waits until the leader has led this long, so that it resumed its runs and workers found it. */
  static final int LEADER_SETTLED_SECONDS = 3;
  /**
   * How long a takeover may take before chaos stops waiting for it (and continues or restarts the faulted
   * leader anyway): six times the 5 s the issue promises, for a loaded machine.
   */
  static final int TAKEOVER_GIVE_UP_SECONDS = 30;
  /** How long a leader continued after its takeover may take to step down and exit. */
  static final int STEP_DOWN_LIMIT_SECONDS = 30;
  /** What the issue promises: a standby leads within 5 s of the leader's kill -9 or SIGSTOP, with the defaults. */
  static final Duration TAKEOVER_TARGET = Duration.ofSeconds(5);
  /**
   * How often chaos with several coordinators reads the store (its epochs, the round's run): often enough
   * to time a takeover to a tenth of a second of observation, rarely enough to cost the store nothing.
   */
  static final long LOOK_MILLIS = 100;
  /** What {@code tally server} says when it stands by, and when it steps down (its log lines). */
  static final String STANDING_BY = "tally server: standing by";
  static final String STEPPED_DOWN = "tally server: stepped down";

  /**
   * The fault kinds: what each is called in the report (the one owner of those words, which {@code
   * ChaosCommandTest} reads too), and its weight with one coordinator and with several. A weight of 0
   * means the kind is not done in that mode.
   *
   * <p>Several coordinators on one SQLite file are not frozen: a process stopped inside a write transaction
   * keeps the file's write lock (the kernel releases a lock when its process dies, not when it stops), so
   * no standby can swap the leader row until the leader is continued, and then the leader, whose lease
   * has not been taken, simply renews it. A freeze there tests the file lock, not the lease; on PostgreSQL
   * the server ends a session idle in a transaction (after 2 s) and releases its row lock, so a frozen
   * leader is taken over.
   */
  enum Kind {
    WORKER_KILL("worker kill -9", 0.35, 0.35),
    WORKER_FREEZE("worker SIGSTOP/SIGCONT", 0.40, 0.35),
    COORDINATOR_KILL("coordinator kill -9", 0.25, 0),
    LEADER_KILL("leader kill -9", 0, 0.15),
    LEADER_FREEZE("leader SIGSTOP/SIGCONT", 0, 0.15),
    /** PostgreSQL only: every connection to the database closed, new ones refused, for a while ({@link StoreRelay#cut}). */
    STORE_CUT("database connections cut", 0.10, 0.10),
    /** PostgreSQL only: the database's network silent, what is sent held, for a while ({@link StoreRelay#stall}). */
    STORE_STALL("database network stalled", 0.10, 0.10);

    final String label;
    private final double weightOne;
    private final double weightSeveral;

    Kind(String label, double weightOne, double weightSeveral) {
      this.label = label;
      this.weightOne = weightOne;
      this.weightSeveral = weightSeveral;
    }

    /** Its weight with {@code coordinators} coordinators on {@code store} (0: not done then). */
    double weight(int coordinators, StoreLocation store) {
      if (this == LEADER_FREEZE && store instanceof StoreLocation.SqliteFile) {
        return 0;
      }
      if ((this == STORE_CUT || this == STORE_STALL) && !(store instanceof StoreLocation.Postgres)) {
        return 0; // a SQLite file has no network to take away
      }
      return coordinators == 1 ? weightOne : weightSeveral;
    }

    /** The kinds done with {@code coordinators} coordinators on {@code store}, in report order. */
    static List<Kind> of(int coordinators, StoreLocation store) {
      return java.util.Arrays.stream(values()).filter(k -> k.weight(coordinators, store) > 0).toList();
    }
  }

  @Spec CommandSpec spec;

  @Option(names = "--workers", defaultValue = "3", description = "Worker processes (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int workers;

  @Option(names = "--slots", defaultValue = "2", description = "Slots per worker (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int slots;

  @Option(names = "--duration", defaultValue = "60s", converter = DurationConverter.class, description = "How long faults are injected (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration duration;

  @Option(names = "--dataset", description = "A dataset to run (again and again) instead of generated sleep cases; run with --evaluator sleep, each case sleeping its millis field or 100 ms.", paramLabel = "FILE")
  Path dataset;

  @Option(names = "--cases-per-run", defaultValue = "0", description = "Cases in each generated dataset (default: 100 x workers x slots, about 10 s of work).", paramLabel = "N")
  int casesPerRun;

  @Option(names = "--seed", description = "Seed of every random choice (default: a random seed, printed).", paramLabel = "SEED")
  Long seed;

  @Option(names = "--db", converter = DbOptions.Converter.class, paramLabel = "STORE",
      description = "The store: " + DbOptions.GRAMMAR + "; a SQLite file must not exist yet, a PostgreSQL database must hold no"
          + " run (default: chaos.db in the work directory).")
  StoreLocation db;

  @Mixin DbOptions dbOptions;

  @Option(names = "--coordinators", defaultValue = "1", description = "Coordinators (default: ${DEFAULT-VALUE}): 1 is tally run,"
      + " restarted after its kill -9; 2 or 3 are tally servers on the store, one leading, whose leader is killed and frozen.", paramLabel = "N")
  int coordinators;

  @Option(names = "--work-dir", description = "Where datasets, results, summaries and logs go (default: a new temporary directory).", paramLabel = "DIR")
  Path workDir;

  @Option(names = "--fault-interval", defaultValue = "4s", converter = DurationConverter.class, description = "Mean time between faults (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration faultInterval;

  @Option(names = "--finish-timeout", defaultValue = "120s", converter = DurationConverter.class, description = "How long the run in progress may take to finish once the faults stop (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
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
    /** With several coordinators: the run's name, and the client processes that submit it and fetch its results. */
    final String name;
    Process submit;
    boolean submitted;
    Process fetch;
    boolean fetched;
    long clientRetryAtNanos;

    Round(int number, Path dataset, List<String> caseIds, Path results, Path summary) {
      this.number = number;
      this.dataset = dataset;
      this.caseIds = caseIds;
      this.results = results;
      this.summary = summary;
      this.name = "chaos-" + number;
    }
  }

  private PrintWriter out;
  private SplittableRandom random;
  private long seedUsed;
  private Path dir;
  private StoreLocation location;
  private Stores.Options storeOptions;
  private int port;
  /** With several coordinators: the store, open for reading throughout; the leadership as seen; the faulted leader. */
  private JdbcStore watchStore;
  private final LeaderWatch watch = new LeaderWatch();
  private String serverUrls;
  private long leaderSinceNanos = -1;
  private ChaosFleet.Server faulted;
  private long faultedAtNanos;
  /** On PostgreSQL, what the coordinators reach the database through (the store faults); else null. */
  private StoreRelay relay;
  private int stepDowns;
  private int unpromptedStepDowns;
  /** Step-downs whose closing hung, so that the server halted itself ({@link ServerCommand#STEP_DOWN_HALT}). */
  private int haltedStepDowns;
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
    if (coordinators < 1 || coordinators > MAX_COORDINATORS) {
      throw new ParameterException(cl, "--coordinators must be from 1 to " + MAX_COORDINATORS + ", got " + coordinators);
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
    storeOptions = dbOptions.storeOptions(db != null ? db : new StoreLocation.SqliteFile(Path.of("chaos.db")));
    // A store that is there already, or in a directory that is not, is refused before any directory is made.
    if (db instanceof StoreLocation.SqliteFile f) {
      dev.tally.cli.RunnerCommand.requireDirectoryOf(cl, "--db", f.file());
      requireNoStore(cl, f.file());
    } else if (db == null && workDir != null) {
      requireNoStore(cl, workDir.resolve("chaos.db"));
    }
    boolean made = workDir == null || !Files.exists(workDir);
    dir = workDir != null ? Files.createDirectories(workDir).toAbsolutePath() : Files.createTempDirectory("tally-chaos").toAbsolutePath();
    location = db == null ? new StoreLocation.SqliteFile(dir.resolve("chaos.db"))
        : db instanceof StoreLocation.SqliteFile f ? new StoreLocation.SqliteFile(f.file().toAbsolutePath()) : db;
    try {
      freshStore(cl);
    } catch (RuntimeException e) {
      if (made) { // a database with runs (PostgreSQL): the directory made for nothing goes, if nothing is in it
        try {
          Files.deleteIfExists(dir);
        } catch (IOException notEmpty) {
          // it keeps what is in it
        }
      }
      throw e;
    }
    if (location instanceof StoreLocation.Postgres pg && !"verify-full".equals(pg.sslMode())) {
      relay = StoreRelay.start(pg.host(), pg.port()); // (verify-full would refuse the relay's address as the host)
    }
    List<ChaosFleet.Server> servers = new ArrayList<>();
    String workersConnectTo;
    if (coordinators == 1) {
      port = Ports.freeFixedLoopbackPort();
      workersConnectTo = new HostPort("127.0.0.1", port).toString();
    } else {
      Set<Integer> taken = new HashSet<>();
      for (int i = 1; i <= coordinators; i++) {
        servers.add(new ChaosFleet.Server(i, new HostPort("127.0.0.1", freePort(taken)), freePort(taken)));
      }
      workersConnectTo = String.join(",", servers.stream().map(s -> s.workerAddress.toString()).toList());
      serverUrls = String.join(",", servers.stream().map(s -> s.apiUrl).toList());
    }
    fleet = new ChaosFleet(dir, dir.resolve("logs"), workersConnectTo, workers, slots, servers);
    Thread hook = new Thread(fleet::close, "tally-chaos-stop");
    Runtime.getRuntime().addShutdownHook(hook);

    out.printf("tally chaos: seed %d; %d workers x %d slots; faults for %s, about one per %s; %s%n",
        seedUsed, workers, slots, human(duration), human(faultInterval), coordinators == 1 ? "coordinator on " + workersConnectTo
            : coordinators + " tally servers (workers connect to " + workersConnectTo + "; API " + serverUrls + ")");
    out.printf("tally chaos: work dir %s (store %s, child logs in %s)%n", dir, location.describe(), fleet.logDir());
    out.printf("tally chaos: %s%n", dataset != null
        ? "runs " + dataset + " (" + givenCases.size() + " cases) again and again"
        : "runs generated datasets of " + casesPerRun + " sleep cases (20-200 ms) back to back");
    out.flush();
    boolean finishedInTime;
    try {
      if (coordinators == 1) {
        finishedInTime = loop();
      } else {
        watchStore = Stores.openExisting(location, storeOptions);
        finishedInTime = serverLoop();
      }
    } finally {
      fleet.close();
      if (watchStore != null) {
        watchStore.close();
      }
      if (relay != null) {
        relay.close();
      }
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

  /** At most this many coordinators: three are enough for two to race for a lapsed lease, on a 2-core machine. */
  static final int MAX_COORDINATORS = 3;

  /** A free fixed loopback port not among {@code taken} (which it joins). */
  private static int freePort(Set<Integer> taken) throws IOException {
    int p;
    do {
      p = Ports.freeFixedLoopbackPort();
    } while (!taken.add(p));
    return p;
  }

  /**
   * Checks that the store is fresh (a SQLite file that does not exist; a PostgreSQL database with no run
   * and no leader yet), and brings its schema up to date, so that the coordinators that start together do
   * not all migrate it at once.
   *
   * @throws ParameterException if it is not fresh
   */
  private static void requireNoStore(CommandLine cl, Path file) {
    if (Files.exists(file)) {
      throw new ParameterException(cl, "the store " + file.toAbsolutePath() + " exists already; chaos needs a fresh one (give --db a new"
          + " file, or a new --work-dir)");
    }
  }

  private void freshStore(CommandLine cl) {
    if (location instanceof StoreLocation.SqliteFile f) {
      requireNoStore(cl, f.file());
    }
    try (JdbcStore store = openStore()) {
      if (!store.runs().isEmpty() || !store.leaderEpochs().isEmpty()) {
        throw new ParameterException(cl, "the store " + location.describe() + " has runs or a leader already; chaos needs a fresh one"
            + " (a new database)");
      }
    } catch (dev.tally.core.store.StoreException e) { // as tally run says a store it cannot use: exit 2
      throw new ParameterException(cl, location.describe() + " is not a usable Tally store: " + e.getMessage(), e);
    }
  }

  /** Opens the store, migrating it (as a coordinator would). */
  private JdbcStore openStore() {
    return Stores.open(location, storeOptions);
  }

  /** The {@code --db} arguments a child coordinator is given. */
  private List<String> dbArguments() {
    List<String> args = new ArrayList<>();
    StoreLocation reached = location;
    if (relay != null && location instanceof StoreLocation.Postgres pg) { // through the relay: its faults reach them
      reached = new StoreLocation.Postgres(java.net.InetAddress.getLoopbackAddress().getHostAddress(), relay.port(), pg.database(),
          pg.user(), pg.sslMode());
    }
    args.add("--db=" + reached.describe());
    if (dbOptions.passwordFile() != null) {
      args.add(dev.tally.store.PostgresPassword.FILE_OPTION + "=" + dbOptions.passwordFile().toAbsolutePath());
    }
    return args;
  }

  // ---------------------------------------------------------------------------------------------
  // the loop

  /** Injects faults until the deadline, then lets the run in progress finish; false if it did not in time. */
  private boolean loop() throws IOException, InterruptedException {
    t0 = System.nanoTime();
    deadline = t0 + duration.toNanos();
    forced.addAll(shuffled(Kind.of(coordinators, location)));
    startRound(t0);
    for (ChaosFleet.Worker w : fleet.workers()) {
      startWorker(w, t0, false);
    }
    long nextFault = t0 + Math.max(TimeUnit.SECONDS.toNanos(2), gap());
    boolean faultsOver = false;
    long finishBy = Long.MAX_VALUE;
    while (true) {
      long now = System.nanoTime();
      tendWorkers(now);
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
        event("fault period over: no more faults (%s); waiting up to %s for run %s to finish", restoreWorkers(now),
            human(finishTimeout), round.runId >= 0 ? Long.toString(round.runId) : "of " + round.dataset.getFileName());
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

  // ---------------------------------------------------------------------------------------------
  // the loop with several coordinators

  /**
   * As {@link #loop}, with {@code tally server}s: injects faults until the deadline, then lets the run in
   * progress finish and its results be fetched; false if that did not happen in time.
   */
  private boolean serverLoop() throws IOException, InterruptedException {
    t0 = System.nanoTime();
    deadline = t0 + duration.toNanos();
    forced.addAll(shuffled(Kind.of(coordinators, location)));
    for (ChaosFleet.Server s : fleet.servers()) {
      startServer(s, t0, false);
    }
    for (ChaosFleet.Worker w : fleet.workers()) {
      startWorker(w, t0, false);
    }
    newRound();
    startSubmit(t0);
    long nextFault = t0 + Math.max(TimeUnit.SECONDS.toNanos(2), gap());
    long nextLook = t0;
    boolean faultsOver = false;
    long finishBy = Long.MAX_VALUE;
    while (true) {
      long now = System.nanoTime();
      tendWorkers(now);
      tendServers(now);
      if (now >= nextLook) {
        nextLook = now + TimeUnit.MILLISECONDS.toNanos(LOOK_MILLIS);
        lookAtStore(now);
      }
      tendClients(now);
      // A leader fault near the deadline runs its course first: its frozen leader is continued (and a killed
      // one started again) only once a standby has taken over, or the watch has given up on one.
      boolean takeoverAwaited = faulted != null;
      if (round.fetched && (faultsOver || now >= deadline) && !takeoverAwaited) {
        if (!faultsOver) {
          event("fault period over, as the run in progress finished");
        }
        return true;
      }
      if (!faultsOver && now >= deadline && !takeoverAwaited) {
        faultsOver = true;
        finishBy = now + finishTimeout.toNanos();
        event("fault period over: no more faults (%s; %s); waiting up to %s for run %s to finish", restoreWorkers(now),
            restoreServers(now), human(finishTimeout), round.runId >= 0 ? Long.toString(round.runId) : round.name);
        continue;
      }
      if (faultsOver && now > finishBy) {
        return false;
      }
      if (!faultsOver && now >= nextFault && now < deadline) {
        nextFault = inject(now) ? now + gap() : now + TimeUnit.MILLISECONDS.toNanos(500);
      }
      Thread.sleep(TICK_MILLIS);
    }
  }

  private void startServer(ChaosFleet.Server s, long now, boolean again) throws IOException {
    List<String> args = new ArrayList<>();
    args.add("server");
    args.addAll(dbArguments());
    args.addAll(List.of("--http=" + s.apiAddress, "--listen=" + s.workerAddress, "--workers=0"));
    Process p = fleet.startServer(s, args, now);
    coordinatorStarts++;
    event("start %s (pid %d)%s", s.name, p.pid(), again ? " again" : "");
  }

  /** {@code tally submit} of the current round's dataset to every server, under a key of the round's own. */
  private void startSubmit(long now) throws IOException {
    round.submit = fleet.startClient(List.of("submit", round.dataset.toString(), "--server=" + serverUrls, "--evaluator=sleep",
        "--millis=100", "--name=" + round.name, "--idempotency-key=" + round.name), "client-" + round.name + ".log");
    event("tally submit %s as %s (pid %d)", round.dataset.getFileName(), round.name, round.submit.pid());
  }

  /** {@code tally results} of the current round's run from every server, into its results file. */
  private void startFetch(long now) throws IOException {
    round.fetch = fleet.startClient(List.of("results", Long.toString(round.runId), "--server=" + serverUrls,
        "--out=" + round.results, "--summary=" + round.summary), "client-" + round.name + ".log");
  }

  /**
   * One look at the store: takeovers (from its epochs), and the round's run (created, finished). A store
   * that cannot be read now is looked at again next time.
   */
  private void lookAtStore(long now) throws IOException {
    List<LeaderEpoch> epochs;
    try {
      epochs = watchStore.leaderEpochs();
      for (LeaderWatch.Takeover t : watch.look(epochs)) {
        tookOver(t, now);
      }
      if (leaderSinceNanos < 0 && watch.leader() != null) {
        leaderSinceNanos = now;
        ChaosFleet.Server leader = leadingServer();
        event("%s leads the store under epoch %d", leader != null ? leader.name : watch.leader().address(), watch.leader().epoch());
      }
      if (round.runId < 0 && round.submitted) {
        watchStore.runs().stream().filter(r -> r.name().equals(round.name)).findFirst().ifPresent(r -> round.runId = r.runId());
      }
      if (round.runId >= 0 && !round.finished) {
        RunView run = watchStore.run(round.runId).orElse(null);
        if (run != null && run.ended()) {
          round.finished = true;
          RunCounters c = run.counters();
          event("run %d finished: %d cases, %d redeliveries, %d duplicates, %d fenced; fetching its results", run.runId(), c.total(),
              c.redeliveries(), c.duplicatesSuppressed(), c.staleResultsFenced());
          startFetch(now);
        }
      }
    } catch (dev.tally.core.store.StoreException e) {
      event("(the store cannot be read now: %s)", e.getMessage());
    }
  }

  /** A new epoch leads: notes who, and lets the faulted leader go on (continued, or started again) a little later. */
  private void tookOver(LeaderWatch.Takeover t, long now) {
    leaderSinceNanos = now;
    ChaosFleet.Server leader = leadingServer();
    String who = leader != null ? leader.name : String.valueOf(t.leader());
    if (!t.prompted()) {
      event("TAKEOVER epoch %d: %s leads (unprompted: no fault awaited it)", t.epoch(), who);
      return;
    }
    String then = "";
    if (faulted != null) {
      long delay = uniformMillis(500, 3000);
      if (faulted.frozen) {
        faulted.thawAtNanos = now + TimeUnit.MILLISECONDS.toNanos(delay);
        faulted.mustStepDown = true;
        then = String.format("; %s continued in %.1f s, and must step down", faulted.name, delay / 1000.0);
      } else if (faulted.process == null) {
        faulted.restartAtNanos = now + TimeUnit.MILLISECONDS.toNanos(delay);
        then = String.format("; %s started again in %.1f s", faulted.name, delay / 1000.0);
      }
      faulted = null;
    }
    event("TAKEOVER epoch %d: %s leads, %.2f s after the %s%s", t.epoch(), who, t.tookMillis() / 1000.0, t.cause(), then);
  }

  /**
   * Continues servers whose freeze is over, notes their exits (a step-down of a deposed leader is expected;
   * any other exit is a violation) and starts them again when due.
   */
  private void tendServers(long now) throws IOException, InterruptedException {
    for (ChaosFleet.Server s : fleet.servers()) {
      if (s.frozen && now >= s.thawAtNanos) {
        s.frozen = false;
        s.thawedAtNanos = now;
        if (s.alive()) {
          ChaosFleet.signal(s.process, "CONT");
          event("SIGCONT %s (pid %d)%s", s.name, s.process.pid(), s.mustStepDown ? ": deposed, it must step down" : "");
        }
      }
      if (s.process != null && !s.process.isAlive()) {
        int code = s.process.exitValue();
        long pid = s.process.pid();
        long delay = uniformMillis(500, 2000);
        if (code == Main.EXIT_FAILED && fleet.serverSaid(s, STEPPED_DOWN)) {
          stepDowns++;
          boolean unprompted = !s.wasFrozen;
          unpromptedStepDowns += unprompted ? 1 : 0;
          boolean halted = fleet.serverSaid(s, ServerCommand.STEP_DOWN_HALT);
          haltedStepDowns += halted ? 1 : 0;
          event("%s (pid %d) stepped down and exited with %d%s%s; started again in %.1f s", s.name, pid, code,
              unprompted ? " (unprompted: it was never frozen)" : "",
              halted ? " (its closing hung, so it halted itself; its threads are in its log)" : "", delay / 1000.0);
        } else {
          unexpectedExits++;
          violations.add(s.name + " (pid " + pid + ") exited by itself with code " + code + "; see " + fleet.serverLog(s));
          event("%s (pid %d) exited by itself with code %d; started again in %.1f s", s.name, pid, code, delay / 1000.0);
        }
        s.process = null;
        s.frozen = false;
        s.mustStepDown = false;
        s.restartAtNanos = now + TimeUnit.MILLISECONDS.toNanos(delay);
      }
      if (s.mustStepDown && s.healthy() && now - s.thawedAtNanos > TimeUnit.SECONDS.toNanos(STEP_DOWN_LIMIT_SECONDS)) {
        violations.add(s.name + " (pid " + s.process.pid() + ") was continued after a standby took over, but had not stepped down "
            + STEP_DOWN_LIMIT_SECONDS + " s later; see " + fleet.serverLog(s));
        event("%s (pid %d) has not stepped down %d s after its thaw: its threads dumped to its log (SIGQUIT), then kill -9,"
            + " started again in 1 s", s.name, s.process.pid(), STEP_DOWN_LIMIT_SECONDS);
        fleet.dumpThreads(s);
        ChaosFleet.kill9(s.process);
        s.process = null;
        s.mustStepDown = false;
        s.restartAtNanos = now + TimeUnit.SECONDS.toNanos(1);
      }
      if (s.process == null && now >= s.restartAtNanos) {
        startServer(s, now, true);
      }
    }
    if (faulted != null && now - faultedAtNanos > TimeUnit.SECONDS.toNanos(TAKEOVER_GIVE_UP_SECONDS)) {
      // The watch reports it at the end; go on, so that the run can finish.
      event("no takeover %d s after the fault on %s: it goes on now", TAKEOVER_GIVE_UP_SECONDS, faulted.name);
      faulted.thawAtNanos = now;
      if (faulted.process == null) {
        faulted.restartAtNanos = now;
      }
      faulted = null;
    }
  }

  /** At the end of the fault period: continues every frozen server and starts every missing one now; says how many. */
  private String restoreServers(long now) {
    int frozen = 0;
    int down = 0;
    for (ChaosFleet.Server s : fleet.servers()) {
      if (s.frozen) {
        s.thawAtNanos = now;
        frozen++;
      }
      if (s.process == null) {
        s.restartAtNanos = now;
        down++;
      }
    }
    return frozen + " frozen servers continued, " + down + " servers started";
  }

  /**
   * Watches the round's client processes: a submission or a fetch that exits non-zero is a violation (the
   * client gave up within its retries) and is tried again, with the same key; a fetched round is over, and
   * the next begins if the fault period is not.
   */
  private void tendClients(long now) throws IOException {
    if (round.submit != null && !round.submit.isAlive()) {
      int code = round.submit.exitValue();
      round.submit = null;
      if (code == Main.EXIT_PASSED) {
        round.submitted = true;
      } else {
        violations.add("tally submit of " + round.name + " exited with " + code + "; see " + fleet.logDir().resolve("client-" + round.name + ".log"));
        event("tally submit of %s exited with %d; again in 1 s", round.name, code);
        round.clientRetryAtNanos = now + TimeUnit.SECONDS.toNanos(1);
      }
    }
    if (!round.submitted && round.submit == null && now >= round.clientRetryAtNanos) {
      startSubmit(now);
    }
    if (round.fetch != null && !round.fetch.isAlive()) {
      int code = round.fetch.exitValue();
      round.fetch = null;
      if (code == Main.EXIT_PASSED) {
        round.fetched = true;
        event("results of run %d fetched (tally results exited with %d)", round.runId, code);
        if (now < deadline) {
          newRound();
          startSubmit(now);
        }
      } else {
        violations.add("tally results of run " + round.runId + " exited with " + code + "; see "
            + fleet.logDir().resolve("client-" + round.name + ".log"));
        event("tally results of run %d exited with %d; again in 1 s", round.runId, code);
        round.clientRetryAtNanos = now + TimeUnit.SECONDS.toNanos(1);
      }
    }
    if (round.finished && !round.fetched && round.fetch == null && now >= round.clientRetryAtNanos) {
      startFetch(now);
    }
  }

  /** Continues workers whose freeze is over, and replaces those that are gone (a worker's own exit is a violation). */
  private void tendWorkers(long now) throws IOException, InterruptedException {
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
  }

  /** At the end of the fault period: continues every frozen worker and starts every missing one; says how many. */
  private String restoreWorkers(long now) throws IOException, InterruptedException {
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
    return frozen + " frozen workers continued, " + down + " workers started";
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
    newRound();
    unexpectedCoordinatorExitsInARow = 0;
    startCoordinator(now);
  }

  /** Makes the next round (its dataset written, unless a --dataset is run again) the current one. */
  private void newRound() throws IOException {
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
    args.addAll(List.of("--listen=127.0.0.1:" + port, "--workers=0", "--out=" + round.results,
        "--summary=" + round.summary, "--no-progress"));
    args.addAll(dbArguments());
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
    try (JdbcStore store = openStore()) {
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
      for (Kind k : Kind.of(coordinators, location)) {
        if (eligible(k, now)) {
          possible.add(k);
          total += k.weight(coordinators, location);
        }
      }
      if (possible.isEmpty()) {
        return false;
      }
      double x = random.nextDouble() * total;
      for (Kind k : possible) {
        kind = k;
        x -= k.weight(coordinators, location);
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
      case LEADER_KILL -> {
        ChaosFleet.Server s = leadingServer();
        long pid = s.process.pid();
        long epoch = watch.leader().epoch();
        watch.faultDone(kind.label, System.currentTimeMillis());
        ChaosFleet.kill9(s.process);
        s.process = null;
        s.restartAtNanos = Long.MAX_VALUE; // once a standby has taken over
        faulted = s;
        faultedAtNanos = now;
        event("FAULT kill -9 leader %s (pid %d, epoch %d); started again once a standby has taken over", s.name, pid, epoch);
      }
      case LEADER_FREEZE -> {
        ChaosFleet.Server s = leadingServer();
        long epoch = watch.leader().epoch();
        watch.faultDone(kind.label, System.currentTimeMillis());
        ChaosFleet.signal(s.process, "STOP");
        s.frozen = true;
        s.wasFrozen = true;
        s.thawAtNanos = Long.MAX_VALUE; // once a standby has taken over
        faulted = s;
        faultedAtNanos = now;
        event("FAULT SIGSTOP leader %s (pid %d, epoch %d); continued once a standby has taken over", s.name, s.process.pid(), epoch);
      }
      case STORE_CUT -> {
        long hold = uniformMillis(1000, 4000);
        relay.cut(Duration.ofMillis(hold));
        event("FAULT cut every connection to the database, refusing new ones, for %.1f s", hold / 1000.0);
      }
      case STORE_STALL -> {
        long hold = uniformMillis(1000, 4000);
        relay.stall(Duration.ofMillis(hold));
        event("FAULT stalled the database's network (what is sent held) for %.1f s", hold / 1000.0);
      }
      case COORDINATOR_KILL -> {
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

  private boolean eligible(Kind k, long now) {
    return switch (k) {
      case WORKER_KILL -> !killable(now).isEmpty();
      case WORKER_FREEZE -> !freezable().isEmpty();
      case COORDINATOR_KILL -> coordinator != null && coordinator.isAlive();
      case LEADER_KILL, LEADER_FREEZE -> leaderFaultPossible(now);
      case STORE_CUT, STORE_STALL -> storeFaultPossible(now);
    };
  }

  /**
   * Whether the database's network may be taken away now: through a relay (PostgreSQL), no store fault in
   * effect or just over ({@value #LEADER_SETTLED_SECONDS} s to settle), and no leader fault awaiting its
   * takeover (a takeover is timed from its fault; a database out of reach meanwhile would time the store).
   */
  private boolean storeFaultPossible(long now) {
    return relay != null && !storeUnsettled(now) && faulted == null && !watch.awaitingTakeover();
  }

  /** Whether a store fault is in effect, or ended less than {@value #LEADER_SETTLED_SECONDS} s before {@code now}. */
  private boolean storeUnsettled(long now) {
    return relay != null && relay.faultDone() && now - relay.lastFaultEndsNanos() < TimeUnit.SECONDS.toNanos(LEADER_SETTLED_SECONDS);
  }

  /**
   * Whether the leader may be killed or frozen now: the round's run exists (so that a takeover has a run to
   * resume; a submission still retrying against the servers is not yet one), no leader fault awaits its
   * takeover, the leader (a server of this run, healthy) has led for {@value #LEADER_SETTLED_SECONDS} s,
   * and another server is healthy and stands by to take over.
   */
  private boolean leaderFaultPossible(long now) {
    if (round.runId < 0 || watch.awaitingTakeover() || faulted != null || leaderSinceNanos < 0
        || now - leaderSinceNanos < TimeUnit.SECONDS.toNanos(LEADER_SETTLED_SECONDS) || storeUnsettled(now)) {
      return false;
    }
    ChaosFleet.Server leader = leadingServer();
    if (leader == null || !leader.healthy()) {
      return false;
    }
    for (ChaosFleet.Server s : fleet.servers()) {
      try {
        if (s != leader && s.healthy() && fleet.serverSaid(s, STANDING_BY)) {
          return true;
        }
      } catch (IOException e) {
        // Its log cannot be read now: it does not count as standing by.
      }
    }
    return false;
  }

  /** The server the store's newest epoch names, or null if none of this run's (or none leads yet). */
  private ChaosFleet.Server leadingServer() {
    return serverOf(watch.leaderWorkerAddress());
  }

  /** The server whose worker port is {@code workers} ({@code HOST:PORT}), or null. */
  private ChaosFleet.Server serverOf(String workers) {
    for (ChaosFleet.Server s : fleet.servers()) {
      if (s.workerAddress.toString().equals(workers)) {
        return s;
      }
    }
    return null;
  }

  /** A leader row's address ({@code LeaderAddress} text) as the name of the server there, else as it is. */
  private String serverAt(String address) {
    ChaosFleet.Server s = serverOf(dev.tally.core.lead.LeaderAddress.parse(address).workers());
    return s != null ? s.name : String.valueOf(address);
  }

  /** Whether the coordinators have been settled for {@value #SETTLED_SECONDS} s: a killed worker's leases are then seen to lapse. */
  private boolean coordinatorsSettled(long now) {
    long settled = TimeUnit.SECONDS.toNanos(SETTLED_SECONDS);
    if (coordinators == 1) {
      return coordinator != null && coordinator.isAlive() && now - coordinatorStartedAt >= settled;
    }
    ChaosFleet.Server leader = leadingServer();
    return faulted == null && leader != null && leader.healthy() && leaderSinceNanos >= 0 && now - leaderSinceNanos >= settled;
  }

  private long healthyWorkers() {
    return fleet.workers().stream().filter(ChaosFleet.Worker::healthy).count();
  }

  /** Live workers whose death leaves a healthy worker (any live one with a single-worker fleet). */
  private List<ChaosFleet.Worker> killable(long now) {
    if (now > deadline - TimeUnit.SECONDS.toNanos(QUIET_TAIL_SECONDS) && !coordinatorsSettled(now)) {
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
    try (JdbcStore store = coordinators == 1 ? openStore() : Stores.openExisting(location, storeOptions)) {
      for (Round r : rounds) {
        long runId = r.runId;
        if (runId < 0) {
          List<RunView> runs = store.runs().stream()
              .filter(v -> coordinators == 1
                  ? !runsOfEarlierRounds.contains(v.runId()) && v.spec().dataset().equals(r.dataset.toString())
                  : v.name().equals(r.name)).toList();
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
      if (coordinators > 1) {
        List<LeaderEpoch> epochs = store.leaderEpochs();
        watch.look(epochs);
        violations.addAll(watch.violations(epochs));
      }
    } catch (dev.tally.core.store.StoreException e) {
      violations.add("the store " + location.describe() + " cannot be read to check it: " + e.getMessage());
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
    for (Kind k : Kind.of(coordinators, location)) {
      byKind.append(byKind.length() == 0 ? "" : ", ").append(k.label).append(' ').append(injected.getOrDefault(k, 0));
    }
    out.printf("---- tally chaos: seed %d, %s of faults, %s in all; work dir %s%n", seedUsed, human(duration),
        human(Duration.ofNanos(System.nanoTime() - t0)), dir);
    out.printf("faults injected: %d (%s)%n", faults, byKind);
    out.printf("processes started: %d coordinators, %d workers; unexpected exits: %d%n", coordinatorStarts, workerStarts, unexpectedExits);
    if (coordinators > 1) {
      reportTakeovers();
    }
    out.printf("runs: %d (%d finished)%n", checks.size(), finishedRuns);
    out.printf("cases: %d (%d passed, %d failed, %d errored, %d out of attempts)%n", cases, passed, failed, errored, endedFailed);
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

  /** The takeovers, each with the time it took from its fault, and what the store's epochs showed. */
  private void reportTakeovers() {
    List<LeaderWatch.Takeover> all = watch.takeovers();
    List<Long> took = all.stream().filter(LeaderWatch.Takeover::prompted).map(LeaderWatch.Takeover::tookMillis).sorted().toList();
    StringBuilder byCause = new StringBuilder();
    for (Kind k : List.of(Kind.LEADER_KILL, Kind.LEADER_FREEZE)) {
      byCause.append(k.label).append(' ').append(all.stream().filter(t -> k.label.equals(t.cause())).count()).append(", ");
    }
    byCause.append("unprompted ").append(all.size() - took.size());
    out.printf("takeovers: %d (%s); leader epochs %d to %d; step-downs: %d (%d unprompted, %d halted when closing hung)%n",
        all.size(), byCause, watch.firstEpoch(), watch.leader() == null ? -1 : watch.leader().epoch(), stepDowns,
        unpromptedStepDowns, haltedStepDowns);
    if (!took.isEmpty()) {
      long over = took.stream().filter(ms -> ms > TAKEOVER_TARGET.toMillis()).count();
      out.printf("time to a new leader after a fault: min %.2f s, median %.2f s, max %.2f s; %d over the %s target%n",
          took.get(0) / 1000.0, took.get(took.size() / 2) / 1000.0, took.get(took.size() - 1) / 1000.0, over, human(TAKEOVER_TARGET));
    }
    for (LeaderWatch.Takeover t : all) {
      out.printf("  epoch %d: %s leads, %s%n", t.epoch(), serverAt(t.leader()), t.prompted()
          ? String.format("%.2f s after the %s of %s", t.tookMillis() / 1000.0, t.cause(), serverAt(t.deposedLeader()))
          : "unprompted, after " + serverAt(t.deposedLeader()));
    }
    out.printf("deposed epochs checked for writes after their deposition: %d%n", watch.deposedEpochs());
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

package dev.tally.cli;

import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.coordinator.RunResumption;
import dev.tally.core.DurationText;
import dev.tally.http.ApiServer;
import dev.tally.http.TallyServer;
import dev.tally.worker.LocalWorker;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;
import dev.tally.store.StoreLocation;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import sun.misc.Signal;

/**
 * {@code tally server}: a long-lived coordinator with its HTTP API ({@link TallyServer}), its worker port,
 * and local worker processes. It runs every run submitted to it, many at once, and at start resumes every
 * unfinished run in its store (a server killed with {@code kill -9} and started again on the same store
 * finishes them).
 *
 * <p><b>Stopping.</b> The first SIGTERM, SIGINT or SIGHUP stops it gracefully: it leases nothing more, waits up to
 * {@code --stop-grace} for the results of what its workers hold, stops its local workers (telling them
 * why), closes the API's port, says Goodbye to remote workers, and exits 0, saying so on stderr. What was
 * still leased stays leased for the next server on the store, as after a {@code kill -9}. A second signal
 * stops at once (exit 128 + its number). Signals are caught with {@code sun.misc.Signal}, as {@code tally
 * worker} does, since a shutdown hook cannot choose the exit code.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread; signal handlers only count down.
 */
@Command(
    name = "server",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Run a long-lived coordinator with an HTTP API and a web dashboard, running many submitted runs at once.",
      "Runs are submitted over HTTP. At start it prints one line with the API's, the dashboard's and the worker port's addresses.",
      "Exit code: 0 stopped by SIGTERM, SIGINT or SIGHUP; 1 the store failed; 2 bad usage, or the store or a port cannot be used."
    })
public final class ServerCommand implements java.util.concurrent.Callable<Integer> {
  /** What local workers say when the server stops. */
  static final String SERVER_STOPPING = "stopped by tally server: the server is stopping";

  /** How often the waiting main thread checks that the scheduler is still alive. */
  private static final long WATCH_MILLIS = 500;

  /**
   * How long a server that stepped down may take to close before it halts: a deposed leader's store already
   * refuses its writes, so nothing is lost by cutting its shutdown short, and a standby that never exits
   * would hold its ports and hide the step-down from whoever watches the process.
   */
  static final Duration STEP_DOWN_EXIT_LIMIT = Duration.ofSeconds(10);

  /** What the server says when {@link #STEP_DOWN_EXIT_LIMIT} has passed: it then dumps its threads and halts. */
  public static final String STEP_DOWN_HALT = "tally server: stepped down, but closing did not finish within";

  @Spec CommandSpec spec;

  @Mixin CoordinatorOptions coordinatorOptions;

  @Mixin ApiOptions apiOptions;

  @Option(names = "--db", defaultValue = OutputFiles.DEFAULT_STORE, converter = DbOptions.Converter.class, paramLabel = "STORE",
      description = "The store: " + DbOptions.GRAMMAR + " (default: ${DEFAULT-VALUE}).")
  StoreLocation db;

  @Mixin DbOptions dbOptions;

  @Option(names = "--listen", converter = HostPort.Converter.class, description = "Address for workers to connect to (default: ${DEFAULT-VALUE}, a free loopback port).", paramLabel = "HOST:PORT")
  HostPort listen;

  @Option(names = "--workers", defaultValue = "2", description = "Local worker processes to start (default: ${DEFAULT-VALUE}); 0 waits for remote workers on --listen.", paramLabel = "N")
  int workers;

  @Option(names = "--slots", description = "Cases each local worker runs at once (default: the number of cores).", paramLabel = "N")
  Integer slots;

  @Option(names = "--in-process", defaultValue = "0", description = RunnerCommand.IN_PROCESS_DESCRIPTION, paramLabel = "N")
  int inProcessSlots;

  @Option(names = "--stop-grace", converter = DurationConverter.class,
      description = "On SIGTERM, SIGINT or SIGHUP, how long to wait for the results of cases in flight (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration stopGrace;

  @Override
  public Integer call() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    PrintWriter out = spec.commandLine().getOut();
    if (workers < 0 || workers > RunnerCommand.MAX_LOCAL_WORKERS) {
      throw new ParameterException(spec.commandLine(), "--workers must be from 0 to " + RunnerCommand.MAX_LOCAL_WORKERS + ", got " + workers);
    }
    RunnerCommand.requireInProcessSlots(spec.commandLine(), inProcessSlots);
    if (workers == 0 && inProcessSlots == 0 && (listen == null || listen.port() == 0)) {
      throw new ParameterException(spec.commandLine(), "--workers 0 needs --listen HOST:PORT with a fixed port, so remote workers can find the server (or --in-process K)");
    }
    int workerSlots = WorkerCommand.slots(spec.commandLine(), slots);
    if (stopGrace == null || !spec.commandLine().getParseResult().hasMatchedOption("--stop-grace")) {
      stopGrace = TallyServer.DEFAULT_STOP_GRACE; // the owner's default, which the help shows too
    }
    if (stopGrace.isNegative()) {
      throw new ParameterException(spec.commandLine(), "--stop-grace must not be negative, got " + DurationText.text(stopGrace));
    }
    RunnerCommand.requireWorkerJavaOptions(spec.commandLine(), workers, LocalWorkerProcesses.Jvm.CASES);
    if (db instanceof StoreLocation.SqliteFile f) {
      RunnerCommand.requireDirectoryOf(spec.commandLine(), "--db", f.file());
    }
    CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder());
    ApiServer.Settings api = apiOptions.settings(new HostPort(ApiServer.Settings.DEFAULT_HOST, ApiServer.Settings.DEFAULT_PORT), builder,
        coordinatorOptions.environment, DbOptions.besideStore(db));
    if (listen != null) {
      builder.listen(new InetSocketAddress(listen.host(), listen.port()));
    }
    builder.storeLocation(db, dbOptions.storeOptions(db));

    CountDownLatch stop = new CountDownLatch(1);
    AtomicReference<String> stopSignal = new AtomicReference<>();
    AtomicInteger signals = new AtomicInteger();
    // HUP too: a server started from a terminal that closes stops as gracefully as on TERM, not by the
    // JVM's default hangup handling, which skips the grace for the cases in flight.
    for (String name : List.of("TERM", "INT", "HUP")) {
      Signal.handle(new Signal(name), s -> {
        if (signals.incrementAndGet() > 1) {
          Runtime.getRuntime().halt(128 + s.getNumber()); // a second signal: at once
        }
        stopSignal.set("SIG" + s.getName());
        stop.countDown();
      });
    }

    TallyServer server;
    try {
      server = TallyServer.start(builder, api);
    } catch (CoordinatorBuilder.StartException | ApiServer.StartException e) {
      err.println("tally server: " + e.getMessage());
      // A database out of reach for the whole patience is the machine's trouble; the rest is the command's.
      return e instanceof CoordinatorBuilder.StartException s && s.reason() == CoordinatorBuilder.StartException.Reason.STORE_UNREACHABLE
          ? Main.EXIT_FAILED : Main.EXIT_USAGE;
    } catch (dev.tally.core.store.StaleEpochException e) {
      // It led, and another coordinator took the lead before its start was over (a start slowed past the
      // lease on a loaded machine): the same step-down as later, said the same way.
      err.println("tally server: stepped down while starting: " + e.getMessage() + "; exiting so that nothing of"
          + " the old epoch goes on (started again, it stands by)");
      return Main.EXIT_FAILED;
    }
    Coordinator coordinator = server.coordinator();
    HostPort connectTo = connectTo(coordinator);
    // Local workers start once this server leads: a standby's worker port is not bound yet (with port 0 it
    // has no number), so workers started now could never reach it.
    LocalWorkerProcesses local = null;
    LocalWorker inProcess = null;
    if (coordinator.leading()) {
      try {
        local = startLocalWorkers(coordinator, workerSlots, builder);
      } catch (IOException e) {
        server.close();
        err.println("tally server: cannot start the local workers: " + e.getMessage());
        return Main.EXIT_FAILED;
      }
      inProcess = RunnerCommand.startInProcess(inProcessSlots, coordinator);
    }
    int reported = reportResumed(server, 0, err);
    String url = server.api().url();
    out.printf("tally server: API %s%s (OpenAPI %s%s, metrics %s%s); dashboard %s; workers connect to %s; %s; store %s%n",
        url, ApiServer.BASE, url, ApiServer.OPENAPI_PATH, url, ApiServer.METRICS_PATH, server.api().dashboardUrl(),
        connectTo + (coordinator.leading() ? "" : " once it leads"), fleet(workerSlots), db.describe());
    out.flush();

    boolean leading = coordinator.leading();
    if (leading) {
      announceLead(coordinator, err);
      err.flush();
    } else {
      err.println("tally server: standing by: " + leaderText(coordinator) + "; serving reads, and taking the lead"
          + " when its lease lapses");
      err.flush();
    }
    haltIfStepDownHangs(coordinator, err);
    int exit = Main.EXIT_PASSED;
    boolean steppedDown = false;
    while (!stop.await(WATCH_MILLIS, TimeUnit.MILLISECONDS)) {
      if (coordinator.steppedDown().isPresent()) {
        err.println("tally server: stepped down: " + coordinator.steppedDown().get() + "; exiting so that nothing of"
            + " the old epoch goes on (started again, it stands by)");
        exit = Main.EXIT_FAILED;
        steppedDown = true;
        break;
      }
      if (!leading && coordinator.leading()) {
        leading = true;
        announceLead(coordinator, err);
        err.flush();
        if (local == null) {
          try {
            local = startLocalWorkers(coordinator, workerSlots, builder);
          } catch (IOException e) {
            err.println("tally server: cannot start the local workers: " + e.getMessage());
            exit = Main.EXIT_FAILED;
            break;
          }
        }
        if (inProcess == null) {
          inProcess = RunnerCommand.startInProcess(inProcessSlots, coordinator);
        }
      }
      // Resumed on taking the lead, just after leading() turns true: said as they come.
      int now = reportResumed(server, reported, err);
      if (now > reported) {
        reported = now;
        err.flush();
      }
      if (coordinator.failure() != null) {
        err.println("tally server: the scheduler stopped: " + coordinator.failure().getMessage()
            + "; what is recorded stays in " + db.describe() + ", and the next tally server on it resumes the unfinished runs");
        exit = Main.EXIT_FAILED;
        break;
      }
    }
    String why = stopSignal.get();
    if (why != null) {
      int inFlight = coordinator.inFlight();
      err.printf("tally server: %s: stopping; leasing nothing more and waiting up to %s for %s in flight%n", why,
          DurationText.text(stopGrace), Words.count(inFlight, "case"));
      err.flush();
    }
    server.stopLeasing();
    int left = steppedDown ? coordinator.inFlight() : server.awaitInFlight(stopGrace); // deposed: nothing more is recorded
    if (!steppedDown && coordinator.steppedDown().isPresent()) {
      // Stepped down after the signal, while it waited for what was in flight (its store unreachable, or
      // another server took the lead): nothing more is recorded, and its store may be why.
      err.println("tally server: stepped down while stopping: " + coordinator.steppedDown().get());
      exit = Main.EXIT_FAILED;
      steppedDown = true;
    }
    if (local != null) {
      local.stop(SERVER_STOPPING);
    }
    if (inProcess != null) {
      inProcess.close(SERVER_STOPPING); // a case still running after the grace is stopped; the next server runs it again
    }
    long unfinished = -1; // unknown: the store could not say
    if (!steppedDown) {
      // Not after a step-down: its store may be the reason (unreachable, a read waits 10 s for a connection),
      // and a read that outlasts the step-down's exit limit halts the server with a thread dump.
      try {
        unfinished = coordinator.store().runs().stream().filter(r -> !r.ended()).count();
      } catch (dev.tally.core.store.StoreException e) {
        // said as "unfinished runs" below
      }
    }
    server.close();
    err.printf("tally server: stopped%s; %s%n",
        left == 0 ? ", every result in flight recorded" : " with " + Words.count(left, "case") + " still leased (the next server takes their results from the workers, or runs them again)",
        unfinishedText(unfinished, leading));
    return exit;
  }

  /**
   * What a stopping server leaves in its store: {@code unfinished} runs, or -1 if the store could not say. A
   * standby that never led leaves them to the server that leads, which goes on with them.
   */
  private String unfinishedText(long unfinished, boolean led) {
    if (unfinished == 0) {
      return "no run is unfinished in " + db.describe();
    }
    if (!led) {
      return (unfinished < 0 ? "the unfinished runs" : Words.count(unfinished, "unfinished run")) + " in " + db.describe()
          + " are the leading server's, which goes on with them";
    }
    if (unfinished == 1) {
      return "1 unfinished run stays in " + db.describe() + ", and the next tally server on it resumes it";
    }
    return (unfinished < 0 ? "unfinished runs" : Words.count(unfinished, "unfinished run")) + " stay in " + db.describe()
        + ", and the next tally server on it resumes them";
  }

  /**
   * Starts a daemon thread that watches for a step-down and, if the process has not exited {@link
   * #STEP_DOWN_EXIT_LIMIT} after it, says so on {@code err} with the stacks of every thread and halts with
   * {@link Main#EXIT_FAILED}. It watches on a thread of its own, so that it fires even if the main thread is
   * the one stuck.
   */
  private static void haltIfStepDownHangs(Coordinator coordinator, PrintWriter err) {
    Thread watch = new Thread(() -> {
      try {
        while (coordinator.steppedDown().isEmpty()) {
          TimeUnit.MILLISECONDS.sleep(WATCH_MILLIS);
        }
        TimeUnit.NANOSECONDS.sleep(STEP_DOWN_EXIT_LIMIT.toNanos());
      } catch (InterruptedException e) {
        return;
      }
      synchronized (err) {
        err.println(STEP_DOWN_HALT + " " + DurationText.text(STEP_DOWN_EXIT_LIMIT) + " (" + coordinator.steppedDown().get()
            + "); exiting at once. Its threads:");
        err.println(ThreadDump.text());
        err.flush();
      }
      Runtime.getRuntime().halt(Main.EXIT_FAILED);
    }, "tally-step-down-watch");
    watch.setDaemon(true);
    watch.start();
  }

  /** Where workers on this machine reach the coordinator's worker port: its address, loopback if it is a wildcard. */
  private static HostPort connectTo(Coordinator coordinator) {
    return new HostPort(RunnerCommand.loopbackFor(coordinator.address().getHostString()), coordinator.port());
  }

  /** Starts the local workers, pointed at the worker port this server has bound (it leads). */
  private LocalWorkerProcesses startLocalWorkers(Coordinator coordinator, int workerSlots, CoordinatorBuilder builder)
      throws IOException {
    return LocalWorkerProcesses.start(workers, workerSlots, connectTo(coordinator), logDir(DbOptions.besideStore(db)), builder.workerToken().orElse(null));
  }

  /**
   * Says each run resumed since the first {@code from} were said.
   *
   * @return how many have been said now
   */
  private static int reportResumed(TallyServer server, int from, PrintWriter err) {
    List<RunResumption.TakeOver> resumed = server.resumed();
    for (int i = from; i < resumed.size(); i++) {
      RunnerCommand.reportTakeOver(resumed.get(i), err);
    }
    return Math.max(from, resumed.size());
  }

  /** The line that says this server leads its store: at start, or when a standby takes over. */
  private static void announceLead(Coordinator coordinator, PrintWriter err) {
    err.println("tally server: leading the store under epoch " + coordinator.epoch() + "; workers connect to "
        + connectTo(coordinator));
  }

  /** Who leads the store, as a standby last saw it. */
  private static String leaderText(Coordinator coordinator) {
    dev.tally.core.lead.LeaderRow row = coordinator.leader();
    return "epoch " + row.epoch() + " leads the store at " + row.leaderAddress();
  }

  private String fleet(int workerSlots) {
    return RunnerCommand.localFleet(workers, workerSlots, inProcessSlots);
  }

  /** Beside the store, named after it: {@code tally.db-logs/server}. */
  private static Path logDir(Path dbFile) {
    Path db = dbFile.toAbsolutePath();
    return db.resolveSibling(db.getFileName() + "-logs").resolve("server");
  }
}

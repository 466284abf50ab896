package dev.tally.cli;

import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunView;
import java.util.List;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.store.SqliteStore;
import dev.tally.worker.LocalWorker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * What {@code tally run} and {@code tally resume} share: an embedded coordinator on a SQLite file, local
 * worker processes (and remote ones on {@code --listen}), progress, and the results and summary files.
 * A subclass says which run to execute.
 */
public abstract class RunnerCommand implements Callable<Integer> {
  /** After this long with no worker connected, and as often again while it lasts, the run says so. */
  static final Duration NO_WORKERS_WARNING = Duration.ofSeconds(10);

  /** The most local worker processes: each is a JVM of its own (up to 512 MiB of heap). */
  public static final int MAX_LOCAL_WORKERS = 64;

  /** The most slots per worker; the worker port refuses more (see WorkerServer). */
  public static final int MAX_SLOTS = 1024;

  @Spec CommandSpec spec;

  @Mixin CoordinatorOptions coordinatorOptions;

  @Option(names = "--workers", defaultValue = "2", description = "Local worker processes to start (default: ${DEFAULT-VALUE}); 0 waits for remote workers on --listen.")
  int workers;

  @Option(names = "--in-process", defaultValue = "0", description = "Slots of a worker inside this process, beside (or instead of) the worker processes (default: ${DEFAULT-VALUE}).")
  int inProcessSlots;

  @Option(names = "--slots", description = "Cases each local worker runs at once (default: the number of cores).")
  Integer slots;

  @Option(names = "--db", description = "SQLite store file (default: tally.db beside the dataset).")
  Path db;

  @Option(names = "--out", defaultValue = "results.jsonl", description = "Results file, one line per case in dataset order (default: ${DEFAULT-VALUE}).")
  Path out;

  @Option(names = "--summary", defaultValue = "summary.json", description = "Summary file (default: ${DEFAULT-VALUE}).")
  Path summary;

  @Option(names = "--listen", defaultValue = "127.0.0.1:0", converter = HostPort.Converter.class, description = "Address for workers to connect to (default: ${DEFAULT-VALUE}, a free loopback port).")
  HostPort listen;

  @Option(names = "--no-progress", description = "Do not draw the progress bar (it is off anyway when stderr is not a terminal).")
  boolean noProgress;

  @Override
  public Integer call() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    if (workers < 0 || workers > MAX_LOCAL_WORKERS) {
      throw new ParameterException(spec.commandLine(), "--workers must be from 0 to " + MAX_LOCAL_WORKERS + ", got " + workers);
    }
    if (inProcessSlots < 0) {
      throw new ParameterException(spec.commandLine(), "--in-process must be >= 0, got " + inProcessSlots);
    }
    if (workers == 0 && inProcessSlots == 0 && listen.port() == 0) {
      throw new ParameterException(spec.commandLine(), "--workers 0 needs --listen HOST:PORT with a fixed port, so remote workers can find the coordinator (or --in-process K)");
    }
    int workerSlots = slots == null ? Runtime.getRuntime().availableProcessors() : slots;
    if (workerSlots < 1 || workerSlots > MAX_SLOTS) {
      throw new ParameterException(spec.commandLine(), "--slots must be from 1 to " + MAX_SLOTS + ", got " + workerSlots);
    }
    if (inProcessSlots > MAX_SLOTS) {
      throw new ParameterException(spec.commandLine(), "--in-process must be at most " + MAX_SLOTS + ", got " + inProcessSlots);
    }
    WorkerServer.Settings serverSettings = coordinatorOptions.validatedServerSettings(spec.commandLine());
    if (!prepare(err)) {
      return Main.EXIT_USAGE;
    }

    Path dbFile = dbFile();
    CoordinatorLock lock;
    try {
      lock = CoordinatorLock.tryAcquire(dbFile);
    } catch (IOException e) {
      err.println("tally: cannot take the coordinator lock " + CoordinatorLock.lockFile(dbFile) + ": " + e.getMessage());
      return Main.EXIT_USAGE;
    }
    if (lock == null) {
      err.println("tally: another coordinator (tally run or tally resume) is running on " + dbFile
          + "; wait for it to finish or stop it first (it holds " + CoordinatorLock.lockFile(dbFile) + ")");
      return Main.EXIT_USAGE;
    }
    try (lock) {
      return runLocked(dbFile, serverSettings, workerSlots, err);
    }
  }

  /** The run, once this process holds the store's coordinator lock. */
  private int runLocked(Path dbFile, WorkerServer.Settings serverSettings, int workerSlots, PrintWriter err) throws Exception {
    long started = System.nanoTime();
    Store store;
    try {
      store = SqliteStore.open(dbFile);
    } catch (StoreException e) {
      err.println("tally: " + dbFile + " is not a usable Tally store: " + e.getMessage());
      return Main.EXIT_USAGE;
    }
    // The worker port is bound before the run is written: a bad --listen leaves no half-started run.
    Coordinator coordinator;
    try {
      coordinator = Coordinator.start(store, new InetSocketAddress(listen.host(), listen.port()), serverSettings,
          coordinatorOptions.redelivery(), coordinatorOptions.schedulerSettings());
    } catch (UncheckedIOException | IllegalArgumentException e) {
      store.close();
      err.println("tally: cannot listen for workers on " + listen + ": " + e.getMessage());
      return Main.EXIT_USAGE;
    }
    try (store;
        coordinator) {
      long runId = chooseRun(store, err);
      if (runId < 0) {
        return Main.EXIT_USAGE;
      }
      HostPort connectTo = new HostPort(loopbackFor(listen.host()), coordinator.port());
      try (LocalWorkerProcesses local = LocalWorkerProcesses.start(workers, workerSlots, connectTo, logDir(dbFile, runId));
          InProcessWorker inProcess = new InProcessWorker(inProcessSlots > 0 ? LocalWorker.start("in-process", inProcessSlots, inProcessSlots, coordinator.scheduler()) : null)) {
        err.printf(
            "tally: run %d: %d cases, %d local workers x %d slots%s, workers connect to %s, store %s%n",
            runId, store.run(runId).orElseThrow().counters().total(), workers, workerSlots, inProcessSlots > 0 ? " + " + inProcessSlots + " in-process slots" : "",
            new HostPort(listen.host(), coordinator.port()), dbFile);
        Thread hook = new Thread(() -> {
          err.printf("tally: stopped before run %d finished; what is recorded stays in %s. The same command, or"
              + " tally resume %d --db %s, finishes it without running a recorded case again.%n", runId, dbFile, runId, dbFile);
          err.flush();
          local.close();
        }, "tally-stop-workers");
        Runtime.getRuntime().addShutdownHook(hook);
        RunCounters counters = await(coordinator, runId, (int) store.run(runId).orElseThrow().counters().total(), err);
        long wallMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        RunReport.writeResults(store, runId, out);
        RunReport.writeSummary(runId, counters, wallMillis, summary);
        RunReport.printTable(spec.commandLine().getOut(), runId, counters, wallMillis);
        err.printf("tally: results in %s, summary in %s%n", out, summary);
        Runtime.getRuntime().removeShutdownHook(hook);
        return counters.passed() == counters.total() ? Main.EXIT_PASSED : Main.EXIT_FAILED;
      }
    } catch (IOException e) {
      err.println("tally: " + e.getMessage());
      return Main.EXIT_FAILED;
    }
  }

  /**
   * Reads and checks this command's input before anything is opened.
   *
   * @return false if the input is bad (the reason is printed on {@code err})
   */
  abstract boolean prepare(PrintWriter err);

  /** The store file. */
  abstract Path dbFile();

  /**
   * The run to execute, after the store is open and the worker port bound.
   *
   * @return the run's id, or -1 if there is no such run (the reason is printed on {@code err})
   */
  abstract long chooseRun(Store store, PrintWriter err);

  /** Takes over an unfinished run: the cases already recorded are not run again. */
  long resume(Store store, RunView run, PrintWriter err) {
    RunCounters c = run.counters();
    err.printf("tally: resuming run %d: %d of %d cases already ended%n", run.runId(), c.recorded() + c.jobsFailed(), c.total());
    if (listen.port() == 0) {
      // No worker of the previous coordinator can come back: its local workers died with it, and no
      // remote worker knew its random port. Its leases are released now instead of after they expire.
      int released = store.releaseLeases(run.runId(), System.currentTimeMillis(), coordinatorOptions.redelivery());
      if (released > 0) {
        err.printf("tally: %d cases leased by the previous coordinator's workers go back to the queue%n", released);
      }
    }
    return run.runId();
  }

  /** Where local workers reach a coordinator listening on {@code host}: loopback for a wildcard address. */
  static String loopbackFor(String host) {
    switch (host) {
      case "0.0.0.0":
        return "127.0.0.1";
      case "::":
      case "0:0:0:0:0:0:0:0":
        return "::1";
      default:
        return host;
    }
  }

  private RunCounters await(Coordinator coordinator, long runId, int total, PrintWriter err) throws InterruptedException, IOException {
    CompletableFuture<RunCounters> done = coordinator.submit(runId);
    long noWorkersSinceNanos = System.nanoTime();
    long lastWarningNanos = 0;
    boolean drawBar = !noProgress && System.console() != null;
    ProgressBar bar =
        drawBar
            ? new ProgressBarBuilder().setTaskName("run " + runId).setInitialMax(total).setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(200).showSpeed().setConsumer(new me.tongfei.progressbar.ConsoleProgressBarConsumer(System.err)).build()
            : null;
    try {
      while (true) {
        try {
          RunCounters c = done.get(200, TimeUnit.MILLISECONDS);
          update(bar, c);
          return c;
        } catch (TimeoutException e) {
          update(bar, coordinator.progress(runId));
          long now = System.nanoTime();
          if (coordinator.connectedWorkers() > 0) {
            noWorkersSinceNanos = now;
          } else if (now - noWorkersSinceNanos > NO_WORKERS_WARNING.toNanos() && now - lastWarningNanos > NO_WORKERS_WARNING.toNanos()) {
            lastWarningNanos = now;
            err.printf("tally: no worker has been connected for %d s; the run waits for workers (start one with: tally worker --coordinator %s)%n",
                TimeUnit.NANOSECONDS.toSeconds(now - noWorkersSinceNanos), new HostPort(loopbackFor(listen.host()), coordinator.port()));
          }
        } catch (ExecutionException e) {
          throw new IOException("run " + runId + " could not finish: " + e.getCause().getMessage(), e.getCause());
        }
      }
    } finally {
      if (bar != null) {
        bar.close();
      }
    }
  }

  private static void update(ProgressBar bar, RunCounters c) {
    if (bar == null || c == null) {
      return;
    }
    bar.stepTo(c.recorded() + c.jobsFailed());
    bar.setExtraMessage(" redeliveries " + c.redeliveries());
  }

  /** Closes the in-process worker (if any) before the coordinator, so its slots stop first. */
  private record InProcessWorker(LocalWorker worker) implements AutoCloseable {
    @Override
    public void close() {
      if (worker != null) {
        worker.close("run over");
      }
    }
  }

  /** Beside the store and named after it ({@code tally.db-logs/run-3}): run ids are unique per store. */
  private static Path logDir(Path dbFile, long runId) {
    Path db = dbFile.toAbsolutePath();
    return db.resolveSibling(db.getFileName() + "-logs").resolve("run-" + runId);
  }
}

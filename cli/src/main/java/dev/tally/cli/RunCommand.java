package dev.tally.cli;

import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.EvaluatorSpec;
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
 * {@code tally run DATASET}: submits a dataset to an embedded coordinator on a SQLite file, starts local
 * worker processes (and accepts remote ones on {@code --listen}), shows progress, and writes the results
 * and the summary.
 */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    description = {
      "Run every case of a JSON Lines dataset on local (and remote) workers.",
      "Exit code: 0 every case passed; 1 a case failed or errored; 2 bad usage or bad input."
    })
final class RunCommand implements Callable<Integer> {
  /** After this long with no worker connected, and as often again while it lasts, the run says so. */
  static final Duration NO_WORKERS_WARNING = Duration.ofSeconds(10);

  /** The most local worker processes: each is a JVM of its own (up to 512 MiB of heap). */
  static final int MAX_LOCAL_WORKERS = 64;

  /** The most slots per worker; the worker port refuses more (see WorkerServer). */
  static final int MAX_SLOTS = 1024;

  /** Placeholders in an exec template: {field}. */
  static final Pattern PLACEHOLDER = Pattern.compile("\\{([^{}\\s]+)}");

  @Spec CommandSpec spec;

  @Parameters(index = "0", paramLabel = "DATASET", description = "JSON Lines file: one case per line, each an object with a unique string \"id\".")
  Path dataset;

  @Mixin EvaluatorOptions evaluatorOptions;
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

  @Option(names = "--max-attempts", defaultValue = "" + RunSpec.DEFAULT_MAX_ATTEMPTS, description = "Attempts per case before it ends failed (default: ${DEFAULT-VALUE}).")
  int maxAttempts;

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
    if (maxAttempts < 1) {
      throw new ParameterException(spec.commandLine(), "--max-attempts must be >= 1, got " + maxAttempts);
    }
    int workerSlots = slots == null ? Runtime.getRuntime().availableProcessors() : slots;
    if (workerSlots < 1 || workerSlots > MAX_SLOTS) {
      throw new ParameterException(spec.commandLine(), "--slots must be from 1 to " + MAX_SLOTS + ", got " + workerSlots);
    }
    if (inProcessSlots > MAX_SLOTS) {
      throw new ParameterException(spec.commandLine(), "--in-process must be at most " + MAX_SLOTS + ", got " + inProcessSlots);
    }
    EvaluatorSpec evaluator = evaluatorOptions.toSpec(spec.commandLine());
    WorkerServer.Settings serverSettings = coordinatorOptions.validatedServerSettings(spec.commandLine());

    Dataset cases;
    try {
      cases = Dataset.read(dataset);
      String template = evaluator.options().get("cmd");
      if (template != null) {
        cases.requireFields(placeholders(template), "--cmd");
      }
    } catch (DatasetException e) {
      err.println("tally: " + e.getMessage());
      return Main.EXIT_USAGE;
    }

    Path dbFile = db != null ? db : dataset.toAbsolutePath().getParent().resolve("tally.db");
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
          coordinatorOptions.retryPolicy(), coordinatorOptions.schedulerSettings());
    } catch (UncheckedIOException | IllegalArgumentException e) {
      store.close();
      err.println("tally: cannot listen for workers on " + listen + ": " + e.getMessage());
      return Main.EXIT_USAGE;
    }
    try (store;
        coordinator) {
      long runId = store.createRun(new RunSpec(dataset.toAbsolutePath().toString(), evaluator, maxAttempts), cases.cases());
      HostPort connectTo = new HostPort(loopbackFor(listen.host()), coordinator.port());
      try (LocalWorkerProcesses local = LocalWorkerProcesses.start(workers, workerSlots, connectTo, logDir(dbFile, runId));
          InProcessWorker inProcess = new InProcessWorker(inProcessSlots > 0 ? LocalWorker.start("in-process", inProcessSlots, inProcessSlots, coordinator.scheduler()) : null)) {
        err.printf(
            "tally: run %d: %d cases, %d local workers x %d slots%s, workers connect to %s, store %s%n",
            runId, cases.cases().size(), workers, workerSlots, inProcessSlots > 0 ? " + " + inProcessSlots + " in-process slots" : "",
            new HostPort(listen.host(), coordinator.port()), dbFile);
        Thread hook = new Thread(local::close, "tally-stop-workers");
        Runtime.getRuntime().addShutdownHook(hook);
        RunCounters counters = await(coordinator, runId, cases.cases().size(), err);
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

  private static Path logDir(Path dbFile, long runId) {
    return dbFile.toAbsolutePath().getParent().resolve("tally-logs").resolve("run-" + runId);
  }

  /** The field names an exec template's {@code {field}} placeholders use, in order of appearance. */
  static Set<String> placeholders(String template) {
    Set<String> fields = new LinkedHashSet<>();
    Matcher m = PLACEHOLDER.matcher(template);
    while (m.find()) {
      fields.add(m.group(1));
    }
    return fields;
  }

  /** The options that choose and configure the evaluator; shared by run and bench. */
  static final class EvaluatorOptions {
    enum Kind {
      exec,
      sleep,
      noop
    }

    @Option(names = "--evaluator", defaultValue = "exec", description = "exec, sleep or noop (default: ${DEFAULT-VALUE}).")
    Kind evaluator;

    @Option(names = "--cmd", description = "exec: the command per case; {field} is replaced by the case's field, as one argument. The case JSON is on stdin.")
    String cmd;

    @Option(names = "--millis", description = "sleep: milliseconds per case when the case has no \"millis\" field (default 0).")
    Long millis;

    @Option(names = "--case-timeout", defaultValue = "10m", converter = DurationConverter.class, description = "Time budget of one attempt; past it the case is killed and retried elsewhere (default: ${DEFAULT-VALUE}).")
    Duration caseTimeout;

    EvaluatorSpec toSpec(picocli.CommandLine cl) {
      Map<String, String> options = new LinkedHashMap<>();
      switch (evaluator) {
        case exec:
          if (cmd == null || cmd.isBlank()) {
            throw new ParameterException(cl, "--evaluator exec needs --cmd TEMPLATE, e.g. --cmd 'python3 -m test {id}'");
          }
          options.put("cmd", cmd);
          break;
        case sleep:
          if (millis != null) {
            if (millis < 0) { // checked here too, though only sleep uses it
              throw new ParameterException(cl, "--millis must be >= 0, got " + millis);
            }
            options.put("millis", Long.toString(millis));
          }
          break;
        default:
          break;
      }
      if (millis != null && evaluator != Kind.sleep) {
        throw new ParameterException(cl, "--millis is only for --evaluator sleep");
      }
      if (cmd != null && evaluator != Kind.exec) {
        throw new ParameterException(cl, "--cmd is only for --evaluator exec");
      }
      if (caseTimeout.isZero() || caseTimeout.isNegative()) {
        throw new ParameterException(cl, "--case-timeout must be positive, got " + caseTimeout);
      }
      return new EvaluatorSpec(evaluator.name(), options, caseTimeout);
    }
  }
}

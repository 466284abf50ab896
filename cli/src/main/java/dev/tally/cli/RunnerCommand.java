package dev.tally.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.coordinator.CoordinatorLock;
import dev.tally.coordinator.RunResumption;
import dev.tally.coordinator.report.HtmlReport;
import dev.tally.coordinator.report.ResultLines;
import dev.tally.coordinator.report.RunReport;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.security.Secret;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.StoreException;
import dev.tally.http.ApiServer;
import dev.tally.http.SchedulerMetrics;
import dev.tally.worker.LocalWorker;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarConsumer;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * What {@code tally run} and {@code tally resume} share: an embedded coordinator on a SQLite file
 * (assembled by {@link CoordinatorBuilder}, which holds the defaults), local worker processes (and remote
 * ones on {@code --listen}), progress, and the results and summary files. A subclass says which store
 * and which run.
 *
 * <p>A store that fails (a full disk, most often) stops the run with one line that says what SQLite said
 * and how to finish the run later ({@link StoreFailure}); what is recorded stays recorded.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
public abstract class RunnerCommand implements Callable<Integer> {
  /** After this long with no worker connected, and as often again while it lasts, the run says so. */
  static final Duration NO_WORKERS_WARNING = Duration.ofSeconds(10);

  /** What local workers say when the run is over: in their log, their Goodbye and {@code tally status}. */
  static final String RUN_OVER = "stopped by tally run: the run is over";

  /** What local workers say when tally run is stopped (a signal) before the run is over. */
  static final String STOPPED_BEFORE_THE_END = "stopped by tally run, which was stopped before the run finished";

  /** The most local worker processes: each is a JVM of its own (up to 512 MiB of heap). */
  public static final int MAX_LOCAL_WORKERS = 64;

  @Spec CommandSpec spec;

  @Mixin CoordinatorOptions coordinatorOptions;

  @Mixin ApiOptions apiOptions;

  @Mixin DbOptions dbOptions;

  @Mixin ReportOptions reports;

  @Option(names = "--workers", defaultValue = "2", description = "Local worker processes to start (default: ${DEFAULT-VALUE}); 0 waits for remote workers on --listen.", paramLabel = "N")
  int workers;

  /** {@code --in-process}'s help, for every command that has the option ({@code tally run}, {@code resume}, {@code server}). */
  static final String IN_PROCESS_DESCRIPTION = "Slots of a worker inside this process, beside (or instead of) the worker processes (default: ${DEFAULT-VALUE}).";

  @Option(names = "--in-process", defaultValue = "0", description = IN_PROCESS_DESCRIPTION, paramLabel = "N")
  int inProcessSlots;

  @Option(names = "--slots", description = "Cases each local worker runs at once (default: the number of cores).", paramLabel = "N")
  Integer slots;

  @Option(names = "--out", defaultValue = OutputFiles.DEFAULT_RESULTS, description = "Results file, one line per case in dataset order (default: ${DEFAULT-VALUE}).", paramLabel = "FILE")
  Path out;

  @Option(names = "--summary", defaultValue = OutputFiles.DEFAULT_SUMMARY, description = "Summary file (default: ${DEFAULT-VALUE}).", paramLabel = "FILE")
  Path summary;

  @Option(names = "--listen", converter = HostPort.Converter.class, description = "Address for workers to connect to (default: ${DEFAULT-VALUE}, a free loopback port).", paramLabel = "HOST:PORT")
  HostPort listen;

  @Option(names = "--no-progress", description = "Do not draw the progress bar (it is off anyway when stderr is not a terminal).")
  boolean noProgress;

  /** How the store is opened, checked against {@code --db} before anything else is done. */
  private Stores.Options storeOptions;

  /** How the store is opened ({@code --db-password-file}, checked against {@code --db}); set before {@link #prepare}. */
  final Stores.Options storeOptions() {
    return storeOptions;
  }

  /** The worker token the coordinator requires (its local workers get it in their environment), or null. */
  private Secret workerToken;

  @Override
  public Integer call() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    if (workers < 0 || workers > MAX_LOCAL_WORKERS) {
      throw new ParameterException(spec.commandLine(), "--workers must be from 0 to " + MAX_LOCAL_WORKERS + ", got " + workers);
    }
    requireInProcessSlots(spec.commandLine(), inProcessSlots);
    if (workers == 0 && inProcessSlots == 0 && (listen == null || listen.port() == 0)) {
      throw new ParameterException(spec.commandLine(), "--workers 0 needs --listen HOST:PORT with a fixed port, so remote workers can find the coordinator (or --in-process K)");
    }
    int workerSlots = WorkerCommand.slots(spec.commandLine(), slots);
    requireWorkerJavaOptions(spec.commandLine(), workers, LocalWorkerProcesses.Jvm.CASES);
    storeOptions = dbOptions.storeOptions(db());
    CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder());
    apiOptions.requireHttpForApiOptions();
    ApiServer.Settings api = apiOptions.given() ? apiOptions.settings(apiOptions.http, builder, coordinatorOptions.environment, dbFile()) : null;
    SchedulerMetrics live = api == null ? null : SchedulerMetrics.observing(builder);
    workerToken = builder.workerToken().orElse(null);
    requireDirectoryOf("--out", out);
    requireDirectoryOf("--summary", summary);
    reports.requireDirectories(spec.commandLine());
    if (db() instanceof StoreLocation.SqliteFile file) {
      requireDirectoryOf("--db", file.file());
    }
    OutputFiles files = reports.addTo(new OutputFiles().writes("--out", out).writes("--summary", summary))
        .keepsStore("--db", db() instanceof StoreLocation.SqliteFile file ? file.file() : null)
        .keeps("the dataset", datasetFile())
        .keeps("the worker token file (--worker-token-file)", coordinatorOptions.workerTokenFile)
        .keeps("the certificate (--tls-cert)", coordinatorOptions.tlsCert).keeps("the key (--tls-key)", coordinatorOptions.tlsKey)
        .keeps("the API token file (--api-token-file)", apiOptions.apiTokenFile)
        .keeps("the password file (--db-password-file)", dbOptions.passwordFile());
    for (Path scorerFile : scorerFiles(scorerSpecs())) {
      files.keeps("a scorer's file (--scorer ...=" + scorerFile + ")", scorerFile);
    }
    files.requireDistinct(spec.commandLine());
    if (!prepare(err)) {
      return Main.EXIT_USAGE;
    }
    Path dbFile = dbFile();
    long started = System.nanoTime(); // wallMillis: this coordinator's part, from its start
    if (listen != null) {
      builder.listen(new InetSocketAddress(listen.host(), listen.port()));
    }
    if (api != null) {
      try {
        ApiServer.requireFreePort(api, builder.listen()); // before workers start or the store is created
      } catch (ApiServer.StartException e) {
        err.println("tally: " + e.getMessage());
        return Main.EXIT_USAGE;
      }
    }
    EarlyWorkers early = EarlyWorkers.start(this, builder, workerSlots, dbFile);
    try {
      return call(builder, early, workerSlots, dbFile, started, api, live, err);
    } finally {
      early.stop(); // unless they became the run's workers, which then stopped them already
    }
  }

  private int call(CoordinatorBuilder builder, EarlyWorkers early, int workerSlots, Path dbFile, long started, ApiServer.Settings api,
      SchedulerMetrics live, PrintWriter err) throws InterruptedException {
    Coordinator opened;
    try {
      // The worker port is bound before the run is written: a bad --listen leaves no half-started run.
      opened = builder.storeLocation(db(), storeOptions).start();
    } catch (CoordinatorBuilder.StartException e) {
      if (e.reason() != CoordinatorBuilder.StartException.Reason.CANNOT_LISTEN || !early.started()) {
        return refused(e, err);
      }
      // The free port the early workers were pointed at was taken meanwhile: a port of the system's choice.
      early.stop();
      builder.listen(new InetSocketAddress(builder.listen().getHostString(), 0));
      try {
        opened = builder.start();
      } catch (CoordinatorBuilder.StartException again) {
        return refused(again, err);
      }
    }
    Coordinator coordinator = opened;
    ApiServer served = null;
    if (api != null) {
      try {
        served = ApiServer.start(api, coordinator, live);
      } catch (ApiServer.StartException e) {
        coordinator.close();
        err.println("tally: " + e.getMessage());
        return Main.EXIT_USAGE;
      }
      err.printf("tally: API at %s%s (OpenAPI %s%s), dashboard at %s while this runs%n", served.url(), ApiServer.BASE,
          served.url(), ApiServer.OPENAPI_PATH, served.dashboardUrl());
    }
    long runId = -1;
    // The API closes first: no request is answered from a store that is closing.
    try (coordinator; ApiServer ignored = served) {
      runId = chooseRun(coordinator, err);
      if (runId < 0) {
        return Main.EXIT_USAGE;
      }
      RunView chosen = coordinator.store().run(runId).orElseThrow();
      if (chosen.ended()) {
        // Nothing to run (tally resume of a run whose coordinator died before writing its results): no
        // workers are started, and none is announced.
        return report(coordinator, runId, chosen.counters(), started, err);
      }
      return runChosen(coordinator, runId, workerSlots, dbFile, started, early, err);
    } catch (StoreException e) {
      // A coordinator that stepped down has its later writes refused as a standby's: its reason is the cause.
      Throwable cause = coordinator.stepDownFailure().map(Throwable.class::cast).orElse(e);
      err.println(StoreFailure.stopped(runId, db(), resumeCommand(runId), cause));
      return Main.EXIT_FAILED;
    } catch (IOException e) {
      err.println("tally: " + e.getMessage());
      return Main.EXIT_FAILED;
    }
  }

  /**
   * Refuses a file whose directory is missing, naming the option and the directory: a typo in a path must
   * not build a tree of directories (at {@code /}, for an absolute one), so tally creates none, and this
   * check comes before anything is opened or written.
   *
   * @throws ParameterException if the directory of {@code file} does not exist or is not a directory, or
   *     {@code file} itself is a directory
   */
  void requireDirectoryOf(String option, Path file) {
    requireDirectoryOf(spec.commandLine(), option, file);
  }

  /** {@link #requireDirectoryOf(String, Path)} for any command ({@code tally results} too). */
  public static void requireDirectoryOf(picocli.CommandLine commandLine, String option, Path file) {
    Path absolute = file.toAbsolutePath();
    Path directory = absolute.getParent();
    if (directory != null && !Files.isDirectory(directory)) {
      throw new ParameterException(commandLine, option + " " + file + ": the directory " + directory
          + (Files.exists(directory) ? " is not a directory" : " does not exist") + " (tally creates no directories: create it first)");
    }
    if (Files.isDirectory(absolute)) {
      throw new ParameterException(commandLine, option + " " + file + " is a directory; give a file in it");
    }
  }

  /** Says why the coordinator could not start; the exit code says whose fault it is. */
  private int refused(CoordinatorBuilder.StartException e, PrintWriter err) {
    switch (e.reason()) {
      case STORE_LOCKED:
        err.println("tally: another coordinator (tally run or tally resume) is running on " + db().describe() + " (it holds "
            + CoordinatorLock.lockFile(dbFile()) + "); wait for it to finish or stop it first");
        return Main.EXIT_USAGE;
      case STORE_UNUSABLE:
        if (StoreFailure.isDiskFull(e, db())) {
          err.println(StoreFailure.stopped(-1, db(), resumeCommand(-1), e));
          return Main.EXIT_FAILED;
        }
        err.println("tally: " + e.getMessage());
        return Main.EXIT_USAGE;
      case STORE_UNREACHABLE:
        err.println("tally: " + e.getMessage());
        return Main.EXIT_FAILED;
      default:
        err.println("tally: " + e.getMessage());
        return Main.EXIT_USAGE;
    }
  }

  /**
   * Refuses, before anything is opened or written, JVM options for local workers that a JVM does not accept
   * ({@link LocalWorkerProcesses#checkWorkerJavaOptions}); for {@code tally run}, {@code resume} and {@code
   * server}, and the benchmarks, when they start {@code workers} local workers tuned as {@code jvm}.
   *
   * @throws ParameterException with the JVM's complaint, if it refuses them
   */
  public static void requireWorkerJavaOptions(picocli.CommandLine commandLine, int workers, LocalWorkerProcesses.Jvm jvm) {
    if (workers <= 0) {
      return;
    }
    try {
      LocalWorkerProcesses.checkWorkerJavaOptions(jvm);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(commandLine, e.getMessage());
    }
  }

  /**
   * The {@code tally resume} command that finishes run {@code runId} as this command would: the same store,
   * results, summary and report files (absolute, so that it works from any directory) and the same local
   * fleet; each word shell-quoted where it needs to be. A resume without them would write {@code
   * results.jsonl} in whatever directory it is run from, over another run's.
   */
  final String resumeInvocation(long runId) {
    List<String> words = new ArrayList<>(List.of("tally", "resume", Long.toString(runId)));
    StoreLocation store = db();
    words.add("--db=" + (store instanceof StoreLocation.SqliteFile f ? f.file().toAbsolutePath().toString() : store.describe()));
    if (dbOptions.passwordFile() != null) {
      words.add("--db-password-file=" + dbOptions.passwordFile().toAbsolutePath());
    }
    words.add("--out=" + out.toAbsolutePath());
    words.add("--summary=" + summary.toAbsolutePath());
    words.addAll(reports.arguments());
    words.add("--workers=" + workers);
    if (slots != null) {
      words.add("--slots=" + slots);
    }
    if (inProcessSlots > 0) {
      words.add("--in-process=" + inProcessSlots);
    }
    if (listen != null && listen.port() != 0) { // a fixed port, where remote workers look for the coordinator
      words.add("--listen=" + listen);
    }
    return words.stream().map(RunnerCommand::shellWord).collect(java.util.stream.Collectors.joining(" "));
  }

  /**
   * {@code word} as one word of a POSIX shell: as it is if it holds nothing a shell reads, else single-quoted
   * ({@link dev.tally.worker.eval.CommandTemplate#shellQuote}, the one quoting rule).
   */
  static String shellWord(String word) {
    return !word.isEmpty() && word.matches("[A-Za-z0-9_@%+=:,./-]+") ? word : dev.tally.worker.eval.CommandTemplate.shellQuote(word);
  }

  /** The run, once it is chosen: workers, progress, and the results. */
  private int runChosen(Coordinator coordinator, long runId, int workerSlots, Path dbFile, long started, EarlyWorkers early,
      PrintWriter err) throws IOException, InterruptedException {
    HostPort bound = new HostPort(coordinator.address().getHostString(), coordinator.port());
    HostPort connectTo = new HostPort(loopbackFor(bound.host()), bound.port());
    LocalWorkerProcesses already = early.takeFor(runId, connectTo);
    try (LocalWorkerProcesses local = already != null ? already
            : LocalWorkerProcesses.start(workers, workerSlots, connectTo, logDir(dbFile, runId), workerToken);
        InProcessWorker inProcess = new InProcessWorker(startInProcess(inProcessSlots, coordinator))) {
      RunView run = coordinator.store().run(runId).orElseThrow();
      err.printf("tally: run %d: %s; %s; store %s%n", runId, Words.count(run.counters().total(), "case"),
          fleet(workerSlots, bound), db().describe());
      // On a terminal the progress bar's line has no end yet: the message starts on a line of its own.
      String lineFirst = !noProgress && System.console() != null ? System.lineSeparator() : "";
      Thread hook = new Thread(() -> {
        err.printf(lineFirst + "tally: stopped before run %d finished; what is recorded stays in %s. The same command, or"
            + " %s, finishes it without running a recorded case again.%n", runId, db().describe(), resumeInvocation(runId));
        err.flush();
        // The scheduler first: workers that stop after it are no losses to redeliver, and their jobs stay
        // leased for the next coordinator to take over, as after a kill -9 (at once on a random port).
        coordinator.stopScheduling();
        local.stop(STOPPED_BEFORE_THE_END);
      }, "tally-stop-workers");
      Runtime.getRuntime().addShutdownHook(hook);
      try {
        RunCounters counters = await(coordinator, runId, (int) run.counters().total(), connectTo, err);
        local.stop(RUN_OVER);
        return report(coordinator, runId, counters, started, err);
      } finally {
        local.stop(STOPPED_BEFORE_THE_END); // after a failure; a run that ended has stopped them already
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // A signal stopped the run: the hook says how to finish it.
        }
      }
    }
  }

  /**
   * Writes a finished run's results and summary and prints its table; a file that cannot be written is said
   * after the table (which comes from the store), with what was written and the command that writes them again.
   *
   * @param started when this coordinator started ({@link System#nanoTime()}), for {@code wallMillis}
   * @return the exit code: 0 if every case passed and every file was written, else 1
   * @throws IOException if the summary just made cannot be read back for the reports (a bug, not the disk)
   */
  private int report(Coordinator coordinator, long runId, RunCounters counters, long started, PrintWriter err) throws IOException {
    long wallMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    RunView finished = coordinator.store().run(runId).orElseThrow();
    var times = new RunReport.Times(wallMillis, RunReport.runWallMillis(finished));
    ObjectNode caseFigures = RunReport.caseFigures(coordinator.store(), runId, groupBy());
    ObjectNode groups = caseFigures.has("groups") ? (ObjectNode) caseFigures.get("groups") : null;
    if (pausedReason != null) {
      caseFigures.put("paused", pausedReason);
    }
    List<Path> written = new java.util.ArrayList<>();
    IOException notWritten = null;
    try {
      writeFiles(coordinator, runId, counters, times, caseFigures, written);
    } catch (IOException e) {
      notWritten = e; // a full disk or a read-only directory: the table, from the store, still says how the run went
    }
    printTable(coordinator, runId, counters, times, caseFigures, groups);
    if (notWritten != null) {
      err.printf("tally: run %d is recorded in %s, but %s%s. Once there is room, %s %s%n", runId, db().describe(),
          notWritten.getMessage(), OutputFiles.writtenBefore(written), resumeInvocation(runId),
          pausedReason == null ? "writes its files again" : "writes its files (and goes on with the run, paused as below)");
    } else {
      List<Path> reportsWritten = written.stream().filter(p -> !p.equals(out) && !p.equals(summary)).toList();
      err.printf("tally: results in %s, summary in %s%s%n", out, summary, reportsWritten.isEmpty() ? "" : "; reports "
          + reportsWritten.stream().map(Path::toString).collect(java.util.stream.Collectors.joining(", ")));
    }
    if (pausedReason != null) {
      long left = counters.total() - counters.ended();
      String resume = resumeInvocation(runId);
      String goOn = pausedCap != null && pausedCap.option().equals(dev.tally.core.FleetLimits.MAX_TOKENS)
          ? "with a raised cap: " + resume + " --" + pausedCap.option() + " N"
          : pausedCap != null ? "with a raised cap: " + resume + " --" + pausedCap.option() + " USD"
          : "once the cause is fixed: " + resume + "; then tally retry-errors " + runId + " --db " + db().describe()
              + " runs the cases that erred again";
      err.printf("tally: run %d paused: %s; %s not run (not in the results). Go on %s%n", runId, pausedReason,
          Words.count(left, "case"), goOn);
    }
    return notWritten != null ? Main.EXIT_FAILED : Main.exitCodeOf(counters.passed(), counters.total());
  }

  /**
   * Writes the results, the summary and the reports asked for, adding each to {@code written} once it is
   * (the results and the summary first).
   *
   * @throws IOException if a file cannot be written (its message names it)
   */
  private void writeFiles(Coordinator coordinator, long runId, RunCounters counters, RunReport.Times times,
      ObjectNode caseFigures, List<Path> written) throws IOException {
    RunReport.writeResultsFile(coordinator.store(), runId, out);
    written.add(out);
    ResultLines lines = ResultLines.of(coordinator.store(), runId);
    // The HTML report's inputs, as the store keeps them: every case's, so only read for that report (the
    // results, the summary, the CSV and JUnit reports stream).
    Map<String, String> cases = new java.util.HashMap<>();
    if (reports.html()) {
      coordinator.store().forEachCase(runId, (caseId, json) -> {
        cases.put(caseId, json);
        return true;
      });
    }
    RunReport.writeSummaryFile(runId, counters, times, caseFigures, summary);
    written.add(summary);
    if (reports.any()) {
      JsonNode summaryJson = new ObjectMapper().readTree(RunReport.summaryBytes(runId, counters, times, caseFigures));
      reports.write(summaryJson, lines, id -> {
        String json = cases.get(id);
        return json == null ? null : HtmlReport.inputText(json);
      }, written);
    }
  }

  /** Prints the summary table, and usage, pass@k, groups and the cases that did not pass where there are any. */
  private void printTable(Coordinator coordinator, long runId, RunCounters counters, RunReport.Times times,
      ObjectNode caseFigures, ObjectNode groups) {
    SummaryTable.print(spec.commandLine().getOut(), runId, counters, times);
    if (caseFigures.has("usage")) {
      SummaryTable.printUsage(spec.commandLine().getOut(), caseFigures.get("usage"));
    }
    if (caseFigures.has("passAtK")) {
      SummaryTable.printPassAtK(spec.commandLine().getOut(), caseFigures.get("passAtK"));
    }
    if (groups != null) {
      SummaryTable.printGroups(spec.commandLine().getOut(), groups);
    }
    SummaryTable.printNotPassed(spec.commandLine().getOut(), counters, SummaryTable.notPassed(coordinator.store(), runId),
        out.toString());
  }

  /**
   * What works on the run, in words: the local worker processes and their slots, the in-process slots,
   * and where remote workers connect; "no local workers" when there are none, so that a run waiting for
   * remote workers says so rather than announcing zero of something.
   */
  String fleet(int workerSlots, HostPort address) {
    boolean none = workers == 0 && inProcessSlots == 0;
    return localFleet(workers, workerSlots, inProcessSlots) + "; " + (none
        ? "waiting for remote workers (tally worker --coordinator " + address + ")"
        : "remote workers may connect to " + address);
  }

  /**
   * The local fleet in words, as {@code tally run} and {@code tally server} say it: {@code "3 local workers x
   * 1 slot + 2 in-process slots"}, or {@code "no local workers"}.
   */
  static String localFleet(int workers, int workerSlots, int inProcessSlots) {
    List<String> parts = new ArrayList<>();
    if (workers > 0) {
      parts.add(Words.count(workers, "local worker") + " x " + Words.count(workerSlots, "slot"));
    }
    if (inProcessSlots > 0) {
      parts.add(Words.count(inProcessSlots, "in-process slot"));
    }
    return parts.isEmpty() ? "no local workers" : String.join(" + ", parts);
  }

  /**
   * Refuses an {@code --in-process} count out of its range, 0 to {@link WorkerServer#MAX_WORKER_SLOTS}.
   *
   * @throws ParameterException naming the option and the value, if it is out of range
   */
  static void requireInProcessSlots(picocli.CommandLine commandLine, int inProcessSlots) {
    if (inProcessSlots < 0 || inProcessSlots > WorkerServer.MAX_WORKER_SLOTS) {
      throw new ParameterException(commandLine, "--in-process must be from 0 to " + WorkerServer.MAX_WORKER_SLOTS + ", got " + inProcessSlots);
    }
  }

  /**
   * Starts the worker inside this process that {@code --in-process} asks for: {@code slots} slot threads
   * taking cases straight from the coordinator's scheduler (no connection, no heartbeat: it lives and dies
   * with the coordinator), holding up to as many more assigned in advance. Null for 0 slots. Called only
   * while the coordinator leads.
   */
  static LocalWorker startInProcess(int slots, Coordinator coordinator) {
    return slots > 0 ? LocalWorker.start("in-process", slots, slots, coordinator.scheduler(), coordinator.store().storeId()) : null;
  }

  /**
   * Reads and checks this command's input before anything is opened.
   *
   * @return false if the input is bad (the reason is printed on {@code err})
   */
  abstract boolean prepare(PrintWriter err);

  /** Where the store is ({@code --db}). */
  abstract StoreLocation db();

  /** What the store's side files (worker logs, uploads) are named after and put beside ({@link DbOptions#besideStore}). */
  final Path dbFile() {
    return DbOptions.besideStore(db());
  }

  /** The scorer specs given on this command's line ({@code --scorer}), whose files it reads; none by default. */
  List<String> scorerSpecs() {
    return List.of();
  }

  /** The files the scorer specs name ({@code json:schema-file=PATH}), as far as the specs can be read. */
  static List<Path> scorerFiles(List<String> specs) {
    List<Path> named = new java.util.ArrayList<>();
    try {
      dev.tally.core.score.Scorers.withFilesInlined(specs, path -> {
        named.add(Path.of(path));
        return java.nio.file.Files.readString(Path.of(path));
      });
    } catch (RuntimeException e) {
      // A bad spec or a file that cannot be read: said when the specs are parsed for the run
    }
    return named;
  }

  /** The dataset file this command reads, which nothing it writes may be; null if it reads none (resume). */
  Path datasetFile() {
    return null;
  }

  /** The field of {@code --group-by}, or null (tally run has the option). */
  String groupBy() {
    return null;
  }

  /**
   * The run to execute, after the store is open and the worker port bound; if it has finished already,
   * its results are written and no worker is started.
   *
   * @return the run's id, or -1 if there is no such run (the reason is printed on {@code err})
   * @throws StoreException if the store fails
   */
  abstract long chooseRun(Coordinator coordinator, PrintWriter err);

  /** Says what taking over an unfinished run found and did. */
  static void reportTakeOver(RunResumption.TakeOver t, PrintWriter err) {
    RunCounters c = t.run().counters();
    err.printf("tally: resuming run %d: %d of %s already ended%n", t.run().runId(), c.judged(),
        Words.count(c.total(), "case"));
    if (t.leasesReleased() > 0) {
      err.printf("tally: %s leased by the previous coordinator's workers %s back to the queue%n",
          Words.count(t.leasesReleased(), "case"), t.leasesReleased() == 1 ? "goes" : "go");
    }
  }

  /** The command that finishes this run later, in words (run id unknown: -1); see {@link #resumeInvocation}. */
  abstract String resumeCommand(long runId);

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

  /**
   * Waits for the run to end, drawing progress.
   *
   * @throws StoreException if the coordinator gave up on the store
   * @throws IOException if the run could not finish for another reason
   */
  private RunCounters await(Coordinator coordinator, long runId, int total, HostPort connectTo, PrintWriter err)
      throws InterruptedException, IOException {
    CompletableFuture<RunCounters> done = coordinator.submit(runId);
    long noWorkersSinceNanos = System.nanoTime();
    long lastWarningNanos = 0;
    boolean drawBar = !noProgress && System.console() != null;
    ProgressLine line = new ProgressLine();
    ProgressBar bar = drawBar ? progressBar(runId, total, line, new ConsoleProgressBarConsumer(System.err)) : null;
    try {
      while (true) {
        try {
          RunCounters c = done.get(200, TimeUnit.MILLISECONDS);
          update(bar, line, c);
          return c;
        } catch (TimeoutException e) {
          try {
            RunCounters sofar = coordinator.progress(runId);
            update(bar, line, sofar);
            // Paused (a cap reached, or fail fast): no lease is made any more; once what was in flight has
            // come back, this coordinator's part is over.
            if (coordinator.inFlight() == 0) {
              Optional<RunView> view = coordinator.store().run(runId);
              Optional<String> paused = view.flatMap(RunView::paused);
              if (paused.isPresent()) {
                pausedReason = paused.get();
                // A stored pause (fail fast) comes first in paused(): the cap counts only if it is the reason.
                pausedCap = view.get().limits().capHit(view.get().counters())
                    .filter(cap -> cap.reason().equals(paused.get())).orElse(null);
                return view.get().counters();
              }
            }
          } catch (StoreException lookFailed) {
            // A look at the progress while the database cannot be reached decides nothing: the scheduler
            // waits out the reconnection, and fails the run itself (done, above) if the store stays away.
            if (!Stores.unreachable(db(), lookFailed)) {
              throw lookFailed;
            }
          }
          long now = System.nanoTime();
          if (coordinator.connectedWorkers() > 0) {
            noWorkersSinceNanos = now;
          } else if (now - noWorkersSinceNanos > NO_WORKERS_WARNING.toNanos() && now - lastWarningNanos > NO_WORKERS_WARNING.toNanos()) {
            lastWarningNanos = now;
            err.printf("tally: no worker has been connected for %d s; the run waits for workers (start one with: tally worker --coordinator %s)%n",
                TimeUnit.NANOSECONDS.toSeconds(now - noWorkersSinceNanos), connectTo);
          }
        } catch (ExecutionException e) {
          if (e.getCause() instanceof StoreException storeFailure) {
            throw storeFailure;
          }
          throw new IOException("run " + runId + " could not finish: " + e.getCause().getMessage() + "; "
              + resumeCommand(runId) + " finishes it without running a recorded case again", e.getCause());
        }
      }
    } finally {
      if (bar != null) {
        bar.close();
      }
    }
  }

  /** Why the run stopped before its end (paused: a cap of its own, or fail fast), or null: set by {@link #await}. */
  private String pausedReason;
  /** The cap that paused the run, if a cap did (else fail fast did, or a stored pause). */
  private dev.tally.core.FleetLimits.Cap pausedCap;

  /** The run's progress bar, drawn as a {@link ProgressLine} by {@code consumer}; close it when done. */
  static ProgressBar progressBar(long runId, long total, ProgressLine line, ProgressBarConsumer consumer) {
    return new ProgressBarBuilder().setTaskName("run " + runId).setInitialMax(total).setUpdateIntervalMillis(200)
        .setRenderer(line).setConsumer(consumer).build();
  }

  /** Shows the counters on the bar: the cases done (recorded, or out of attempts) and, on the line, the rest. */
  static void update(ProgressBar bar, ProgressLine line, RunCounters c) {
    if (bar == null || c == null) {
      return;
    }
    line.counters(c);
    bar.stepTo(c.judged());
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

  /**
   * The run this command will create when it is known before the store is opened, or -1: {@code tally run}
   * on a SQLite file that does not exist yet makes run 1 ({@link EarlyWorkers} starts its local workers
   * then, while the store is created).
   */
  long runIdBeforeOpening() {
    return -1;
  }

  /**
   * Local workers started before the store is opened, when the run's id is known already ({@link
   * #runIdBeforeOpening}) and the worker port is the system's choice: a worker JVM takes about as long to
   * start as the coordinator takes to create and migrate a store and load the dataset, and on a machine
   * of few cores the cases wait for both one after the other otherwise (examples/python-stdlib/bench.py).
   * The port is chosen first (a free one, bound and let go at once) so the workers can be told it; should
   * something else take it meanwhile, the coordinator binds another and the early workers are stopped for
   * fresh ones. Workers that are not wanted after all (another coordinator holds the store, the run chosen
   * is another) are stopped, saying why.
   *
   * <p>Thread-safety: the command's thread.
   */
  static final class EarlyWorkers {
    private final LocalWorkerProcesses workers;
    private final HostPort address;
    private final long runId;

    private EarlyWorkers(LocalWorkerProcesses workers, HostPort address, long runId) {
      this.workers = workers;
      this.address = address;
      this.runId = runId;
    }

    /** Starts them if {@code command} allows it, pointing {@code builder} at the chosen port; never throws. */
    static EarlyWorkers start(RunnerCommand command, CoordinatorBuilder builder, int slots, Path dbFile) {
      long runId = command.runIdBeforeOpening();
      InetSocketAddress listen = builder.listen();
      if (runId < 0 || command.workers == 0 || listen.getPort() != 0) {
        return new EarlyWorkers(null, null, -1);
      }
      try {
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, listen.getAddress())) {
          port = probe.getLocalPort();
        }
        HostPort address = new HostPort(loopbackFor(listen.getHostString()), port);
        LocalWorkerProcesses workers = LocalWorkerProcesses.start(command.workers, slots, address, logDir(dbFile, runId),
            command.workerToken);
        builder.listen(new InetSocketAddress(listen.getAddress(), port));
        return new EarlyWorkers(workers, address, runId);
      } catch (IOException | RuntimeException e) {
        return new EarlyWorkers(null, null, -1); // they start after the store opens, as they otherwise do
      }
    }

    boolean started() {
      return workers != null;
    }

    /** The workers, if they were started for {@code run} at {@code connectTo}; else stops them and returns null. */
    LocalWorkerProcesses takeFor(long run, HostPort connectTo) {
      if (workers != null && run == runId && connectTo.equals(address)) {
        return workers;
      }
      stop();
      return null;
    }

    /** Stops them if started (a second call does nothing). */
    void stop() {
      if (workers != null) {
        workers.stop(NOT_NEEDED);
      }
    }
  }

  /** What early local workers that were not needed after all say in their log. */
  static final String NOT_NEEDED = "stopped by tally run: not needed after all (the store was busy or the run another)";

  /** Beside the store and named after it ({@code tally.db-logs/run-3}): run ids are unique per store. */
  private static Path logDir(Path dbFile, long runId) {
    Path db = dbFile.toAbsolutePath();
    return db.resolveSibling(db.getFileName() + "-logs").resolve("run-" + runId);
  }
}

package dev.tally.cli;

import dev.tally.core.security.Secret;
import dev.tally.worker.Backoff;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker processes {@code tally run} starts on this machine: separate JVMs running
 * {@code tally worker}, so that each can die (or be killed, or frozen) on its own.
 *
 * <p><b>Supervision.</b> A worker that exits while the run goes on is started again under the same name,
 * after a jittered backoff that doubles with each quick death ({@value #RESTART_BACKOFF_INITIAL_MILLIS} ms
 * up to {@value #RESTART_BACKOFF_MAX_MILLIS} ms) and starts over once a worker has stayed up
 * {@value #STABLE_AFTER_MILLIS} ms: a case that crashes its worker, or a run of crashes, cannot drain the
 * fleet, and a worker that dies at once is not restarted in a tight loop.
 *
 * <p>Each worker is told this process's pid and exits when it disappears, so a {@code tally run} that is
 * killed with {@code kill -9} leaves no worker behind. Each worker's output goes to its own log file.
 *
 * <p><b>Stopping them says why.</b> {@link #stop} writes its reason as one line on each worker's stdin
 * ({@code tally worker --parent-pid} listens there): the worker says it in its log and in its Goodbye, and
 * stops at once, so that its log, the coordinator's and {@code tally status} read "stopped by tally run:
 * the run is over" rather than a signal, a drain that timed out or a lost worker. There is no graceful
 * drain: {@code tally run} stops its local workers only when the run is over (nothing runs) or when it is
 * being stopped itself, and then no one is left to deliver a finished case to. A worker that has not
 * stopped {@value #STOP_TIMEOUT_SECONDS} s after the word is killed. They run with {@code --drain-timeout
 * 0s}, so that a SIGTERM from anyone else stops one at once too.
 *
 * <p>Thread-safety: safe from any thread; restarts happen on the processes' exit-notification threads.
 */
public final class LocalWorkerProcesses implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LocalWorkerProcesses.class);

  /** The first restart waits up to this long (full jitter). */
  static final long RESTART_BACKOFF_INITIAL_MILLIS = 500;
  /** A worker that keeps dying is restarted at most this often. */
  static final long RESTART_BACKOFF_MAX_MILLIS = 30_000;
  /** A worker that stayed up this long counts as healthy again: its next restart waits little. */
  static final long STABLE_AFTER_MILLIS = 60_000;
  /**
   * How long a worker may take to stop once told to before it is killed: saying goodbye and stopping its
   * cases' process groups takes well under a second; five leave room on a loaded machine.
   */
  static final long STOP_TIMEOUT_SECONDS = 5;

  /** What {@link #close()} tells the workers, when its caller gave no more precise reason. */
  static final String DEFAULT_STOP_REASON = "stopped by the tally command that started it";

  /**
   * How a worker JVM is tuned: for workers whose cases are the work (commands, model calls: milliseconds to
   * minutes each), or for a worker that must itself go as fast as it can ({@code tally bench}'s noop cases,
   * microseconds each).
   */
  public enum Jvm {
    /**
     * Small and cheap to start: the serial collector, and the C1 compiler only
     * ({@code -XX:TieredStopAtLevel=1}). Such a worker's own hot code (frames, heartbeats, the case's pipes)
     * is small; C2 spends seconds of CPU at start-up compiling it, taken from the cases on a small machine
     * ({@code examples/python-stdlib/bench.py} measures it), for nothing a worker waiting on its cases can use.
     * And C1 compiles a method only after five times the JDK's default calls and loop turns: at the
     * defaults a worker's start-up code (connecting, its first frames, its first case) was compiled soon
     * after it last ran; a three-case run with three workers took 2.8 s of CPU against 3.15 s, and its
     * first case started 0.1 s sooner (medians of 4, interleaved).
     */
    CASES("-XX:TieredStopAtLevel=1", "-XX:Tier3InvocationThreshold=1000", "-XX:Tier3MinInvocationThreshold=500",
        "-XX:Tier3CompileThreshold=10000", "-XX:Tier3BackEdgeThreshold=300000"),
    /** Small, but with the JVM's full compilers: for a worker whose own code is the load. */
    THROUGHPUT();

    private final List<String> own;

    Jvm(String... own) {
      this.own = List.of(own);
    }

    /** The JVM options, {@link #SMALL_JVM} then this tuning's own, before those {@link #workerJvmOptions} adds. */
    public List<String> options() {
      List<String> options = new ArrayList<>(SMALL_JVM);
      options.addAll(own);
      return options;
    }
  }

  /**
   * Every worker JVM is small: a worker holds a few cases and their output tails, and the serial collector
   * keeps a 2-core machine's cores for the cases. Without the JVM's performance counters
   * ({@code -XX:-UsePerfData}): their sampler wakes every 50 ms in every JVM for the whole run, 3 to 4 ms of
   * CPU a second each on a 2-core machine, for {@code jps} and {@code jstat}, which a worker's user does
   * not need ({@code jcmd PID} still works).
   */
  static final List<String> SMALL_JVM = List.of("-Xmx512m", "-XX:+UseSerialGC", "-Xss512k", "-XX:-UsePerfData");

  /**
   * Extra options for every local worker's JVM, split at whitespace and put after Tally's own (so they win):
   * a bigger heap, say, or what the {@code tally} launcher uses to list the classes a worker loads when it
   * builds its class-data archive.
   */
  public static final String WORKER_JAVA_OPTS_VARIABLE = "TALLY_WORKER_JAVA_OPTS";

  /** The option that names a class-data sharing archive; a worker is given the one this JVM runs with. */
  static final String SHARED_ARCHIVE_OPTION = "-XX:SharedArchiveFile=";

  private final List<Process> processes = new ArrayList<>();
  /** The JVM options of every worker, computed once ({@link #workerJvmOptions}). */
  private final List<String> jvmOptions;
  private final Path logDir;
  private final int slots;
  private final HostPort coordinator;
  /** The worker token, passed in each worker's environment; null for none. */
  private final Secret workerToken;
  private final ScheduledExecutorService restarter =
      Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "tally-worker-supervisor");
        t.setDaemon(true);
        return t;
      });
  private volatile boolean closing;
  /** Each worker's options beyond the usual ones, by its 1-based index. */
  private java.util.function.IntFunction<List<String>> extraArgs = i -> List.of();
  private final AtomicLong restarts = new AtomicLong();

  private LocalWorkerProcesses(Path logDir, int slots, HostPort coordinator, Secret workerToken, List<String> jvmOptions) {
    this.jvmOptions = jvmOptions;
    this.logDir = logDir;
    this.slots = slots;
    this.coordinator = coordinator;
    this.workerToken = workerToken;
  }

  /**
   * Starts {@code count} workers connecting to {@code coordinator}, with JVMs tuned for {@link Jvm#CASES}.
   *
   * @see #start(int, int, HostPort, Path, Secret, Jvm)
   * @throws IOException if a process cannot be started (those already started are stopped)
   */
  public static LocalWorkerProcesses start(int count, int slots, HostPort coordinator, Path logDir, Secret workerToken)
      throws IOException {
    return start(count, slots, coordinator, logDir, workerToken, Jvm.CASES);
  }

  /** As {@link #start(int, int, HostPort, Path, Secret)}, with JVMs tuned as {@code jvm} says. */
  public static LocalWorkerProcesses start(int count, int slots, HostPort coordinator, Path logDir, Secret workerToken, Jvm jvm)
      throws IOException {
    return start(count, slots, coordinator, logDir, workerToken, jvm, i -> List.of());
  }

  /**
   * As {@link #start(int, int, HostPort, Path, Secret)}, each worker with more options of {@code tally worker}
   * (for benchmarks: {@code --stretch} makes one a straggler).
   *
   * @param extraArgs the options of worker {@code i} (1-based), kept across its restarts
   */
  public static LocalWorkerProcesses start(int count, int slots, HostPort coordinator, Path logDir, Secret workerToken,
      java.util.function.IntFunction<List<String>> extraArgs) throws IOException {
    return start(count, slots, coordinator, logDir, workerToken, Jvm.CASES, extraArgs);
  }

  /**
   * Starts {@code count} workers connecting to {@code coordinator}.
   *
   * @param count how many processes, at least 0
   * @param slots slots per worker, at least 1
   * @param logDir where each worker writes {@code worker-N.log}
   * @param workerToken the token the coordinator requires of its workers, or null for none: each worker gets
   *     it as the first line of its stdin ({@code --token-stdin}), never on its command line, which every user
   *     of the machine can read, nor in its environment, which every case it runs can read
   * @param jvm how the workers' JVMs are tuned
   * @param extraArgs the options of {@code tally worker} for worker {@code i} (1-based), kept across its restarts
   * @throws IOException if a process cannot be started (those already started are stopped), or {@value
   *     #WORKER_JAVA_OPTS_VARIABLE} holds something that is not a JVM option (a word not starting with {@code -})
   */
  public static LocalWorkerProcesses start(int count, int slots, HostPort coordinator, Path logDir, Secret workerToken, Jvm jvm,
      java.util.function.IntFunction<List<String>> extraArgs) throws IOException {
    List<String> options;
    try {
      options = workerJvmOptions(jvm, java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments(),
          System.getenv(WORKER_JAVA_OPTS_VARIABLE));
      if (count > 0) {
        checkWorkerJavaOptions(jvm); // a command that checked them first pays nothing here: CHECKED
      }
    } catch (IllegalArgumentException e) {
      throw new IOException("cannot start local workers: " + e.getMessage(), e);
    }
    if (count > 0) { // a run with in-process workers only gets no empty log directory
      Files.createDirectories(logDir);
    }
    LocalWorkerProcesses workers = new LocalWorkerProcesses(logDir, slots, coordinator, workerToken, options);
    workers.extraArgs = extraArgs;
    try {
      for (int i = 1; i <= count; i++) {
        workers.processes.add(null);
        workers.startOne(i, new Backoff(
            Duration.ofMillis(RESTART_BACKOFF_INITIAL_MILLIS), Duration.ofMillis(RESTART_BACKOFF_MAX_MILLIS),
            new SplittableRandom()));
      }
    } catch (IOException | RuntimeException e) {
      workers.close();
      throw e;
    }
    return workers;
  }

  /**
   * The command line that starts another JVM of this one's Java and class path with {@code jvmOptions} and
   * runs {@code mainClass}: local workers, and the benchmarks' helper processes. Mutable: the caller adds
   * the program's arguments.
   */
  public static List<String> javaCommand(List<String> jvmOptions, String mainClass) {
    List<String> command = new ArrayList<>();
    command.add(javaBin());
    command.addAll(jvmOptions);
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass);
    return command;
  }

  /** This JVM's {@code java}. */
  private static String javaBin() {
    return ProcessHandle.current().info().command().orElse(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
  }

  private void startOne(int index, Backoff backoff) throws IOException {
    List<String> command = javaCommand(jvmOptions, Main.class.getName());
    command.add("worker");
    command.add("--coordinator=" + coordinator);
    command.add("--slots=" + slots);
    command.add("--name=local-" + index);
    command.add("--drain-timeout=0s"); // see the class doc: no graceful drain for local workers
    command.add("--parent-pid=" + ProcessHandle.current().pid());
    command.addAll(extraArgs.apply(index));
    if (workerToken != null) {
      command.add("--token-stdin");
    }
    Path logFile = logDir.resolve("worker-" + index + ".log");
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
    // The coordinator's token goes on stdin, never in the environment: /proc/PID/environ of the worker is
    // readable by every case it runs (same user). Nor whatever this process's environment holds.
    pb.environment().remove(Secret.WORKER_TOKEN_VARIABLE);
    pb.environment().remove(Secret.API_TOKEN_VARIABLE);
    Process p = pb.start();
    if (workerToken != null) {
      try {
        OutputStream stdin = p.getOutputStream();
        stdin.write((workerToken.reveal() + "\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        stdin.flush(); // kept open: the reason it stops is written on it later
      } catch (IOException e) {
        p.destroyForcibly();
        throw e;
      }
    }
    long startedNanos = System.nanoTime();
    synchronized (processes) {
      if (closing) { // a restart that raced with stop(): it would outlive the word it never got
        p.destroyForcibly();
        return;
      }
      processes.set(index - 1, p);
    }
    p.onExit().thenAccept(dead -> {
      if (closing) {
        return;
      }
      if (System.nanoTime() - startedNanos > TimeUnit.MILLISECONDS.toNanos(STABLE_AFTER_MILLIS)) {
        backoff.reset();
      }
      long delay = backoff.next().toMillis();
      String said = tellingLine(logFile);
      log.warn("worker local-{} (pid {}) exited with code {}; starting it again in {} ms{}", index, dead.pid(), dead.exitValue(), delay,
          said.isEmpty() ? "" : "; its log " + logFile + " says: " + said);
      restarter.schedule(() -> restart(index, backoff), delay, TimeUnit.MILLISECONDS);
    });
  }

  /**
   * A worker's JVM options: {@code jvm}'s; then the class-data sharing settings this JVM was started with
   * ({@value #SHARED_ARCHIVE_OPTION}, {@code -Xshare:}, {@code -Xlog:cds}), so that a worker maps the
   * archive the {@code tally} launcher made for the same jar (its classes are loaded and checked once, at
   * the archive's making, not in every worker: most of a worker's start-up CPU); then the words of {@code
   * extra} ({@value #WORKER_JAVA_OPTS_VARIABLE}), which come last and so win.
   *
   * @param parentArguments this JVM's own options ({@code RuntimeMXBean.getInputArguments()})
   * @param extra whitespace-separated options, or null or blank for none
   * @throws IllegalArgumentException if a word of {@code extra} does not start with {@code -}: the JVM would
   *     take it for the main class, and every worker would die at start
   */
  static List<String> workerJvmOptions(Jvm jvm, List<String> parentArguments, String extra) {
    List<String> options = new ArrayList<>(jvm.options());
    for (String argument : parentArguments) {
      if (argument.startsWith(SHARED_ARCHIVE_OPTION) || argument.startsWith("-Xshare:") || argument.startsWith("-Xlog:cds")) {
        options.add(argument);
      }
    }
    if (extra != null && !extra.isBlank()) {
      for (String word : extra.strip().split("\\s+")) {
        if (!word.startsWith("-")) {
          throw new IllegalArgumentException("$" + WORKER_JAVA_OPTS_VARIABLE + ": '" + word
              + "' is not a JVM option (each word must start with -)");
        }
        options.add(word);
      }
    }
    return List.copyOf(options);
  }

  /** How long {@link #checkWorkerJavaOptions} waits for a JVM to say its version. */
  static final long OPTIONS_CHECK_TIMEOUT_SECONDS = 30;

  /** The most of the variable's value, and of what the JVM said, that an error message repeats. */
  static final int QUOTE_LIMIT = 200;

  /** The worker options that passed {@link #checkWorkerJavaOptions}, so that a second check costs nothing. */
  private static final java.util.Set<List<String>> CHECKED = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /**
   * Checks, before any worker starts, that a JVM accepts the options {@link #WORKER_JAVA_OPTS_VARIABLE}
   * adds: when the variable is set, starts this Java once with every worker's options and {@code -version}
   * (a tenth of a second; once per options in a process). A misspelt option otherwise kills every worker at
   * start, and they are started again and again while the run waits for them, the JVM's complaint only in
   * their logs. Does nothing when the variable is unset or blank (Tally's own options are tested).
   *
   * <p>The JVM's output goes to a temporary file, not a pipe, so that nothing it prints can stall the check;
   * a JVM that has not answered in {@value #OPTIONS_CHECK_TIMEOUT_SECONDS} s (one told to wait for a
   * debugger, say) is killed, and so is the check's JVM if this process is stopped meanwhile.
   *
   * @param jvm the workers' tuning
   * @throws IllegalArgumentException naming the variable, if a word of it is not an option, or if the JVM
   *     refuses the options (with what it said: "Unrecognized VM option 'Xmx1g'"); not if the check could
   *     not run at all or timed out (then it says so in a warning, and the workers say the rest)
   */
  public static void checkWorkerJavaOptions(Jvm jvm) {
    checkWorkerJavaOptions(jvm, System.getenv(WORKER_JAVA_OPTS_VARIABLE));
  }

  /** {@link #checkWorkerJavaOptions(Jvm)} with the variable's value given. */
  static void checkWorkerJavaOptions(Jvm jvm, String extra) {
    checkWorkerJavaOptions(jvm, extra, Duration.ofSeconds(OPTIONS_CHECK_TIMEOUT_SECONDS));
  }

  /** {@link #checkWorkerJavaOptions(Jvm, String)} with another limit on the JVM's answer (tests). */
  static void checkWorkerJavaOptions(Jvm jvm, String extra, Duration timeout) {
    if (extra == null || extra.isBlank()) {
      return;
    }
    List<String> options = workerJvmOptions(jvm, java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments(), extra);
    if (CHECKED.contains(options)) {
      return;
    }
    List<String> command = new ArrayList<>();
    command.add(javaBin());
    command.addAll(options);
    command.add("-version");
    String said;
    Path output = null;
    Process p = null;
    Thread stopIt = null;
    try {
      output = Files.createTempFile("tally-java-options-", ".txt");
      p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
      Process started = p;
      stopIt = new Thread(started::destroyForcibly, "tally-java-options-check-stop");
      Runtime.getRuntime().addShutdownHook(stopIt);
      p.getOutputStream().close();
      if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        log.warn("${}: a JVM started with these options did not say its version in {} ms; the workers start with them unchecked",
            WORKER_JAVA_OPTS_VARIABLE, timeout.toMillis());
        return;
      }
      if (p.exitValue() == 0) {
        CHECKED.add(options);
        return;
      }
      said = jvmComplaint(readHead(output), p.exitValue());
    } catch (IOException e) {
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    } finally {
      if (p != null && p.isAlive()) {
        p.destroyForcibly();
      }
      if (stopIt != null) {
        try {
          Runtime.getRuntime().removeShutdownHook(stopIt);
        } catch (IllegalStateException shuttingDown) {
          // the hook runs, or has run: it kills what is killed already
        }
      }
      if (output != null) {
        try {
          Files.deleteIfExists(output);
        } catch (IOException e) {
          // a temporary file left in the temporary directory
        }
      }
    }
    throw new IllegalArgumentException("$" + WORKER_JAVA_OPTS_VARIABLE + " ('" + cut(extra.strip())
        + "'): the JVM refuses it, saying: " + said);
  }

  /** The first 64 KiB of a file, as text (a JVM's answer to -version is a few lines). */
  private static String readHead(Path file) throws IOException {
    try (java.io.InputStream in = Files.newInputStream(file)) {
      return new String(in.readNBytes(64 * 1024), StandardCharsets.UTF_8);
    }
  }

  /**
   * What a JVM that would not start said, in at most two lines: its own lines, without the launcher's
   * {@code NOTE: Picked up JDK_JAVA_OPTIONS} and without unified-logging lines ({@code [0.003s][info][os]
   * ...}, which {@code -Xlog} options print first): "Unrecognized VM option 'X'" then "Error: Could not
   * create the Java Virtual Machine.", or "Error occurred during initialization of VM" then what was wrong.
   */
  static String jvmComplaint(String output, int exitCode) {
    String said = output.lines().map(String::strip).filter(l -> !l.isEmpty())
        .filter(l -> !l.startsWith("NOTE: Picked up") && !l.matches("^\\[[0-9.]+s\\].*")).limit(2)
        .collect(java.util.stream.Collectors.joining(" "));
    return said.isEmpty() ? "exit code " + exitCode : cut(said);
  }

  private static String cut(String text) {
    return cut(text, QUOTE_LIMIT);
  }

  private static String cut(String text, int limit) {
    return text.length() <= limit ? text : text.substring(0, limit) + "...";
  }

  /** Lines a JVM prints after any refusal of its options: they say that it failed, not why. */
  private static final java.util.Set<String> GENERIC_JVM_LINES = java.util.Set.of(
      "Error: Could not create the Java Virtual Machine.", "Error: A fatal exception has occurred. Program will exit.");

  /** A line that says why a process died: an error or exception named, not a stack frame. */
  private static final java.util.regex.Pattern TELLING = java.util.regex.Pattern.compile(
      ".*(Error|Exception|Unrecognized|refused|Could not|cannot|Invalid).*");

  /**
   * The line of a worker's log that best says why it exited, at most 300 characters of it, or "" if the log
   * has none: of the log's last 64 KiB, the last line naming an error or exception that is not a stack
   * frame ({@code at ...}) nor one of the JVM's generic closing lines, else the last non-blank line. A
   * worker that died of {@code OutOfMemoryError} ends its log with the stack, and a refused option with
   * "Error: A fatal exception has occurred"; neither says why.
   */
  static String tellingLine(Path logFile) {
    try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(logFile.toFile(), "r")) {
      long length = f.length();
      int n = (int) Math.min(length, 64 * 1024);
      byte[] tail = new byte[n];
      f.seek(length - n);
      f.readFully(tail);
      List<String> lines = new String(tail, StandardCharsets.UTF_8).lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
      if (lines.isEmpty()) {
        return "";
      }
      String line = lines.get(lines.size() - 1);
      for (int i = lines.size() - 1; i >= 0; i--) {
        String l = lines.get(i);
        if (!l.startsWith("at ") && !GENERIC_JVM_LINES.contains(l) && TELLING.matcher(l).matches()) {
          line = l;
          break;
        }
      }
      return cut(line, 300);
    } catch (IOException e) {
      return "";
    }
  }

  private void restart(int index, Backoff backoff) {
    if (closing) {
      return;
    }
    try {
      startOne(index, backoff);
      restarts.incrementAndGet();
    } catch (IOException e) {
      long delay = backoff.next().toMillis();
      log.error("cannot start worker local-{}: {}; trying again in {} ms", index, e.getMessage(), delay);
      restarter.schedule(() -> restart(index, backoff), delay, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * The CPU time (user and system) the running workers have used so far, in nanoseconds, or -1 if the
   * operating system does not say for one of them. A worker started again after it died counts from its
   * new start.
   */
  public long cpuNanos() {
    List<Process> current;
    synchronized (processes) {
      current = processes.stream().filter(Objects::nonNull).toList();
    }
    long total = 0;
    for (Process p : current) {
      java.util.Optional<java.time.Duration> cpu = p.info().totalCpuDuration();
      if (cpu.isEmpty()) {
        return -1;
      }
      total += cpu.get().toNanos();
    }
    return total;
  }

  /** The process ids of the running workers, in no particular order. */
  public List<Long> pids() {
    synchronized (processes) {
      return processes.stream().filter(Objects::nonNull).map(Process::pid).toList();
    }
  }

  /** How many times a worker was started again after it died. */
  long restarts() {
    return restarts.get();
  }

  /** Stops every worker, telling them {@link #DEFAULT_STOP_REASON}; see {@link #stop}. */
  @Override
  public void close() {
    stop(DEFAULT_STOP_REASON);
  }

  /**
   * Stops every worker, telling each why (one line on its stdin, which it logs and says in its Goodbye);
   * one that has not exited {@link #STOP_TIMEOUT_SECONDS} s later is killed. No worker is restarted after
   * this; a second call does nothing more.
   *
   * @param why a sentence such as "stopped by tally run: the run is over"; line breaks become spaces
   */
  public void stop(String why) {
    List<Process> current;
    synchronized (processes) {
      if (closing) {
        return;
      }
      closing = true;
      current = processes.stream().filter(Objects::nonNull).toList();
    }
    restarter.shutdownNow();
    byte[] line = (why.replaceAll("[\\r\\n]+", " ") + "\n").getBytes(StandardCharsets.UTF_8);
    for (Process p : current) {
      try (OutputStream stdin = p.getOutputStream()) {
        stdin.write(line);
      } catch (IOException exitedAlready) {
        // Its stdin is closed because it is gone: nothing to tell, and waitFor returns at once.
      }
    }
    for (Process p : current) {
      try {
        if (!p.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
          log.warn("worker process {} did not stop within {} s of being told to; killing it", p.pid(), STOP_TIMEOUT_SECONDS);
          p.destroyForcibly().waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        p.destroyForcibly();
      }
    }
  }

  public Path logDir() {
    return logDir;
  }
}

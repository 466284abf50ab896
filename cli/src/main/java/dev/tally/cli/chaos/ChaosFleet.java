package dev.tally.cli.chaos;

import dev.tally.cli.*;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The processes of one {@code tally chaos} run: a coordinator ({@code tally run ... --workers 0} on a fixed
 * loopback port), or with {@code --coordinators 2} or more that many {@code tally server}s on one store
 * ({@link Server}) and the client commands that submit to them; and N workers ({@code tally worker --name
 * chaos-i}) that know every coordinator. Each is a JVM of its own started with this process's java and
 * classpath, in the chaos work directory, appending its output to a log file of its own.
 *
 * <p>Every process ever started is remembered, so {@link #close} (called from a {@code finally} and from a
 * shutdown hook) can end them all: it first sends {@code SIGCONT} to each (a stopped process would hold a
 * {@code SIGTERM} pending forever), then {@code SIGTERM}, then {@code SIGKILL} after a grace period, and
 * waits for each to be gone. Children also watch this process's pid and exit when it disappears, so even a
 * {@code kill -9} of the chaos run leaves nothing behind for long.
 *
 * <p>Thread-safety: the chaos loop drives it from one thread; {@link #close} may run on another (the
 * shutdown hook), and after it nothing new is started.
 */
public final class ChaosFleet implements AutoCloseable {
  /** Small JVMs: C1 only and the serial collector leave a 2-core machine's cores for the run. */
  static final List<String> JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k");

  /** One worker place: the process that fills it now (null while a replacement is due). */
  static final class Worker {
    final int index;
    final String name;
    Process process;
    /** Stopped with SIGSTOP and not yet continued. */
    boolean frozen;
    long thawAtNanos;
    /** When a replacement is due (while process is null). */
    long replaceAtNanos;
    int starts;

    Worker(int index) {
      this.index = index;
      this.name = "chaos-" + index;
    }

    boolean alive() {
      return process != null && process.isAlive();
    }

    boolean healthy() {
      return alive() && !frozen;
    }
  }

  /**
   * One {@code tally server} place: its fixed ports (kept across restarts, so workers and clients find it
   * again) and the process that fills it now (null while a restart is due).
   */
  static final class Server {
    final int index;
    final String name;
    final HostPort workerAddress;
    final HostPort apiAddress;
    final String apiUrl;
    Process process;
    /** Stopped with SIGSTOP and not yet continued. */
    boolean frozen;
    /** When to continue it (Long.MAX_VALUE: once a standby has taken over). */
    long thawAtNanos;
    /** Continued after a standby took over: it must step down and exit. */
    boolean mustStepDown;
    /** Frozen at least once since its start: a step-down of its own is then no surprise. */
    boolean wasFrozen;
    long thawedAtNanos;
    /** When a restart is due (while process is null; Long.MAX_VALUE: once a standby has taken over). */
    long restartAtNanos;
    long startedAtNanos;
    /** Where this start's output begins in its log (the log is appended to across starts). */
    long logOffset;
    int starts;

    Server(int index, HostPort workerAddress, int apiPort) {
      this.index = index;
      this.name = "server-" + index;
      this.workerAddress = workerAddress;
      this.apiAddress = new HostPort(workerAddress.host(), apiPort);
      this.apiUrl = "http://" + apiAddress;
    }

    boolean alive() {
      return process != null && process.isAlive();
    }

    boolean healthy() {
      return alive() && !frozen;
    }
  }

  private final Path workDir;
  private final Path logDir;
  private final String coordinatorAddresses;
  private final int slots;
  private final String javaBin;
  private final String classPath;
  private final List<Process> started = new ArrayList<>();
  private final List<Worker> workers = new ArrayList<>();
  private final List<Server> servers = new ArrayList<>();
  private boolean closed;
  private int coordinatorStarts;

  /**
   * @param workDir the children's working directory (a PostgreSQL-backed server puts its side files there)
   * @param coordinatorAddresses what workers are given as {@code --coordinator}: one {@code HOST:PORT}, or
   *     several comma-separated
   * @param servers the {@code tally server} places, empty for one {@code tally run} coordinator
   */
  ChaosFleet(Path workDir, Path logDir, String coordinatorAddresses, int workerCount, int slots, List<Server> servers)
      throws IOException {
    this.workDir = workDir;
    this.logDir = Files.createDirectories(logDir);
    this.coordinatorAddresses = coordinatorAddresses;
    this.slots = slots;
    this.javaBin = ProcessHandle.current().info().command().orElse(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    // Absolute, since the children run in the work directory.
    this.classPath = java.util.Arrays.stream(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
        .map(e -> e.isEmpty() ? e : Paths.get(e).toAbsolutePath().toString())
        .collect(java.util.stream.Collectors.joining(java.io.File.pathSeparator));
    for (int i = 1; i <= workerCount; i++) {
      workers.add(new Worker(i));
    }
    this.servers.addAll(servers);
  }

  List<Worker> workers() {
    return workers;
  }

  List<Server> servers() {
    return servers;
  }

  Path logDir() {
    return logDir;
  }

  /** Starts (or starts again) worker {@code w} under its name; its log is appended to. */
  Process startWorker(Worker w) throws IOException {
    List<String> args = List.of("worker", "--coordinator=" + coordinatorAddresses, "--slots=" + slots, "--name=" + w.name,
        "--parent-pid=" + ProcessHandle.current().pid());
    w.starts++;
    w.process = start(Main.class.getName(), args, logDir.resolve("worker-" + w.name + ".log"), w.name + " start " + w.starts);
    w.frozen = false;
    w.replaceAtNanos = 0;
    return w.process;
  }

  /** Starts a coordinator running {@code tally TALLY-ARGS} (through {@link ChaosChild}, which watches this process). */
  Process startCoordinator(List<String> tallyArgs) throws IOException {
    List<String> args = new ArrayList<>();
    args.add("--parent-pid=" + ProcessHandle.current().pid());
    args.addAll(tallyArgs);
    coordinatorStarts++;
    return start(ChaosChild.class.getName(), args, logDir.resolve("coordinator.log"), "coordinator start " + coordinatorStarts);
  }

  /** Starts (or starts again) server {@code s} running {@code tally SERVER-ARGS}; its log is appended to. */
  Process startServer(Server s, List<String> serverArgs, long nowNanos) throws IOException {
    List<String> args = new ArrayList<>();
    args.add("--parent-pid=" + ProcessHandle.current().pid());
    args.addAll(serverArgs);
    s.starts++;
    Path log = serverLog(s);
    s.logOffset = Files.exists(log) ? Files.size(log) : 0;
    s.process = start(ChaosChild.class.getName(), args, log, s.name + " start " + s.starts);
    s.frozen = false;
    s.wasFrozen = false;
    s.mustStepDown = false;
    s.restartAtNanos = 0;
    s.startedAtNanos = nowNanos;
    return s.process;
  }

  Path serverLog(Server s) {
    return logDir.resolve(s.name + ".log");
  }

  /**
   * Whether server {@code s}'s current start has written {@code text} to its log.
   *
   * @throws IOException if the log cannot be read
   */
  boolean serverSaid(Server s, String text) throws IOException {
    Path log = serverLog(s);
    if (!Files.exists(log)) {
      return false;
    }
    byte[] all = Files.readAllBytes(log);
    int from = (int) Math.min(s.logOffset, all.length);
    return new String(all, from, all.length - from, StandardCharsets.UTF_8).contains(text);
  }

  /** Starts a client command, {@code tally ARGS} (through {@link ChaosChild}), its output in {@code logName}. */
  Process startClient(List<String> tallyArgs, String logName) throws IOException {
    List<String> args = new ArrayList<>();
    args.add("--parent-pid=" + ProcessHandle.current().pid());
    args.addAll(tallyArgs);
    return start(ChaosChild.class.getName(), args, logDir.resolve(logName), "client");
  }

  private Process start(String mainClass, List<String> args, Path log, String what) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(javaBin);
    command.addAll(JVM_OPTIONS);
    command.addAll(dev.tally.store.SqliteNativeLibrary.inheritedOptions()); // its coordinators open the store
    command.add("-cp");
    command.add(classPath);
    command.add(mainClass);
    command.addAll(args);
    Files.writeString(log, "==== " + Instant.now() + " " + what + ": " + String.join(" ", args) + System.lineSeparator(),
        StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    synchronized (started) {
      if (closed) {
        throw new IOException("the chaos fleet is closed");
      }
      Process p = new ProcessBuilder(command).directory(workDir.toFile()).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
      started.add(p);
      return p;
    }
  }

  /** {@code kill -9}, and waits until the process is gone. */
  static void kill9(Process p) throws InterruptedException {
    p.destroyForcibly(); // SIGKILL on Linux
    if (!p.waitFor(10, TimeUnit.SECONDS)) {
      throw new IllegalStateException("process " + p.pid() + " survived SIGKILL for 10 s");
    }
  }

  /**
   * Sends a signal by name ({@code STOP}, {@code CONT}) with {@link Signals}; a process that has died
   * meanwhile is not an error (there is nothing left to stop or continue).
   *
   * @throws IOException if the signal cannot be sent to a process that is still alive
   */
  static void signal(Process p, String signal) throws IOException, InterruptedException {
    try {
      Signals.send(p.pid(), signal);
    } catch (IOException e) {
      if (p.isAlive()) {
        throw e;
      }
    }
  }

  /**
   * Asks server {@code s}'s JVM for a dump of its threads (SIGQUIT, which the JVM answers on its standard
   * output, that is its log) and waits up to {@link #THREAD_DUMP_WAIT_MILLIS} for the dump to end: for a
   * server about to be killed for a violation, so that its log says where it was stuck.
   *
   * @throws IOException if the signal cannot be sent to a live process or the log cannot be read
   * @throws InterruptedException if interrupted while waiting
   */
  void dumpThreads(Server s) throws IOException, InterruptedException {
    if (s.process == null || !s.process.isAlive()) {
      return;
    }
    signal(s.process, "QUIT");
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(THREAD_DUMP_WAIT_MILLIS);
    while (System.nanoTime() < deadline && !serverSaid(s, "JNI global refs")) { // the dump's last line
      Thread.sleep(50);
    }
  }

  /** How long {@link #dumpThreads} waits for the JVM to write its dump. */
  static final long THREAD_DUMP_WAIT_MILLIS = 3000;

  /** How many processes are still alive among those ever started. */
  long aliveCount() {
    synchronized (started) {
      return started.stream().filter(Process::isAlive).count();
    }
  }

  /**
   * Ends every process ever started: SIGCONT (so a stopped one can act on what follows), SIGTERM, and after
   * 5 s SIGKILL; returns once each is gone (or 15 s have passed). Nothing is started after this.
   */
  @Override
  public void close() {
    List<Process> alive;
    synchronized (started) {
      closed = true;
      alive = started.stream().filter(Process::isAlive).toList();
    }
    for (Process p : alive) {
      try {
        signal(p, "CONT");
      } catch (IOException | InterruptedException | RuntimeException e) {
        // It may have just died; SIGKILL below needs no continue anyway.
      }
      p.destroy();
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    for (Process p : alive) {
      try {
        long left = deadline - System.nanoTime();
        if (left <= 0 || !p.waitFor(left, TimeUnit.NANOSECONDS)) {
          p.destroyForcibly();
          p.waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}

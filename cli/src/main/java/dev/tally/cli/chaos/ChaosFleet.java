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
 * loopback port) and N workers ({@code tally worker --name chaos-i}), each a JVM of its own started with
 * this process's java and classpath, each appending its output to a log file of its own.
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

  private final Path logDir;
  private final HostPort coordinatorAddress;
  private final int slots;
  private final String javaBin;
  private final List<Process> started = new ArrayList<>();
  private final List<Worker> workers = new ArrayList<>();
  private boolean closed;
  private int coordinatorStarts;

  ChaosFleet(Path logDir, HostPort coordinatorAddress, int workerCount, int slots) throws IOException {
    this.logDir = Files.createDirectories(logDir);
    this.coordinatorAddress = coordinatorAddress;
    this.slots = slots;
    this.javaBin = ProcessHandle.current().info().command().orElse(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    for (int i = 1; i <= workerCount; i++) {
      workers.add(new Worker(i));
    }
  }

  List<Worker> workers() {
    return workers;
  }

  Path logDir() {
    return logDir;
  }

  /** Starts (or starts again) worker {@code w} under its name; its log is appended to. */
  Process startWorker(Worker w) throws IOException {
    List<String> args = List.of("worker", "--coordinator=" + coordinatorAddress, "--slots=" + slots, "--name=" + w.name,
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

  private Process start(String mainClass, List<String> args, Path log, String what) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(javaBin);
    command.addAll(JVM_OPTIONS);
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass);
    command.addAll(args);
    Files.writeString(log, "==== " + Instant.now() + " " + what + ": " + String.join(" ", args) + System.lineSeparator(),
        StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    synchronized (started) {
      if (closed) {
        throw new IOException("the chaos fleet is closed");
      }
      Process p = new ProcessBuilder(command).redirectErrorStream(true)
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

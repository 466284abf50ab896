package dev.tally.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The worker processes {@code tally run} starts on this machine: separate JVMs running
 * {@code tally worker}, so that each can die (or be killed, or frozen) on its own.
 *
 * <p>Each worker is told this process's pid and exits when it disappears, so a {@code tally run} that is
 * killed with {@code kill -9} leaves no worker behind. Each worker's output goes to its own log file.
 *
 * <p>Thread-safety: confined to the thread that created it.
 */
final class LocalWorkerProcesses implements AutoCloseable {
  /** Worker JVMs are small; the serial collector keeps a 2-core machine's cores for the cases. */
  private static final List<String> WORKER_JVM_OPTIONS = List.of("-Xmx512m", "-XX:+UseSerialGC", "-Xss512k");

  private final List<Process> processes = new ArrayList<>();
  private final Path logDir;

  private LocalWorkerProcesses(Path logDir) {
    this.logDir = logDir;
  }

  /**
   * Starts {@code count} workers connecting to {@code coordinator}.
   *
   * @param count how many processes, at least 0
   * @param slots slots per worker, at least 1
   * @param logDir where each worker writes {@code worker-N.log}
   * @throws IOException if a process cannot be started (those already started are stopped)
   */
  static LocalWorkerProcesses start(int count, int slots, HostPort coordinator, Path logDir) throws IOException {
    Files.createDirectories(logDir);
    LocalWorkerProcesses workers = new LocalWorkerProcesses(logDir);
    try {
      for (int i = 1; i <= count; i++) {
        workers.startOne(i, slots, coordinator);
      }
    } catch (IOException | RuntimeException e) {
      workers.close();
      throw e;
    }
    return workers;
  }

  private void startOne(int index, int slots, HostPort coordinator) throws IOException {
    String java = ProcessHandle.current().info().command().orElse(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    List<String> command = new ArrayList<>();
    command.add(java);
    command.addAll(WORKER_JVM_OPTIONS);
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(Main.class.getName());
    command.add("worker");
    command.add("--coordinator=" + coordinator);
    command.add("--slots=" + slots);
    command.add("--name=local-" + index);
    command.add("--parent-pid=" + ProcessHandle.current().pid());
    Path log = logDir.resolve("worker-" + index + ".log");
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    processes.add(pb.start());
  }

  /** The worker processes' pids, in start order. */
  List<Long> pids() {
    return processes.stream().map(Process::pid).toList();
  }

  /** Stops every worker: politely first, then forcibly after 5 s. */
  @Override
  public void close() {
    for (Process p : processes) {
      p.destroy();
    }
    for (Process p : processes) {
      try {
        if (!p.waitFor(5, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        p.destroyForcibly();
      }
    }
  }

  Path logDir() {
    return logDir;
  }
}

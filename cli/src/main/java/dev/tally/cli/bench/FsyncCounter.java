package dev.tally.cli.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Counts the {@code fsync} and {@code fdatasync} calls of a process (all its threads) over a span, with
 * {@code strace -c -f -e trace=fsync,fdatasync -p PID}: measured, not inferred from the commits. The kernel
 * keeps no such count ({@code /proc/PID/io} has bytes and read/write calls only), so a tracer is the cheap
 * way; but strace stops the traced threads at every system call, so a span it watches runs slower than
 * one it does not, and its rates are not the ones to quote.
 *
 * <p>Thread-safety: one thread starts and stops a counter.
 */
final class FsyncCounter implements AutoCloseable {
  /** The tracer. */
  static final String STRACE = "strace";

  /** How long to wait for strace to attach to every thread, or to write its summary once stopped. */
  private static final long STRACE_WAIT_SECONDS = 30;

  /** A summary row of {@code strace -c}: {@code % time, seconds, usecs/call, calls, [errors,] syscall}. */
  private static final Pattern ROW =
      Pattern.compile("^\\s*[\\d.]+\\s+[\\d.]+\\s+\\d+\\s+(\\d+)\\s+(?:\\d+\\s+)?(fsync|fdatasync)\\s*$");

  private final Process strace;
  private final Path summary;

  private FsyncCounter(Process strace, Path summary) {
    this.strace = strace;
    this.summary = summary;
  }

  /** Whether {@value #STRACE} can be run here (on the PATH, and it starts). */
  static boolean available() {
    try {
      Process p = new ProcessBuilder(STRACE, "-V").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      return p.waitFor(STRACE_WAIT_SECONDS, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Attaches strace to every thread of process {@code pid} and returns once it has attached.
   *
   * @param pid the process to watch (this one, for the coordinator of {@code tally bench})
   * @param summary the file strace writes its summary to when stopped
   * @throws IOException if strace cannot be started, or exits (not permitted to trace, no such process)
   *     before saying it attached; the message quotes what it said
   */
  static FsyncCounter attach(long pid, Path summary) throws IOException {
    Process p = new ProcessBuilder(STRACE, "-f", "-c", "-o", summary.toString(), "-e", "trace=fsync,fdatasync",
        "-p", Long.toString(pid)).start();
    BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
    // strace says "Process N attached" (with -f: "... attached with M threads") once every thread is traced.
    String line = err.readLine();
    if (line == null || !line.contains("attached")) {
      p.destroyForcibly();
      throw new IOException("strace did not attach to process " + pid + (line == null ? "" : ": " + line));
    }
    Thread drain = new Thread(() -> {
      try {
        while (err.readLine() != null) {
          // keep its stderr from filling up: later threads' "attached" lines, the final "detached"
        }
      } catch (IOException ignored) {
        // strace is gone
      }
    }, "tally-bench-strace-stderr");
    drain.setDaemon(true);
    drain.start();
    return new FsyncCounter(p, summary);
  }

  /**
   * Detaches strace and reads its count.
   *
   * @return fsync plus fdatasync calls since {@link #attach} returned
   * @throws IOException if strace does not stop and write its summary in time, or the summary cannot be read
   */
  long stop() throws IOException, InterruptedException {
    strace.destroy(); // SIGTERM: strace detaches and writes the summary
    if (!strace.waitFor(STRACE_WAIT_SECONDS, TimeUnit.SECONDS)) {
      strace.destroyForcibly();
      throw new IOException("strace did not stop within " + STRACE_WAIT_SECONDS + " s");
    }
    return count(Files.readAllLines(summary, StandardCharsets.UTF_8));
  }

  /** The calls of fsync and fdatasync in an {@code strace -c} summary (0 for a syscall it did not list). */
  static long count(List<String> summaryLines) {
    long calls = 0;
    for (String line : summaryLines) {
      Matcher m = ROW.matcher(line);
      if (m.matches()) {
        calls += Long.parseLong(m.group(1));
      }
    }
    return calls;
  }

  /** Stops strace if {@link #stop} was not called. */
  @Override
  public void close() {
    if (strace.isAlive()) {
      strace.destroyForcibly();
    }
  }
}

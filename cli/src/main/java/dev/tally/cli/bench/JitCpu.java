package dev.tally.cli.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * How much of some processes' CPU time their JIT compilers took, read from Linux's {@code /proc}: the
 * HotSpot compiler threads ({@code C1 CompilerThread}, {@code C2 CompilerThread}, named so in {@code
 * /proc/PID/task/TID/comm}, cut to 15 characters) against all the processes' threads, in clock ticks
 * ({@code utime + stime}, fields 14 and 15 of {@code stat}, proc(5)). Both sides are in the same ticks, so
 * the share needs no tick rate.
 *
 * <p>{@code tally bench} uses it to warm up until the code it measures is compiled: a noop eval costs
 * tens of microseconds, and while C2 still compiles the hot path it takes as much CPU as the evals
 * themselves (measured: half of the coordinator's CPU in a 200,000-case run after a 20,000-case warm-up).
 *
 * <p>Thread-safety: stateless; {@link #sample} may be called from any thread.
 */
final class JitCpu {

  /** Where the compiler threads' names begin (HotSpot names them {@code C1 CompilerThread0} and so on). */
  private static final List<String> COMPILER_THREADS = List.of("C1 CompilerThre", "C2 CompilerThre");

  /** One reading: the compilers' ticks and all threads' ticks of the processes read, summed. */
  record Sample(long compilerTicks, long totalTicks) {
    /** Whether every process could be read; a sample that could not is {@link #UNKNOWN}. */
    boolean known() {
      return totalTicks >= 0;
    }

    /** The compilers' share of the CPU between {@code earlier} and this sample, 0 to 1, or -1 if not known. */
    double shareSince(Sample earlier) {
      if (!known() || !earlier.known() || totalTicks <= earlier.totalTicks) {
        return -1;
      }
      return (double) (compilerTicks - earlier.compilerTicks) / (totalTicks - earlier.totalTicks);
    }
  }

  /** A sample of processes that could not be read (not Linux, a process gone). */
  static final Sample UNKNOWN = new Sample(-1, -1);

  private JitCpu() {}

  /**
   * Reads the processes' threads now. A thread that ends between the listing and the read is left out (its
   * ticks move to nobody: the share of one round is then a little off, never wrong by more than that thread).
   *
   * @param pids the processes, each a JVM
   * @return the sums, or {@link #UNKNOWN} if {@code /proc} cannot be read for one of them
   */
  static Sample sample(List<Long> pids) {
    long compiler = 0;
    long total = 0;
    for (long pid : pids) {
      Path tasks = Path.of("/proc", Long.toString(pid), "task");
      try (var threads = Files.list(tasks)) {
        for (Path t : (Iterable<Path>) threads::iterator) {
          long ticks = ticks(t.resolve("stat"));
          if (ticks < 0) {
            continue;
          }
          total += ticks;
          String name = readQuietly(t.resolve("comm")).strip();
          if (COMPILER_THREADS.stream().anyMatch(name::startsWith)) {
            compiler += ticks;
          }
        }
      } catch (IOException | RuntimeException e) {
        return UNKNOWN;
      }
    }
    return new Sample(compiler, total);
  }

  /** A thread's utime + stime from its {@code stat}, or -1 if it is gone. */
  private static long ticks(Path stat) {
    String s = readQuietly(stat);
    // The name (field 2) is in parentheses and may hold spaces: fields are counted after its last ')'.
    int close = s.lastIndexOf(')');
    if (close < 0) {
      return -1;
    }
    String[] f = s.substring(close + 2).split(" ");
    // f[0] is field 3 (state): utime and stime, fields 14 and 15, are f[11] and f[12].
    return f.length > 12 ? Long.parseLong(f[11]) + Long.parseLong(f[12]) : -1;
  }

  private static String readQuietly(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      return "";
    }
  }
}

package dev.tally.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * Sends a signal to a process by pid with the system's {@code kill} command: Java can end a process
 * ({@code SIGTERM}, {@code SIGKILL}) but not stop or continue one ({@code SIGSTOP}, {@code SIGCONT}),
 * which the chaos run, the failover benchmark and the process tests need. The one helper for all of them.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class Signals {
  /**
   * How long {@code kill} may take. It returns in milliseconds; ten seconds is for a machine so loaded
   * that starting a process stalls, after which something is wrong enough to report.
   */
  static final long KILL_TIMEOUT_SECONDS = 10;

  private Signals() {}

  /**
   * Sends {@code signal} to process {@code pid}: {@code kill -SIGNAL PID}.
   *
   * @param pid the process
   * @param signal the signal's name without {@code SIG}: {@code STOP}, {@code CONT}, {@code KILL}, {@code TERM}
   * @throws IOException if {@code kill} cannot be started, fails (no such process, not permitted: its
   *     message is included) or does not return within {@value #KILL_TIMEOUT_SECONDS} s
   * @throws InterruptedException if interrupted while waiting for {@code kill}
   */
  public static void send(long pid, String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true).start();
    if (!kill.waitFor(KILL_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
      kill.destroyForcibly();
      throw new IOException("kill -" + signal + " " + pid + " did not return within " + KILL_TIMEOUT_SECONDS + " s");
    }
    if (kill.exitValue() != 0) {
      String said = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      throw new IOException("kill -" + signal + " " + pid + " exited with " + kill.exitValue() + (said.isEmpty() ? "" : ": " + said));
    }
  }
}

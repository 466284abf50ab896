package dev.tally.worker.eval;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Test helpers about OS processes. */
final class Processes {
  private Processes() {}

  /**
   * True if the process has ended: no {@code /proc/<pid>} entry, or a zombie (dead, waiting for a parent
   * that may never reap it: in a container, PID 1 often does not).
   */
  static boolean gone(long pid) {
    Path stat = Path.of("/proc", Long.toString(pid), "stat");
    String s;
    try {
      s = Files.readString(stat);
    } catch (IOException e) {
      return true;
    }
    // "pid (comm) S ...": the state follows the last ')' (comm may contain spaces and parentheses).
    char state = s.substring(s.lastIndexOf(')') + 2).charAt(0);
    return state == 'Z' || state == 'X';
  }
}

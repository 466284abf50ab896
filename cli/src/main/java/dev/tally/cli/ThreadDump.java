package dev.tally.cli;

import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;

/**
 * The stacks of every thread of this JVM as text, with what each waits on and who holds it: for a process
 * about to exit because it is stuck, so that its log says where. Unlike {@link ThreadInfo#toString}, every
 * frame is kept.
 *
 * <p>Thread-safety: stateless.
 */
final class ThreadDump {
  private ThreadDump() {}

  /** Every live thread's name, state, the lock it waits on and its holder, and its whole stack. */
  static String text() {
    StringBuilder b = new StringBuilder();
    for (ThreadInfo t : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
      b.append('"').append(t.getThreadName()).append("\" ").append(t.getThreadState());
      LockInfo lock = t.getLockInfo();
      if (lock != null) {
        b.append(" on ").append(lock);
        if (t.getLockOwnerName() != null) {
          b.append(" held by \"").append(t.getLockOwnerName()).append('"');
        }
      }
      b.append('\n');
      StackTraceElement[] stack = t.getStackTrace();
      MonitorInfo[] monitors = t.getLockedMonitors();
      for (int i = 0; i < stack.length; i++) {
        b.append("\tat ").append(stack[i]).append('\n');
        for (MonitorInfo m : monitors) {
          if (m.getLockedStackDepth() == i) {
            b.append("\t- locked ").append(m).append('\n');
          }
        }
      }
      for (LockInfo s : t.getLockedSynchronizers()) {
        b.append("\t- holds ").append(s).append('\n');
      }
      b.append('\n');
    }
    return b.toString();
  }
}

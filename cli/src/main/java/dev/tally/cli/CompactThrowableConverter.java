package dev.tally.cli;

import ch.qos.logback.classic.pattern.ThrowableProxyConverter;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.CoreConstants;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * How the {@code tally} command's log shows an exception: one line with the chain of causes for the
 * machine's trouble (a store that cannot be written, a file or socket that fails: {@link #TROUBLE}), the
 * full stack trace for anything else, which is a bug and needs it. A full disk makes the scheduler retry
 * and log each failed commit; ten stack traces of SQLite's internals would bury the one line that says
 * what happened and how to go on.
 *
 * <p>Thread-safety: as logback's converters, shared by the appender's threads; stateless after start.
 */
public final class CompactThrowableConverter extends ThrowableProxyConverter {
  /** Exceptions that report the environment (disk, files, network, the database), not a bug of Tally. */
  static final Set<String> TROUBLE = Set.of(
      "dev.tally.core.store.StoreException", "java.sql.SQLException", "org.sqlite.SQLiteException",
      "java.io.IOException", "java.io.UncheckedIOException", "java.net.SocketException");

  @Override
  protected String throwableProxyToString(IThrowableProxy tp) {
    if (!isTrouble(tp)) {
      return super.throwableProxyToString(tp);
    }
    List<String> chain = new ArrayList<>();
    for (IThrowableProxy t = tp; t != null; t = t.getCause()) {
      chain.add(simpleName(t.getClassName()) + ": " + t.getMessage());
    }
    return "    " + String.join("; caused by ", chain) + CoreConstants.LINE_SEPARATOR;
  }

  private static boolean isTrouble(IThrowableProxy tp) {
    for (IThrowableProxy t = tp; t != null; t = t.getCause()) {
      if (TROUBLE.contains(t.getClassName())) {
        return true;
      }
    }
    return false;
  }

  private static String simpleName(String className) {
    return className.substring(className.lastIndexOf('.') + 1);
  }
}

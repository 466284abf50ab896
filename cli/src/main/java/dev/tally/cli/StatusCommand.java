package dev.tally.cli;

import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import dev.tally.store.SqliteStore;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tally status --db FILE}: the runs in a store and their counters, and the workers as their
 * coordinator last reported them (suspicion, drain, outlier ejection). Reads only.
 */
@Command(name = "status", mixinStandardHelpOptions = true, description = "Show the runs in a store and their counters.")
final class StatusCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--db", required = true, description = "SQLite store file.")
  Path db;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    if (!Files.isRegularFile(db)) {
      spec.commandLine().getErr().println("tally: no store at " + db);
      return Main.EXIT_USAGE;
    }
    Store opened;
    try {
      opened = SqliteStore.openExisting(db); // never migrates: a coordinator may be creating it right now
    } catch (StoreException e) {
      spec.commandLine().getErr().println("tally: " + db + " is not a usable Tally store: " + e.getMessage());
      return Main.EXIT_USAGE;
    }
    try (Store store = opened) {
      List<RunView> runs = store.runs();
      if (runs.isEmpty()) {
        out.println("no runs in " + db);
        return 0;
      }

      out.printf("%-5s %-9s %8s %8s %8s %8s %8s %8s %8s %8s  %-20s %s%n",
          "run", "state", "total", "passed", "failed", "errored", "gave-up", "redeliv", "dups", "fenced", "created", "dataset");
      for (RunView r : runs) {
        RunCounters c = r.counters();
        out.printf("%-5d %-9s %8d %8d %8d %8d %8d %8d %8d %8d  %-20s %s%n",
            r.runId(), r.finished() ? "finished" : "running", c.total(), c.passed(), c.failed(), c.errored(), c.jobsFailed(),
            c.redeliveries(), c.duplicatesSuppressed(), c.staleResultsFenced(),
            Instant.ofEpochMilli(r.createdAtMillis()).toString().substring(0, 19), r.spec().dataset());
      }
      printWorkers(out, store.workerStatuses());
      return 0;
    } finally {
      out.flush();
    }
  }

  /** A worker not reported for this long is shown as gone (its coordinator reports every 2 s). */
  static final long GONE_AFTER_MILLIS = 10_000;

  private static void printWorkers(PrintWriter out, List<WorkerStatus> workers) {
    if (workers.isEmpty()) {
      return;
    }
    long now = System.currentTimeMillis();
    out.println();
    out.printf("%-16s %-6s %-18s %-9s %8s  %s%n", "worker", "state", "suspicion", "new work", "in-flight", "outlier ejection");
    for (WorkerStatus w : workers) {
      boolean live = now - w.reportedAtMillis() < GONE_AFTER_MILLIS;
      String ejection = w.ejectedUntilMillis() > now
          ? "ejected " + (w.ejectedUntilMillis() - now) / 1000 + " s more: " + w.ejectionReason()
          : w.timesEjected() > 0 ? "ejected " + w.timesEjected() + "x, last: " + w.ejectionReason() : "-";
      out.printf("%-16s %-6s %-18s %-9s %8d  %s%n", w.name(), live ? "live" : "gone", w.suspicion().isEmpty() ? "-" : w.suspicion(),
          w.acceptingWork() ? "yes" : "drained", w.inFlight(), ejection);
    }
    out.println("(suspicion: the failure detector's level, of its conviction level; reported "
        + (now - workers.get(0).reportedAtMillis()) / 1000 + " s ago at the latest)");
  }
}

package dev.tally.cli;

import dev.tally.core.stats.EstimateText;
import dev.tally.coordinator.report.RunReport;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tally status --db FILE}: the runs in a store and their counters, and the workers as their
 * coordinator last reported them (suspicion, drain, outlier ejection). Reads only.
 */
@Command(name = "status", mixinStandardHelpOptions = true, description = "Show the runs in a store and their counters.")
public final class StatusCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--db", required = true, converter = DbOptions.Converter.class, paramLabel = "STORE",
      description = "The store: " + DbOptions.GRAMMAR + ".")
  StoreLocation db;

  @Mixin DbOptions dbOptions;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    if (db instanceof StoreLocation.SqliteFile f && !Files.isRegularFile(f.file())) {
      spec.commandLine().getErr().println("tally: no store at " + f.file());
      return Main.EXIT_USAGE;
    }
    Store opened;
    try {
      // Never migrates: a coordinator may be creating it right now.
      opened = Stores.openExisting(db, dbOptions.storeOptions(db));
    } catch (StoreException e) {
      spec.commandLine().getErr().println("tally: " + db.describe() + " is not a usable Tally store: " + e.getMessage());
      return Main.EXIT_USAGE;
    }
    try (Store store = opened) {
      List<RunView> runs = store.runs();
      if (runs.isEmpty()) {
        out.println("no runs in " + db.describe());
      } else {
        printRuns(out, runs);
      }
      printWorkers(out, store.workerStatuses());
      printLeader(out, store.leader());
      return 0;
    } finally {
      out.flush();
    }
  }

  private static void printRuns(PrintWriter out, List<RunView> runs) {
    // The summary's names and counts: errored includes the cases out of attempts (jobsFailed).
    out.printf("%-5s %-9s %8s %8s %8s %8s %10s %8s %8s %8s %8s %8s %7s  %-20s %s%n",
        "run", "state", "total", "passed", "failed", "errored", "jobsFailed", "redeliv", "backups", "dups", "fenced", "accuracy",
        "score", "created", "name or dataset");
    for (RunView r : runs) {
      RunCounters c = r.counters();
      out.printf("%-5d %-9s %8d %8d %8d %8d %10d %8d %8d %8d %8d %8s %7s  %-20s %s%n",
          r.runId(), r.shownState(), c.total(), c.passed(), c.failed(), RunReport.errored(c), c.jobsFailed(),
          c.redeliveries(), c.backups(), c.duplicatesSuppressed(), c.staleResultsFenced(),
          EstimateText.percentOnly(c.accuracy().orElse(null)),
          EstimateText.meanOnly(c.meanScore().orElse(null)),
          Instant.ofEpochMilli(r.createdAtMillis()).toString().substring(0, 19),
          // A submitted run's dataset is "upload": its name says more (tally run's is its file).
          TerminalText.safe(r.name().isEmpty() ? r.spec().dataset() : r.name(), SummaryTable.ID_CHARS));
    }
  }

  /**
   * Who leads the store, as its leader row says: servers sharing a store take turns ({@code tally server}),
   * and a {@code tally run} leads its own. Nothing if no coordinator ever led it.
   */
  private static void printLeader(PrintWriter out, dev.tally.core.lead.LeaderRead read) {
    dev.tally.core.lead.LeaderRow row = read.row();
    if (row.epoch() == 0) {
      return;
    }
    String where = row.address() == null || row.address().isEmpty() ? "no address" : "at " + TerminalText.safe(row.address(), 200);
    out.printf("%nleader: epoch %d, %s; %s%n", row.epoch(), where, leaseText(row, read.storeNowMillis()));
  }

  /** The leader row's lease at the store's time {@code nowMillis}: released, renewed (with what is left), or lapsed. */
  private static String leaseText(dev.tally.core.lead.LeaderRow row, long nowMillis) {
    if (row.holder() == null || row.released()) {
      return "released: the next server to look leads";
    }
    long left = row.expiresAtMillis() - nowMillis;
    return left > 0 ? "lease renewed, " + left + " ms left" : "lease lapsed " + -left + " ms ago: no coordinator leads now";
  }

  /**
   * Workers that left this long before the latest report are not listed (only counted): a store used for
   * many runs keeps a row for every worker process that ever joined.
   */
  static final long LEFT_SHOWN_MILLIS = 10 * 60_000;

  private static void printWorkers(PrintWriter out, List<WorkerStatus> all) {
    if (all.isEmpty()) {
      return;
    }
    long now = System.currentTimeMillis();
    long latest = all.stream().mapToLong(WorkerStatus::reportedAtMillis).max().orElse(now);
    List<WorkerStatus> recent = all.stream()
        .filter(w -> w.connected() || latest - w.reportedAtMillis() <= LEFT_SHOWN_MILLIS).toList();
    out.println();
    out.printf("%-16s %-7s %-18s %-9s %8s  %s%n", "worker", "state", "suspicion", "new work", "in-flight", "outlier ejection");
    for (List<WorkerStatus> sessions : byName(recent).values()) {
      List<WorkerStatus> shown = shown(sessions);
      for (WorkerStatus w : shown) {
        WorkerStatus.Condition condition = w.condition(now);
        String state = condition.word();
        // A worker that left, or whose coordinator is gone (silent), has no suspicion, takes no work, holds
        // nothing and serves no ejection any more: only its past ejections are still true.
        boolean live = condition != WorkerStatus.Condition.LEFT && condition != WorkerStatus.Condition.SILENT;
        String ejection = live && w.ejectedUntilMillis() > now
            ? "ejected " + (w.ejectedUntilMillis() - now) / 1000 + " s more: " + w.ejectionReason()
            : w.timesEjected() > 0 ? "ejected " + w.timesEjected() + "x, last: " + w.ejectionReason() : "-";
        out.printf("%-16s %-7s %-18s %-9s %8s  %s%n", w.name(), state, !live || w.suspicion().isEmpty() ? "-" : w.suspicion(),
            !live ? "-" : w.acceptingWork() ? "yes" : "drained", live ? Integer.toString(w.inFlight()) : "-", ejection);
        if (!w.connected()) {
          out.printf("  left %s ago: %s%n", ago(now - w.reportedAtMillis()), w.leftReason());
        } else if (!live) {
          out.printf("  no report for %s: its coordinator is gone (the next one on this store marks it as left)%n",
              ago(now - w.reportedAtMillis()));
        }
      }
      int earlier = sessions.size() - shown.size();
      if (earlier > 0) {
        out.printf("  and %d earlier process%s under this name, left%n", earlier, earlier == 1 ? "" : "es");
      }
    }
    if (recent.size() < all.size()) {
      out.printf("(%s that left more than %d min before the latest report %s not shown)%n",
          Words.count(all.size() - recent.size(), "worker"), LEFT_SHOWN_MILLIS / 60_000, all.size() - recent.size() == 1 ? "is" : "are");
    }
    out.println("(suspicion: the failure detector's level, of its conviction level, at the last report, "
        + ago(now - latest) + " ago at the latest; silent: no report for " + WorkerStatus.SILENT_AFTER_MILLIS / 1000
        + " s while connected, its coordinator is gone)");
  }

  /**
   * The sessions of each worker name, by name. A name is a worker's place (local-2 is the second local
   * worker, whichever process fills it), while every process joins with an id of its own: a restarted
   * worker, or the workers a restarted coordinator starts again, are new ids under the old names, and
   * the old ids stay in the store as left.
   */
  private static Map<String, List<WorkerStatus>> byName(List<WorkerStatus> workers) {
    Map<String, List<WorkerStatus>> byName = new TreeMap<>();
    for (WorkerStatus w : workers) {
      byName.computeIfAbsent(w.name(), n -> new ArrayList<>()).add(w);
    }
    return byName;
  }

  /**
   * What to show of one name's sessions: every one still connected (two live processes may share a name),
   * else the latest to leave; the rest are only counted, so that a restart does not list the same workers
   * twice.
   */
  private static List<WorkerStatus> shown(List<WorkerStatus> sessions) {
    List<WorkerStatus> connected = sessions.stream().filter(WorkerStatus::connected).toList();
    if (!connected.isEmpty()) {
      return connected;
    }
    return List.of(sessions.stream().max(Comparator.comparingLong(WorkerStatus::reportedAtMillis)).orElseThrow());
  }

  private static String ago(long millis) {
    long s = Math.max(0, millis) / 1000;
    return s < 120 ? s + " s" : s < 7200 ? s / 60 + " min" : s / 3600 + " h";
  }
}

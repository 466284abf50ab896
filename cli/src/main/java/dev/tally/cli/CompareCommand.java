package dev.tally.cli;

import dev.tally.cli.client.ApiClient;
import dev.tally.coordinator.report.ResultLines;
import dev.tally.coordinator.report.RunComparison;
import dev.tally.core.stats.EstimateText;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.http.ApiServer;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code tally compare RUN_A RUN_B}: two finished runs compared case by case, matched by case id, from a
 * store ({@code --db}) or a server (the server options, as {@code tally results}): each run's accuracy,
 * B's minus A's over the cases both judged with its 95% interval and McNemar's test, and the cases whose
 * verdict changed. The figures are {@link RunComparison}'s, stated by {@link EstimateText}.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
@Command(
    name = "compare",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Compare two finished runs case by case: their accuracies, the difference with its 95%% interval and whether it is"
          + " beyond the noise (McNemar's exact test over the cases both judged), and the cases whose verdict changed.",
      "Reads a store (--db) or a Tally server (--server).",
      "Exit code: 0 compared; 1 no answer from the server or a store that cannot be read; 2 bad usage, an unknown or"
          + " unfinished run, runs with no case in common, or a refused token."
    })
public final class CompareCommand extends ClientCommand {
  @Parameters(index = "0", paramLabel = "RUN_A", description = "The first run's id (the baseline).")
  String runA;

  @Parameters(index = "1", paramLabel = "RUN_B", description = "The second run's id (compared against the first).")
  String runB;

  @Option(names = "--db", converter = DbOptions.Converter.class, paramLabel = "STORE",
      description = "Read the runs from this store instead of a server: " + DbOptions.GRAMMAR + ".")
  StoreLocation db;

  @Mixin DbOptions dbOptions;

  @Override
  int run(ApiClient client, PrintWriter out, PrintWriter err) throws Exception {
    long a = runId(runA);
    long b = runId(runB);
    RunComparison comparison;
    if (db != null) {
      if (db instanceof StoreLocation.SqliteFile f && !Files.isRegularFile(f.file())) {
        err.println("tally: no store at " + f.file());
        return Main.EXIT_USAGE;
      }
      try (Store store = Stores.openExisting(db, dbOptions.storeOptions(db))) {
        for (long id : new long[] {a, b}) {
          RunView run = store.run(id).orElse(null);
          if (run == null || !run.ended()) {
            err.println("tally: run " + id + (run == null ? " is not in " + db.describe() + " (tally status --db " + db.describe() + " lists its runs)"
                : " has not finished (its results are not final yet)"));
            return Main.EXIT_USAGE;
          }
        }
        comparison = RunComparison.of(ResultLines.of(store, a), ResultLines.of(store, b));
      } catch (StoreException e) {
        err.println("tally: " + db.describe() + " cannot be read: " + e.getMessage());
        return Main.EXIT_FAILED;
      }
    } else {
      Path resultsA = Files.createTempFile("tally-compare-" + a + "-", ".jsonl");
      Path resultsB = Files.createTempFile("tally-compare-" + b + "-", ".jsonl");
      try {
        ResultsCommand.download(client, ApiServer.BASE + "/runs/" + a + "/results", "results of run " + a, resultsA);
        ResultsCommand.download(client, ApiServer.BASE + "/runs/" + b + "/results", "results of run " + b, resultsB);
        comparison = RunComparison.of(ResultLines.of(resultsA), ResultLines.of(resultsB));
      } finally {
        Files.deleteIfExists(resultsA);
        Files.deleteIfExists(resultsB);
      }
    }
    if (comparison.common() == 0) {
      // Runs of two datasets (or the wrong ids): figures of nothing would read as a comparison.
      err.printf("tally: runs %d and %d have no case in common (%d cases in A, %d in B):"
          + " nothing to compare; compare two runs of one dataset%n", a, b, comparison.onlyInA(), comparison.onlyInB());
      return Main.EXIT_USAGE;
    }
    print(out, a, b, comparison);
    return Main.EXIT_PASSED;
  }

  /** The comparison for people: figures first, then the changed cases by direction. */
  static void print(PrintWriter out, long a, long b, RunComparison c) {
    out.printf("run %d (A) against run %d (B): %s in both", a, b, Words.count(c.common(), "case"));
    if (c.onlyInA() > 0 || c.onlyInB() > 0) {
      out.printf(" (%d only in A, %d only in B: not compared)", c.onlyInA(), c.onlyInB());
    }
    out.println();
    out.printf("  %-12s %s%n", "accuracy A", EstimateText.percent(c.accuracyA()));
    out.printf("  %-12s %s%n", "accuracy B", EstimateText.percent(c.accuracyB()));
    out.printf("  %-12s %s%n", "B - A", EstimateText.difference(c.paired()));
    out.printf("  %-12s %s: %d pass -> fail or error, %d fail or error -> pass, %d other%n", "changed",
        Words.count(c.changes().size(), "case"), c.count(RunComparison.Direction.PASS_TO_NOT_PASS),
        c.count(RunComparison.Direction.NOT_PASS_TO_PASS), c.count(RunComparison.Direction.OTHER));
    for (RunComparison.Direction d : RunComparison.Direction.values()) {
      List<RunComparison.Change> changes = c.changes().stream().filter(x -> x.direction() == d).toList();
      if (changes.isEmpty()) {
        continue;
      }
      out.printf("%n%s (%d):%n", switch (d) {
        case PASS_TO_NOT_PASS -> "passed in A, not in B";
        case NOT_PASS_TO_PASS -> "passed in B, not in A";
        case OTHER -> "other changes";
      }, changes.size());
      for (RunComparison.Change change : changes) {
        out.printf("  %s  %s -> %s%n", TerminalText.safe(change.id(), SummaryTable.ID_CHARS), change.before(), change.after());
      }
    }
    out.flush();
  }
}

package dev.tally.cli;

import dev.tally.coordinator.Coordinator;
import dev.tally.core.score.Judge;
import dev.tally.core.score.Scorers;
import dev.tally.core.store.RescoreResult;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * {@code tally rescore RUN --scorer SPEC... --db FILE}: judges a finished run's stored answers again with
 * other scorers, calling no evaluator (no command is run, no model is asked), then writes its results and
 * summary as {@code tally retry-errors} does and says how many verdicts changed. Judging is {@link Judge}'s
 * rule, the worker's own; the store's rule ({@link dev.tally.core.store.BatchRules#rescore}) replaces each
 * outcome and moves the run's counters in the same transaction, a page of cases at a time, and records the
 * scorers in the run's spec.
 *
 * <p>The store is held as {@code tally resume} holds it (its coordinator lock), so no other coordinator is
 * recording into it meanwhile; a run that has not finished is refused, and so is a bad spec, before anything
 * is written.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
@Command(
    name = "rescore",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Judge a finished run's stored answers again with other scorers, without running any case: no command is run,"
          + " no model is asked. Each recorded case's verdict, score and scores.* columns are replaced, the run's"
          + " counters and scorers follow, and its results and summary are written again. A case its evaluator ended in"
          + " error keeps its outcome.",
      "Exit code: 0 every case passed; 1 a case failed or errored; 2 bad usage, a bad --scorer, an unknown or unfinished run."
    })
public final class RescoreCommand extends ResumeCommand {
  @Option(names = "--scorer", paramLabel = "SPEC", required = true, description = "A scorer, as tally run's --scorer;"
      + " repeat for several (the first decides the verdict and score). They replace the run's scorers.")
  List<String> scorers = new ArrayList<>();

  private Judge judge;

  @Override
  List<String> scorerSpecs() {
    return scorers;
  }

  @Override
  boolean prepare(PrintWriter err) {
    try {
      // Files are read now, once, and inlined: the spec the run keeps must not depend on them later.
      judge = Judge.of(Scorers.withFilesInlined(scorers, path -> Files.readString(Path.of(path))));
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "--scorer: " + e.getMessage());
    }
    return super.prepare(err);
  }

  @Override
  boolean raisesCaps() {
    return false;
  }

  @Override
  long chooseRun(Coordinator coordinator, PrintWriter err) {
    RescoreResult r = coordinator.rescore(runId, judge);
    String run = "run " + runId;
    switch (r.status()) {
      case UNKNOWN_RUN -> {
        err.println("tally: there is no run " + runId + " in " + db.describe());
        return -1;
      }
      case NOT_ENDED -> {
        err.println("tally: " + run + " has not finished (its outcomes are still being recorded); finish it first: tally resume "
            + runId + " --db " + db.describe());
        return -1;
      }
      case SUPERSEDED -> {
        err.println("tally: " + run + " was rescored by another request while this one ran; its scorers are now "
            + Scorers.specsOf(coordinator.store().run(runId).orElseThrow().spec().evaluator().options()));
        return -1;
      }
      default -> {
        long kept = r.read() - r.rejudged();
        err.println("tally: " + run + ": judged " + Words.count(r.rejudged(), "case") + " again with "
            + String.join(" ", judge.specs()) + "; " + Words.count(r.verdictsChanged(), "case") + " changed verdict"
            + (kept == 0 ? "" : " (" + Words.count(kept, "case") + " the evaluator ended in error kept "
                + (kept == 1 ? "its outcome" : "their outcomes") + ")"));
        return runId;
      }
    }
  }

  @Override
  String resumeCommand(long unused) {
    return "tally rescore " + runId + " --db " + db.describe() + " with the same --scorer options";
  }
}

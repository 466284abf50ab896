package dev.tally.cli;

import dev.tally.coordinator.Coordinator;
import dev.tally.core.store.RunView;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import picocli.CommandLine.Command;
import dev.tally.store.StoreLocation;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code tally resume RUN --db FILE}: takes over an unfinished run (its coordinator died) and runs it to
 * the end. Cases already recorded are not run again; the cases come from the store, not the dataset.
 */
@Command(
    name = "resume",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Finish an unfinished run in a store (for example after its coordinator was killed).",
      "Running the same 'tally run' command again does the same for its dataset.",
      "Exit code: 0 every case passed; 1 a case failed or errored; 2 bad usage or bad input."
    })
public class ResumeCommand extends RunnerCommand {
  @Parameters(index = "0", paramLabel = "RUN", description = "The run's id (see tally status).")
  long runId;

  @Option(names = "--db", required = true, converter = DbOptions.Converter.class, paramLabel = "STORE",
      description = "The store that holds the run: " + DbOptions.GRAMMAR + ".")
  StoreLocation db;

  @Option(names = "--max-tokens", paramLabel = "N", description = "model: a new token cap for the run (a run paused at its cap goes on up to this one).")
  String maxTokens;

  @Option(names = "--max-cost", paramLabel = "USD", description = "model: a new spend cap for the run, in USD (a run paused at its cap goes on up to this one).")
  String maxCost;

  /** Whether this command raises caps ({@code --max-tokens}, {@code --max-cost}): only {@code tally resume}. */
  boolean raisesCaps() {
    return true;
  }

  @Override
  boolean prepare(PrintWriter err) {
    if (!raisesCaps() && (maxTokens != null || maxCost != null)) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(),
          "--max-tokens and --max-cost raise a paused run's caps: they are tally resume's");
    }
    if (db instanceof StoreLocation.SqliteFile f && !Files.isRegularFile(f.file())) {
      err.println("tally: no store at " + f.file());
      return false;
    }
    // Looked up before this process leads the store: asked for a run that is not there, it changes nothing
    // in it (no leader epoch). A store it cannot read this way (an older schema, to be migrated) is left to
    // the coordinator, which says what is wrong; chooseRun looks again once it leads.
    try (dev.tally.store.JdbcStore store = dev.tally.store.Stores.openExisting(db, storeOptions())) {
      if (store.run(runId).isEmpty()) {
        err.println("tally: there is no run " + runId + " in " + db.describe());
        return false;
      }
    } catch (dev.tally.core.store.StoreException e) {
      return true;
    }
    return true;
  }

  @Override
  StoreLocation db() {
    return db;
  }

  @Override
  long chooseRun(Coordinator coordinator, PrintWriter err) {
    Optional<RunView> run = coordinator.store().run(runId);
    if (run.isEmpty()) {
      err.println("tally: there is no run " + runId + " in " + db.describe());
      return -1;
    }
    if (run.get().ended()) {
      err.println("tally: run " + runId + " has already " + (run.get().state() == dev.tally.core.store.RunState.CANCELLED ? "been cancelled" : "finished") + "; writing its results");
      return runId;
    }
    if (!raiseCaps(coordinator, run.get(), err)) {
      return -1;
    }
    if (run.get().pausedReason() != null) {
      coordinator.store().unpause(runId);
      err.println("tally: run " + runId + " was paused (" + run.get().pausedReason() + "); going on with it");
    }
    reportTakeOver(coordinator.resumption().takeOver(run.get()), err);
    return runId;
  }

  /** Sets the run's caps given on the command line, checked as a submission's are; false if refused. */
  private boolean raiseCaps(Coordinator coordinator, dev.tally.core.store.RunView run, PrintWriter err) {
    java.util.Map<String, String> caps = new java.util.LinkedHashMap<>();
    if (maxTokens != null) {
      caps.put(dev.tally.core.FleetLimits.MAX_TOKENS, maxTokens);
    }
    if (maxCost != null) {
      caps.put(dev.tally.core.FleetLimits.MAX_COST, maxCost);
    }
    if (caps.isEmpty()) {
      return true;
    }
    try {
      dev.tally.core.FleetLimits.withCaps(run.spec().evaluator().options(), caps);
    } catch (dev.tally.core.FleetLimits.LimitException e) {
      err.println("tally: " + e.getMessage());
      return false;
    }
    coordinator.store().putRunOptions(runId, caps);
    err.println("tally: run " + runId + "'s caps are now " + caps);
    return true;
  }

  @Override
  String resumeCommand(long unused) {
    return resumeInvocation(runId);
  }
}

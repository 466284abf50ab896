package dev.tally.cli;

import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunView;
import java.util.List;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.store.SqliteStore;
import dev.tally.worker.LocalWorker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code tally run DATASET}: submits a dataset to an embedded coordinator on a SQLite file, starts local
 * worker processes (and accepts remote ones on {@code --listen}), shows progress, and writes the results
 * and the summary.
 */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    description = {
      "Run every case of a JSON Lines dataset on local (and remote) workers.",
      "Exit code: 0 every case passed; 1 a case failed or errored; 2 bad usage or bad input."
    })
public final class RunCommand extends RunnerCommand {
  /** Placeholders in an exec template: {field}. */
  static final Pattern PLACEHOLDER = Pattern.compile("\\{([^{}\\s]+)}");

  @Mixin EvaluatorOptions evaluatorOptions;

  @Parameters(index = "0", paramLabel = "DATASET", description = "JSON Lines file: one case per line, each an object with a unique string \"id\".")
  Path dataset;

  @Option(names = "--max-attempts", defaultValue = "" + dev.tally.core.RedeliveryPolicy.AttemptLimits.DEFAULT_MAX_ATTEMPTS, description = "Attempts per case; a case whose attempts all end in infrastructure failures is reported as error with its attempt history (default: ${DEFAULT-VALUE}).")
  int maxAttempts;

  private EvaluatorSpec evaluator;
  private Dataset cases;

  @Override
  boolean prepare(PrintWriter err) {
    if (maxAttempts < 1) {
      throw new ParameterException(spec.commandLine(), "--max-attempts must be >= 1, got " + maxAttempts);
    }
    evaluator = evaluatorOptions.toSpec(spec.commandLine());
    try {
      cases = Dataset.read(dataset);
      String template = evaluator.options().get("cmd");
      if (template != null) {
        cases.requireFields(placeholders(template), "--cmd");
      }
      return true;
    } catch (DatasetException e) {
      err.println("tally: " + e.getMessage());
      return false;
    }
  }

  @Override
  Path dbFile() {
    return db != null ? db : dataset.toAbsolutePath().getParent().resolve("tally.db");
  }

  /**
   * The run to execute: an unfinished run of the same dataset and settings if the store has one (a
   * coordinator that died mid-run is resumed, and no case already recorded runs again), else a new one.
   * "The same" means the same dataset path, evaluator, options, case timeout and attempt limit, and the
   * same cases: same ids in the same order, with the same content ({@link Dataset#digest()}). A dataset
   * edited since is a new run, and the message says how to finish the old one.
   */
  @Override
  long chooseRun(Store store, PrintWriter err) {
    RunSpec runSpec = new RunSpec(dataset.toAbsolutePath().toString(), evaluator, maxAttempts, cases.digest());
    List<String> ids = cases.cases().stream().map(CaseRecord::caseId).toList();
    for (RunView r : store.runs()) {
      if (!r.finished() && r.spec().equals(runSpec) && r.counters().total() == ids.size()
          && store.jobs(r.runId()).stream().map(JobView::caseId).toList().equals(ids)) {
        return resume(store, r, err);
      }
    }
    for (RunView r : store.runs()) {
      RunSpec old = r.spec();
      if (!r.finished() && old.dataset().equals(runSpec.dataset()) && old.evaluator().equals(runSpec.evaluator())
          && old.maxAttempts() == runSpec.maxAttempts()) {
        err.printf("tally: %s changed since unfinished run %d was made from it; starting a new run"
            + " (tally resume %d --db %s finishes the old one with the cases it stored)%n",
            dataset, r.runId(), r.runId(), dbFile());
      }
    }
    return store.createRun(runSpec, cases.cases());
  }

  /** The field names an exec template's {@code {field}} placeholders use, in order of appearance. */
  static Set<String> placeholders(String template) {
    Set<String> fields = new LinkedHashSet<>();
    Matcher m = PLACEHOLDER.matcher(template);
    while (m.find()) {
      fields.add(m.group(1));
    }
    return fields;
  }

  /** The options that choose and configure the evaluator; shared by run and bench. */
  static final class EvaluatorOptions {
    enum Kind {
      exec,
      sleep,
      noop
    }

    @Option(names = "--evaluator", defaultValue = "exec", description = "exec, sleep or noop (default: ${DEFAULT-VALUE}).")
    Kind evaluator;

    @Option(names = "--cmd", description = "exec: the command per case; {field} is replaced by the case's field, as one argument. The case JSON is on stdin.")
    String cmd;

    @Option(names = "--millis", description = "sleep: milliseconds per case when the case has no \"millis\" field (default 0).")
    Long millis;

    @Option(names = "--case-timeout", defaultValue = "10m", converter = DurationConverter.class, description = "Time budget of one attempt; past it the case is killed and retried elsewhere (default: ${DEFAULT-VALUE}).")
    Duration caseTimeout;

    EvaluatorSpec toSpec(picocli.CommandLine cl) {
      Map<String, String> options = new LinkedHashMap<>();
      switch (evaluator) {
        case exec:
          if (cmd == null || cmd.isBlank()) {
            throw new ParameterException(cl, "--evaluator exec needs --cmd TEMPLATE, e.g. --cmd 'python3 -m test {id}'");
          }
          options.put("cmd", cmd);
          break;
        case sleep:
          if (millis != null) {
            if (millis < 0) { // checked here too, though only sleep uses it
              throw new ParameterException(cl, "--millis must be >= 0, got " + millis);
            }
            options.put("millis", Long.toString(millis));
          }
          break;
        default:
          break;
      }
      if (millis != null && evaluator != Kind.sleep) {
        throw new ParameterException(cl, "--millis is only for --evaluator sleep");
      }
      if (cmd != null && evaluator != Kind.exec) {
        throw new ParameterException(cl, "--cmd is only for --evaluator exec");
      }
      if (caseTimeout.isZero() || caseTimeout.isNegative()) {
        throw new ParameterException(cl, "--case-timeout must be positive, got " + caseTimeout);
      }
      return new EvaluatorSpec(evaluator.name(), options, caseTimeout);
    }
  }
}

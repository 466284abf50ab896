package dev.tally.cli;

import dev.tally.coordinator.Coordinator;
import dev.tally.core.store.RetryResult;
import java.io.PrintWriter;
import picocli.CommandLine.Command;

/**
 * {@code tally retry-errors RUN --db FILE}: runs a finished run's errored cases again (recorded {@code
 * error}, or out of attempts) as new attempts of the same run, on local workers as {@code tally resume}
 * does, then writes its results and summary. The store's rule is {@link
 * dev.tally.core.store.BatchRules#retryErrors}: every other case keeps its outcome, and each retried case is
 * counted once, when its new outcome is recorded.
 */
@Command(
    name = "retry-errors",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Run a finished run's errored cases again (verdict error, or out of attempts) as new attempts of the same"
          + " run; the other cases keep their outcomes, and each case is counted once.",
      "Exit code: 0 every case passed; 1 a case failed or errored; 2 bad usage, an unknown, running or cancelled run."
    })
public final class RetryErrorsCommand extends ResumeCommand {

  @Override
  boolean raisesCaps() {
    return false;
  }

  @Override
  long chooseRun(Coordinator coordinator, PrintWriter err) {
    RetryResult r = coordinator.store().retryErrors(runId, System.currentTimeMillis());
    String run = "run " + runId;
    switch (r.status()) {
      case UNKNOWN_RUN -> {
        err.println("tally: there is no run " + runId + " in " + db.describe());
        return -1;
      }
      case NOT_ENDED -> {
        err.println("tally: " + run + " has not finished (its own attempts still retry); finish it first: tally resume "
            + runId + " --db " + db.describe());
        return -1;
      }
      case CANCELLED -> {
        err.println("tally: " + run + " was cancelled; its errors are not retried");
        return -1;
      }
      case NOTHING_TO_RETRY -> {
        err.println("tally: " + run + " has no errored case; writing its results");
        return runId;
      }
      default -> {
        err.println("tally: " + run + ": running " + Words.count(r.retried(), "case") + " again (" + r.recordedErrors()
            + " errored, " + r.outOfAttempts() + " out of attempts)");
        return runId;
      }
    }
  }
}

package dev.tally.cli;

import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * A run's attempt limits, shared by {@code tally run} and {@code tally submit}: how many attempts a case
 * gets, and how many more a case that timed out. The defaults and the rule are {@link AttemptLimits}'.
 *
 * <p>Thread-safety: filled by picocli, then read by the command's thread.
 */
public final class AttemptOptions {
  @Spec(Spec.Target.MIXEE) CommandSpec mixee;

  @Option(names = "--max-attempts", defaultValue = "" + AttemptLimits.DEFAULT_MAX_ATTEMPTS, description = "Attempts per case; a case whose attempts all end in infrastructure failures is reported as error with its attempt history (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int maxAttempts;

  @Option(names = "--timeout-retries", defaultValue = "" + AttemptLimits.DEFAULT_TIMEOUT_RETRIES, description = "How many more times a case that ran past --case-timeout is tried (on another worker) before it ends as error, timed out; a hanging case most often hangs everywhere (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int timeoutRetries;

  /**
   * The limits as given.
   *
   * @throws ParameterException naming the option if a value is out of range
   */
  AttemptLimits limits() {
    if (maxAttempts < 1) {
      throw new ParameterException(mixee.commandLine(), "--max-attempts must be >= 1, got " + maxAttempts);
    }
    if (timeoutRetries < 0) {
      throw new ParameterException(mixee.commandLine(), "--timeout-retries must be >= 0, got " + timeoutRetries);
    }
    return new AttemptLimits(maxAttempts, timeoutRetries);
  }

  /** Whether {@code --max-attempts} was typed (a submission sends only what was typed; the server has the defaults). */
  boolean maxAttemptsGiven() {
    return mixee.commandLine().getParseResult().hasMatchedOption("--max-attempts");
  }

  /** Whether {@code --timeout-retries} was typed. */
  boolean timeoutRetriesGiven() {
    return mixee.commandLine().getParseResult().hasMatchedOption("--timeout-retries");
  }
}

package dev.tally.core.store;

import dev.tally.core.Outcome;

/**
 * How one transaction moves one run's counters, summed over the transaction so that each touched run is
 * written once. Only {@link BatchRules} adds to it; a store applies it to the run's row in the same
 * transaction.
 *
 * <p>Thread-safety: none; one transaction's.
 */
public final class CounterDelta {
  long passed;
  long failed;
  long errored;
  long jobsFailed;
  long duplicates;
  long fenced;
  long redeliveries;
  long cancelled;
  long scored;
  double scoreSum;
  double scoreSumOfSquares;
  long promptTokens;
  long completionTokens;
  long backups;

  /** A journalled response's tokens: the run's spend. */
  void used(dev.tally.core.TokenUsage usage) {
    promptTokens += usage.promptTokens();
    completionTokens += usage.completionTokens();
  }

  public long promptTokens() {
    return promptTokens;
  }

  public long completionTokens() {
    return completionTokens;
  }

  void recorded(Outcome outcome) {
    switch (outcome.verdict()) {
      case PASS -> passed++;
      case FAIL -> failed++;
      case ERROR -> errored++;
    }
    Double score = outcome.score();
    if (score != null) {
      scored++;
      scoreSum += score;
      scoreSumOfSquares += score * score;
    }
  }

  /**
   * Gives back what {@link #recorded} counted for {@code outcome}: for an outcome replaced by another in the
   * same transaction ({@link BatchRules#rescore}), which then counts the new one.
   */
  void unrecorded(Outcome outcome) {
    switch (outcome.verdict()) {
      case PASS -> passed--;
      case FAIL -> failed--;
      case ERROR -> errored--;
    }
    Double score = outcome.score();
    if (score != null) {
      scored--;
      scoreSum -= score;
      scoreSumOfSquares -= score * score;
    }
  }

  public long passed() {
    return passed;
  }

  public long failed() {
    return failed;
  }

  public long errored() {
    return errored;
  }

  public long jobsFailed() {
    return jobsFailed;
  }

  public long duplicatesSuppressed() {
    return duplicates;
  }

  public long staleResultsFenced() {
    return fenced;
  }

  public long redeliveries() {
    return redeliveries;
  }

  public long cancelled() {
    return cancelled;
  }

  /** Backup attempts started. */
  public long backups() {
    return backups;
  }

  /** Recorded outcomes with a score. */
  public long scored() {
    return scored;
  }

  /** The sum of their scores. */
  public double scoreSum() {
    return scoreSum;
  }

  /** The sum of their squares. */
  public double scoreSumOfSquares() {
    return scoreSumOfSquares;
  }

  /** Jobs this delta ends: recorded, failed or cancelled. */
  public long ended() {
    return passed + failed + errored + jobsFailed + cancelled;
  }

  /** Whether it changes nothing. */
  public boolean isZero() {
    // The sums too: a replaced outcome's score can change with the number of scores unchanged (a rescore).
    return (passed | failed | errored | jobsFailed | duplicates | fenced | redeliveries | cancelled | scored
        | promptTokens | completionTokens | backups) == 0 && scoreSum == 0 && scoreSumOfSquares == 0;
  }

  /**
   * The counters after this delta, for a store that keeps counters as values (a SQL store does the same
   * in its UPDATE, guarded by the schema's CHECK).
   *
   * @throws StoreException if the run would count more ended jobs than it has (invariant I2): the
   *     transaction must abort
   */
  public RunCounters applyTo(long runId, RunCounters before) {
    long ended = before.ended() + ended();
    if (ended > before.total()) {
      throw new StoreException("run " + runId + " would count " + ended + " ended jobs of " + before.total()
          + " (I2: passed + failed + errored + jobs_failed + cancelled <= total)");
    }
    return new RunCounters(before.total(), before.passed() + passed, before.failed() + failed,
        before.errored() + errored, before.jobsFailed() + jobsFailed, before.duplicatesSuppressed() + duplicates,
        before.staleResultsFenced() + fenced, before.redeliveries() + redeliveries, before.cancelled() + cancelled,
        before.scored() + scored, before.scoreSum() + scoreSum, before.scoreSumOfSquares() + scoreSumOfSquares,
        before.promptTokens() + promptTokens, before.completionTokens() + completionTokens, before.backups() + backups);
  }
}

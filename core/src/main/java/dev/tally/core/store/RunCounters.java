package dev.tally.core.store;

import dev.tally.core.stats.Estimate;
import dev.tally.core.stats.Estimates;
import java.util.Optional;

/**
 * A run's counters, as the store keeps them. They advance only inside the transaction that changes a
 * job's state, so they always equal what the jobs table says.
 *
 * @param total jobs in the run
 * @param passed jobs recorded with verdict pass
 * @param failed jobs recorded with verdict fail
 * @param errored jobs recorded with verdict error
 * @param jobsFailed jobs that ended {@code failed}: out of attempts, never recorded
 * @param duplicatesSuppressed results that arrived for a job already recorded under the same token
 * @param staleResultsFenced results that arrived from a holder of a revoked or superseded lease
 * @param redeliveries attempts that ended retryably and put their job back in the queue
 * @param cancelled jobs that ended because their run was cancelled before they did
 * @param scored recorded jobs whose outcome carries a score
 * @param scoreSum the sum of those scores
 * @param scoreSumOfSquares the sum of their squares (with {@code scored} and {@code scoreSum}, what
 *     {@link Estimates#mean} needs for the mean score and its interval)
 * @param promptTokens tokens the run's journalled responses report for their requests (its paid calls)
 * @param completionTokens tokens those responses report for their answers
 * @param backups backup attempts started (speculative execution: a copy of a straggling case on another
 *     worker; whichever attempt reports first is recorded, the other abandoned and never counted)
 */
public record RunCounters(
    long total,
    long passed,
    long failed,
    long errored,
    long jobsFailed,
    long duplicatesSuppressed,
    long staleResultsFenced,
    long redeliveries,
    long cancelled,
    long scored,
    double scoreSum,
    double scoreSumOfSquares,
    long promptTokens,
    long completionTokens,
    long backups) {

  /** Counters of a run of {@code total} jobs of which nothing happened yet; see {@link #builder}. */
  public static RunCounters empty(long total) {
    return builder(total).build();
  }

  /** Counters with every field named: {@code RunCounters.builder(3).passed(2).jobsFailed(1).build()}. */
  public static Builder builder(long total) {
    return new Builder(total);
  }

  /** Builds {@link RunCounters} by name; every field starts at 0. Not thread-safe. */
  public static final class Builder {
    private final long total;
    private long passed;
    private long failed;
    private long errored;
    private long jobsFailed;
    private long duplicatesSuppressed;
    private long staleResultsFenced;
    private long redeliveries;
    private long cancelled;
    private long scored;
    private double scoreSum;
    private double scoreSumOfSquares;
    private long promptTokens;
    private long completionTokens;
    private long backups;

    private Builder(long total) {
      this.total = total;
    }

    public Builder passed(long n) {
      passed = n;
      return this;
    }

    public Builder failed(long n) {
      failed = n;
      return this;
    }

    public Builder errored(long n) {
      errored = n;
      return this;
    }

    public Builder jobsFailed(long n) {
      jobsFailed = n;
      return this;
    }

    public Builder duplicatesSuppressed(long n) {
      duplicatesSuppressed = n;
      return this;
    }

    public Builder staleResultsFenced(long n) {
      staleResultsFenced = n;
      return this;
    }

    public Builder redeliveries(long n) {
      redeliveries = n;
      return this;
    }

    public Builder cancelled(long n) {
      cancelled = n;
      return this;
    }

    /** The score moments: how many scores, their sum and the sum of their squares. */
    public Builder scores(long n, double sum, double sumOfSquares) {
      scored = n;
      scoreSum = sum;
      scoreSumOfSquares = sumOfSquares;
      return this;
    }

    /** The tokens of the run's journalled responses. */
    public Builder tokens(long prompt, long completion) {
      promptTokens = prompt;
      completionTokens = completion;
      return this;
    }

    public Builder backups(long n) {
      backups = n;
      return this;
    }

    public RunCounters build() {
      return new RunCounters(total, passed, failed, errored, jobsFailed, duplicatesSuppressed, staleResultsFenced,
          redeliveries, cancelled, scored, scoreSum, scoreSumOfSquares, promptTokens, completionTokens, backups);
    }
  }

  /** The tokens of the run's journalled responses, prompt and completion together. */
  public long tokens() {
    return promptTokens + completionTokens;
  }

  /** Jobs with a recorded outcome: {@code passed + failed + errored}. */
  public long recorded() {
    return passed + failed + errored;
  }

  /** Jobs that have ended: recorded, failed or cancelled. */
  public long ended() {
    return recorded() + jobsFailed + cancelled;
  }

  /**
   * Jobs judged for accuracy: recorded with any verdict, or out of attempts (which every report counts as
   * errored). Cancelled jobs were never judged and are left out.
   */
  public long judged() {
    return recorded() + jobsFailed;
  }

  /**
   * Accuracy so far: passed over {@link #judged} (an errored case counts against it), with its Wilson
   * interval ({@link Estimates#proportion}).
   *
   * @return empty while no job has been judged
   */
  public Optional<Estimate> accuracy() {
    return Estimates.proportion(passed, judged());
  }

  /**
   * The mean of the recorded scores so far, with its Student's t interval ({@link Estimates#mean}).
   *
   * @return empty while no recorded outcome carries a score
   */
  public Optional<Estimate> meanScore() {
    return Estimates.mean(scored, scoreSum, scoreSumOfSquares);
  }

  /** Whether every job has ended: recorded, failed or cancelled. */
  public boolean finished() {
    return ended() == total;
  }
}

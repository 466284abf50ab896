package dev.tally.core;

import java.util.Map;
import java.util.Objects;

/**
 * One leased attempt at a job, as sent to a worker.
 *
 * @param jobId the store's id of the job
 * @param runId the run the job belongs to
 * @param token the lease's fencing token: strictly greater than every token issued before for this job
 * @param attempt 1 for the first attempt, 2 for the first redelivery, ...
 * @param caseId the case's {@code id}
 * @param caseJson the case's whole JSON object
 * @param evaluator how the run evaluates its cases (shared by all of the run's assignments)
 * @param journal the responses earlier attempts of this case journalled, by request digest ({@link
 *     JournalEntry}); at most {@link JournalEntry#MAX_ASSIGNMENT_JOURNAL_BYTES} of them; usually empty
 */
public record Assignment(
    long jobId, long runId, long token, int attempt, String caseId, String caseJson, EvaluatorSpec evaluator,
    Map<String, String> journal) {
  public Assignment {
    Objects.requireNonNull(caseId, "caseId");
    Objects.requireNonNull(caseJson, "caseJson");
    Objects.requireNonNull(evaluator, "evaluator");
    journal = journal.isEmpty() ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(journal));
  }

  /** An assignment of a case with nothing journalled. */
  public Assignment(long jobId, long runId, long token, int attempt, String caseId, String caseJson,
      EvaluatorSpec evaluator) {
    this(jobId, runId, token, attempt, caseId, caseJson, evaluator, Map.of());
  }

  /** This assignment carrying {@code journal} (see the record's doc). */
  public Assignment withJournal(Map<String, String> journal) {
    return new Assignment(jobId, runId, token, attempt, caseId, caseJson, evaluator, journal);
  }
}

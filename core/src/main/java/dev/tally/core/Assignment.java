package dev.tally.core;

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
 */
public record Assignment(
    long jobId, long runId, long token, int attempt, String caseId, String caseJson, EvaluatorSpec evaluator) {
  public Assignment {
    Objects.requireNonNull(caseId, "caseId");
    Objects.requireNonNull(caseJson, "caseJson");
    Objects.requireNonNull(evaluator, "evaluator");
  }
}

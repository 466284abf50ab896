package dev.tally.worker.eval;

import dev.tally.core.EffectKey;
import java.util.Objects;

/**
 * Which attempt an evaluation is: its run, job and case, the attempt's number and fencing token, and the
 * case's idempotency key. An evaluator hands these on to whatever it acts on (the exec evaluator as {@code
 * TALLY_*} environment variables, see {@link ExecEvaluator#caseEnvironment}), so that a receiver can make a
 * repeated attempt harmless.
 *
 * @param runId the run's id in its store
 * @param jobId the job's id in its store
 * @param caseId the case's {@code id}
 * @param attempt 1 for the first attempt at the job, 2 for the first redelivery, ...
 * @param fencingToken the lease's fencing token: greater for every later attempt at the job
 * @param idempotencyKey {@link EffectKey#of}(store, run, case): the same for every attempt of this case of
 *     this run, different for every other case and run
 */
public record CaseAttempt(long runId, long jobId, String caseId, int attempt, long fencingToken, String idempotencyKey) {
  /** @throws NullPointerException if {@code caseId} or {@code idempotencyKey} is null */
  public CaseAttempt {
    Objects.requireNonNull(caseId, "caseId");
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
  }

  /**
   * The attempt, with its idempotency key computed from the store it belongs to.
   *
   * @param storeId the store's identity (a worker has it from its coordinator's Welcome)
   * @throws NullPointerException if {@code storeId} or {@code caseId} is null
   */
  public static CaseAttempt of(String storeId, long runId, long jobId, String caseId, int attempt, long fencingToken) {
    return new CaseAttempt(runId, jobId, caseId, attempt, fencingToken, EffectKey.of(storeId, runId, caseId));
  }
}

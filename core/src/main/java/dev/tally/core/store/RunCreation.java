package dev.tally.core.store;

import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import java.time.Duration;

/**
 * How a run is created, written once for every store: the run row, then each case as the source yields it
 * (no list of all cases anywhere on this path: a run of a million cases holds one in memory), then its total,
 * then the idempotency key it completes, if any; all inside the caller's one transaction, so a bad case, a
 * repeated id or a lost key reservation leaves nothing written.
 *
 * <p>Repeated ids are found by the store's unique constraint on (run, case id), not by remembering ids, and
 * reported with the place of the second one and of the first ({@link CaseSourceException#duplicateId}).
 *
 * <p>Stateless; thread-safe.
 */
public final class RunCreation {
  private RunCreation() {}

  /**
   * Creates the run inside the caller's open transaction.
   *
   * @param completion the key to complete, or null
   * @return the run as it will commit, and the key's response
   * @throws CaseSourceException if the source refuses a case, or two cases share an id or a position; the
   *     caller must roll back
   * @throws KeyReservationLostException if the key is no longer held by the completion's reservation; the
   *     caller must roll back
   */
  public static CreatedRun create(StoreTransaction tx, NewRun run, CaseSource cases, KeyCompletion completion,
      long nowMillis) throws CaseSourceException, KeyReservationLostException {
    NewRun stored = new NewRun(asStored(run.spec()), run.name());
    long runId = tx.insertRun(stored, nowMillis);
    long total = 0;
    for (CaseRecord c; (c = cases.next()) != null; ) {
      if (!tx.insertJob(runId, c)) {
        int first = tx.positionOfCase(runId, c.caseId());
        if (first >= 0) {
          throw CaseSourceException.duplicateId(cases, c.position(), first, c.caseId());
        }
        throw cases.refuse(c.position(), "position " + c.position() + " is given to two cases");
      }
      total++;
    }
    tx.setRunTotal(runId, total, nowMillis);
    RunState state = total == 0 ? RunState.FINISHED : RunState.RUNNING;
    RunView view = new RunView(runId, stored.name(), stored.spec(), state, nowMillis, total == 0 ? nowMillis : 0,
        RunCounters.empty(total));
    StoredResponse response = completion == null ? null : IdempotencyRules.complete(tx, completion, view, nowMillis);
    return new CreatedRun(view, response);
  }

  /** The spec as every store keeps it: the case timeout in whole milliseconds. */
  public static RunSpec asStored(RunSpec spec) {
    EvaluatorSpec e = spec.evaluator();
    return new RunSpec(spec.dataset(), new EvaluatorSpec(e.kind(), e.options(), Duration.ofMillis(e.caseTimeout().toMillis())),
        spec.limits(), spec.datasetDigest());
  }
}

package dev.tally.simulation;

import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.CaseQuery;
import dev.tally.core.store.CaseView;
import dev.tally.core.store.CreatedRun;
import dev.tally.core.store.KeyClaim;
import dev.tally.core.store.KeyCompletion;
import dev.tally.core.store.KeyReservationLostException;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.WorkerStatus;
import java.util.List;
import java.util.Optional;

/**
 * A store that passes every call to another: the base of the simulation's fault-injecting wrappers, each
 * of which overrides only the calls it changes.
 */
abstract class ForwardingStore implements Store {
  protected final Store delegate;

  ForwardingStore(Store delegate) {
    this.delegate = delegate;
  }

  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    return delegate.apply(batch);
  }

  @Override
  public CreatedRun createRun(NewRun run, CaseSource cases, KeyCompletion completion)
      throws CaseSourceException, KeyReservationLostException {
    return delegate.createRun(run, cases, completion);
  }

  @Override
  public CancelResult cancelRun(long runId, long nowMillis) {
    return delegate.cancelRun(runId, nowMillis);
  }

  @Override
  public dev.tally.core.store.RetryResult retryErrors(long runId, long nowMillis) {
    return delegate.retryErrors(runId, nowMillis);
  }

  @Override
  public boolean putRunOptions(long runId, java.util.Map<String, String> options) {
    return delegate.putRunOptions(runId, options);
  }

  @Override
  public void forEachCase(long runId, java.util.function.BiPredicate<String, String> each) {
    delegate.forEachCase(runId, each);
  }

  @Override
  public boolean unpause(long runId) {
    return delegate.unpause(runId);
  }

  @Override
  public dev.tally.core.store.RescorePage rescore(long runId, dev.tally.core.score.Judge judge, int afterPosition,
      long nowMillis) {
    return delegate.rescore(runId, judge, afterPosition, nowMillis);
  }

  @Override
  public KeyClaim claimKey(String scope, String key, String fingerprint, long nowMillis, long holdUntilMillis) {
    return delegate.claimKey(scope, key, fingerprint, nowMillis, holdUntilMillis);
  }

  @Override
  public boolean renewKey(String scope, String key, String reservationToken, long holdUntilMillis) {
    return delegate.renewKey(scope, key, reservationToken, holdUntilMillis);
  }

  @Override
  public void releaseKey(String scope, String key, String reservationToken) {
    delegate.releaseKey(scope, key, reservationToken);
  }

  @Override
  public int purgeKeys(long nowMillis) {
    return delegate.purgeKeys(nowMillis);
  }

  @Override
  public int releaseHeldKeys() {
    return delegate.releaseHeldKeys();
  }

  @Override
  public List<RunView> runs(RunPage page) {
    return delegate.runs(page);
  }

  @Override
  public List<CaseView> cases(long runId, CaseQuery query) {
    return delegate.cases(runId, query);
  }

  @Override
  public List<dev.tally.core.store.ProgressBucket> progress(long runId, long spanMillis) {
    return delegate.progress(runId, spanMillis);
  }

  @Override
  public Optional<List<AttemptView>> attempts(long runId, String caseId) {
    return delegate.attempts(runId, caseId);
  }

  @Override
  public java.util.Map<String, String> journalledResponses(long runId, String caseId) {
    return delegate.journalledResponses(runId, caseId);
  }

  @Override
  public int releaseLeases(long runId, long nowMillis, dev.tally.core.RedeliveryPolicy redelivery) {
    return delegate.releaseLeases(runId, nowMillis, redelivery);
  }

  @Override
  public Optional<RunView> run(long runId) {
    return delegate.run(runId);
  }

  @Override
  public List<RunView> runs() {
    return delegate.runs();
  }

  @Override
  public List<JobView> jobs(long runId) {
    return delegate.jobs(runId);
  }

  @Override
  public List<AttemptView> attempts(long runId) {
    return delegate.attempts(runId);
  }

  @Override
  public void saveWorkerStatuses(List<WorkerStatus> statuses) {
    delegate.saveWorkerStatuses(statuses);
  }

  @Override
  public List<WorkerStatus> workerStatuses() {
    return delegate.workerStatuses();
  }

  @Override
  public String storeId() {
    return delegate.storeId();
  }

  @Override
  public dev.tally.core.lead.LeaderRead leader() {
    return delegate.leader();
  }

  @Override
  public boolean swapLeader(dev.tally.core.lead.LeaderRow expected, dev.tally.core.lead.LeaderRow next) {
    return delegate.swapLeader(expected, next);
  }

  @Override
  public void writeAs(long epoch) {
    delegate.writeAs(epoch);
  }

  @Override
  public long writeEpoch() {
    return delegate.writeEpoch();
  }

  @Override
  public long commits() {
    return delegate.commits();
  }

  @Override
  public void close() {
    delegate.close();
  }
}

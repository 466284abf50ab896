package dev.tally.simulation;

import dev.tally.core.CaseRecord;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunSpec;
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
  public long createRun(RunSpec spec, List<CaseRecord> cases) {
    return delegate.createRun(spec, cases);
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
  public long commits() {
    return delegate.commits();
  }

  @Override
  public void close() {
    delegate.close();
  }
}

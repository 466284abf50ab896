package dev.tally.core.store;

import dev.tally.core.CaseRecord;
import java.util.List;
import java.util.Optional;

/**
 * The source of truth for runs, jobs, leases and outcomes.
 *
 * <p>Semantics every implementation keeps (checked by the shared contract tests): an implementation
 * applies batches with {@link BatchRules}, which owns the rules (order, fencing, idempotent recording,
 * redelivery, counters), and provides only the primitive reads and writes ({@link StoreTransaction}).
 * What it must guarantee itself:
 *
 * <ul>
 *   <li><b>Fencing tokens.</b> Each lease gets a token strictly greater than every token issued before for
 *       that job, across restarts of the process: the token is committed with the lease, before anyone can
 *       send it to a worker.
 *   <li><b>Atomic batches.</b> {@link #apply} runs a whole batch in one transaction: all of it commits,
 *       or none of it and a {@link StoreException} is thrown.
 *   <li><b>I2 as a constraint.</b> A run never counts more ended jobs than it has: a transaction that would
 *       break it aborts.
 * </ul>
 *
 * <p>Thread-safety: implementations are safe for use from many threads; writes are serialized inside.
 * Reads ({@link #run}, {@link #runs}, {@link #jobs}, {@link #attempts}) may run beside a write.
 */
public interface Store extends AutoCloseable {

  /**
   * Creates a run and all its jobs ({@code pending}) in one transaction.
   *
   * @param spec what the run was submitted with
   * @param cases the cases, in dataset order, each with a unique id
   * @return the new run's id
   * @throws IllegalArgumentException if {@code cases} has two cases with one id; nothing is written
   * @throws StoreException if the store fails; nothing is written
   */
  long createRun(RunSpec spec, List<CaseRecord> cases);

  /**
   * Applies one scheduler step's records, releases and leases in one transaction (see {@link StoreBatch}).
   *
   * @return what each request did; returned only after the commit
   * @throws StoreException if the transaction fails; nothing of the batch is applied
   */
  StoreBatchResult apply(StoreBatch batch);

  /**
   * Ends every lease of one run as an attempt lost to a coordinator restart ({@link
   * BatchRules#releaseAllLeases}), in one transaction. For a coordinator
   * that resumes a run and knows no holder of its leases can come back (its local workers died with the
   * previous coordinator); otherwise leases are left to be reclaimed or to expire.
   *
   * @param runId the run
   * @param nowMillis wall time, epoch ms
   * @param redelivery judges whether each released job goes back to the queue or ends failed
   * @return how many leases were released
   * @throws StoreException if the store fails; nothing is changed
   */
  int releaseLeases(long runId, long nowMillis, dev.tally.core.RedeliveryPolicy redelivery);

  /**
   * Reads one run.
   *
   * @return the run, or empty if there is no run with that id
   * @throws StoreException if the store fails
   */
  Optional<RunView> run(long runId);

  /**
   * Reads every run, oldest first.
   *
   * @throws StoreException if the store fails
   */
  List<RunView> runs();

  /**
   * Reads the jobs of a run in dataset order.
   *
   * @return the jobs; empty if the run does not exist
   * @throws StoreException if the store fails
   */
  List<JobView> jobs(long runId);

  /**
   * Reads the ended attempts of a run's jobs, by job, then token.
   *
   * @throws StoreException if the store fails
   */
  List<AttemptView> attempts(long runId);

  /**
   * Saves how the given workers look now (one row per worker id, replacing its previous report), in one
   * transaction.
   *
   * @throws StoreException if the store fails; nothing is changed
   */
  void saveWorkerStatuses(List<WorkerStatus> statuses);

  /**
   * This store's identity: made once with the store, never changed, different for every store. Job ids
   * and fencing tokens are only unique within one store; workers use this to tell a coordinator on
   * another store from the one their jobs came from.
   *
   * @return a non-empty string
   */
  String storeId();

  /**
   * Reads the last report of every worker, ordered by name (then id).
   *
   * @throws StoreException if the store fails
   */
  List<WorkerStatus> workerStatuses();

  /** How many write transactions this instance has committed since it was opened. */
  long commits();

  /**
   * Closes the store's connections.
   *
   * @throws StoreException if closing fails
   */
  @Override
  void close();
}

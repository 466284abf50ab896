package dev.tally.core.store;

import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
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
 *   <li><b>Leader epochs.</b> Every write transaction of an instance given a leader's epoch ({@link #writeAs})
 *       begins by checking it against the store's leader row, and is refused whole ({@link
 *       StaleEpochException}) when the row names another: a coordinator deposed while it was frozen writes
 *       nothing after the takeover.
 * </ul>
 *
 * <p>Thread-safety: implementations are safe for use from many threads; writes are serialized inside.
 * Reads ({@link #run}, {@link #runs}, {@link #jobs}, {@link #attempts}, {@link #cases}) may run beside a write
 * and never wait for one.
 */
public interface Store extends AutoCloseable {

  /**
   * Creates a run and its jobs ({@code pending}), pulling the cases one at a time from {@code cases} and
   * inserting each as it comes, and completes an idempotency key with it: all in one transaction, or
   * nothing ({@link RunCreation} is the rule). A run with no cases is finished at creation.
   *
   * <p>The transaction, and so the store's one writer, is held while the source is pulled: a caller reading
   * from a network should take the body in first (to a file) so a slow client cannot hold up the
   * scheduler's commits.
   *
   * @param run what the run is submitted with, and its name
   * @param cases the cases in dataset order; positions unique, ids unique
   * @param completion the idempotency key to complete with the run's response, or null
   * @return the committed run, and the stored response if a key was completed
   * @throws CaseSourceException if the source refuses a case (its place named) or two cases share an id
   *     (the second one's place and the first one's named) or a position; nothing is written
   * @throws KeyReservationLostException if the key is no longer held by the completion's reservation;
   *     nothing is written
   * @throws StoreException if the store fails; nothing is written
   */
  CreatedRun createRun(NewRun run, CaseSource cases, KeyCompletion completion)
      throws CaseSourceException, KeyReservationLostException;

  /**
   * Creates a run of the listed cases with no name and no key: {@link #createRun(NewRun, CaseSource,
   * KeyCompletion)}.
   *
   * @param spec what the run was submitted with
   * @param cases the cases, each with a unique id and position
   * @return the new run's id
   * @throws IllegalArgumentException if two cases share an id or a position; nothing is written
   * @throws StoreException if the store fails; nothing is written
   */
  default long createRun(RunSpec spec, List<CaseRecord> cases) {
    try {
      return createRun(NewRun.of(spec), CaseSource.of(cases, "the cases"), null).run().runId();
    } catch (CaseSourceException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    } catch (KeyReservationLostException e) {
      throw new IllegalStateException("a run made without a key cannot lose one", e);
    }
  }

  /**
   * Cancels a run in one transaction ({@link BatchRules#cancelRun}): for a run no scheduler serves. A
   * coordinator cancels the runs it serves through its scheduler, so that the holders of their leases are
   * told to abandon them.
   *
   * @return what the cancel did
   * @throws StoreException if the store fails; nothing is changed
   */
  CancelResult cancelRun(long runId, long nowMillis);

  /**
   * Runs an ended run's errored cases again ({@link BatchRules#retryErrors}), in one transaction: for a run
   * no scheduler serves (it has ended); the caller then activates the run.
   *
   * @return what was put back in the queue, or why nothing was
   * @throws StoreException if the store fails; nothing is changed
   */
  RetryResult retryErrors(long runId, long nowMillis);

  /**
   * Sets some of a run's evaluator options, in one transaction: how {@code tally resume} raises a paused
   * run's caps ({@link dev.tally.core.FleetLimits#capKeys()}). The caller checks the values; a scheduler
   * serving the run reads its spec once, so the options take effect when the run is next activated.
   *
   * @param options the options to add or replace, by key; the others are kept
   * @return false if there is no such run (nothing is changed)
   * @throws StoreException if the store fails; nothing is changed
   */
  boolean putRunOptions(long runId, java.util.Map<String, String> options);

  /**
   * Clears a run's pause ({@link RunView#pausedReason}), in one transaction: how {@code tally resume} goes on
   * with a run paused by fail fast, once its cause is fixed.
   *
   * @return false if there is no such run (nothing is changed)
   * @throws StoreException if the store fails; nothing is changed
   */
  boolean unpause(long runId);

  /**
   * Judges one page of an ended run's recorded outcomes again with {@code judge}'s scorers ({@link
   * BatchRules#rescore}, at most {@link BatchRules#RESCORE_PAGE_CASES} cases), in one transaction: for
   * {@link Rescoring}, which walks the pages. A store that caches run specs forgets the run's once it
   * commits, so every reader sees the scorers now in force.
   *
   * @param afterPosition the position the page starts after; negative for the first page
   * @return what the page did, and where the next one starts
   * @throws StoreException if the store fails; nothing of the page is changed
   */
  RescorePage rescore(long runId, dev.tally.core.score.Judge judge, int afterPosition, long nowMillis);

  // ---- idempotency keys ---------------------------------------------------------------------------

  /**
   * Claims an idempotency key for a request, in one transaction ({@link IdempotencyRules#claim}).
   *
   * @param scope the key's scope ({@link IdempotencyRules#scopeOf})
   * @param key the key ({@link IdempotencyRules#keyProblem} must find nothing wrong)
   * @param fingerprint the request's fingerprint if known now, else null
   * @param nowMillis wall time, epoch ms
   * @param holdUntilMillis until when the claim holds the key unless renewed, epoch ms
   * @return claimed, in progress elsewhere, or completed
   * @throws IllegalArgumentException if the key is not valid or the hold ends before now
   * @throws StoreException if the store fails
   */
  KeyClaim claimKey(String scope, String key, String fingerprint, long nowMillis, long holdUntilMillis);

  /**
   * Extends the hold of a key this request holds.
   *
   * @return whether it still held the key (and so renewed it)
   * @throws StoreException if the store fails
   */
  boolean renewKey(String scope, String key, String reservationToken, long holdUntilMillis);

  /**
   * Gives up a key this request holds, if it still does (a request that ends with nothing to replay).
   *
   * @throws StoreException if the store fails
   */
  void releaseKey(String scope, String key, String reservationToken);

  /**
   * Deletes the keys that are over ({@link IdempotencyRules#purge}).
   *
   * @return how many were deleted
   * @throws StoreException if the store fails
   */
  int purgeKeys(long nowMillis);

  /**
   * Releases every key held by a request in progress: for a coordinator that holds this store exclusively
   * ({@code CoordinatorLock}), at its start, when no request of an earlier process can still be served.
   *
   * @return how many were released
   * @throws StoreException if the store fails
   */
  int releaseHeldKeys();

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
   * Reads one page of runs, newest first.
   *
   * @throws StoreException if the store fails
   */
  List<RunView> runs(RunPage page);

  /**
   * Reads one page of a run's cases, in dataset order.
   *
   * @return the cases; empty if the run does not exist
   * @throws StoreException if the store fails
   */
  List<CaseView> cases(long runId, CaseQuery query);

  /**
   * Reads when a run's cases ended, counted in spans of {@code spanMillis} from the run's creation: a
   * recorded case at the end of the attempt that recorded it, a case out of attempts at the end of its
   * last. For a progress chart, its rate and its ETA.
   *
   * @param spanMillis the length of one span, ms, at least 1
   * @return the spans in which any case ended, in time order (spans with none are left out)
   * @throws IllegalArgumentException if {@code spanMillis} is below 1
   * @throws StoreException if the store fails
   */
  List<ProgressBucket> progress(long runId, long spanMillis);

  /**
   * Reads the ended attempts of one case of a run, by token.
   *
   * @return the attempts (an empty list for a case not yet attempted), or empty if the run has no such case
   * @throws StoreException if the store fails
   */
  Optional<List<AttemptView>> attempts(long runId, String caseId);

  /**
   * Reads the responses journalled for one case of a run ({@link dev.tally.core.JournalEntry}), by request
   * digest, in the order they were journalled.
   *
   * @return the responses; empty for a case with none, or no such case
   * @throws StoreException if the store fails
   */
  java.util.Map<String, String> journalledResponses(long runId, String caseId);

  /**
   * Reads the jobs of a run in dataset order.
   *
   * @return the jobs; empty if the run does not exist
   * @throws StoreException if the store fails
   */
  List<JobView> jobs(long runId);

  /**
   * Gives each of a run's cases, in dataset order, to {@code each} as its id and JSON, reading them a page
   * at a time (what the summary's figures by a case's own fields need; nothing holds every case at once),
   * until {@code each} answers false.
   *
   * @param each takes a case's id and JSON; true to go on to the next case
   * @throws StoreException if the store fails
   */
  void forEachCase(long runId, java.util.function.BiPredicate<String, String> each);

  /**
   * Reads the ended attempts of a run's jobs, by job, then token.
   *
   * @throws StoreException if the store fails
   */
  List<AttemptView> attempts(long runId);

  /**
   * Saves how the given workers look now (one row per worker id, replacing its previous report), in one
   * transaction; a worker id given more than once (a session superseded by its worker's new one) is saved as
   * its last status in the list.
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

  // ---- the leader row ------------------------------------------------------------------------------

  /**
   * The epoch of a store instance whose writes are not fenced: the default until {@link #writeAs} is called,
   * for tools and tests that use a store with no coordinator. No leader ever has it (the first is 1).
   */
  long UNFENCED = 0;

  /** The epoch of a standby ({@link #writeAs}): every write is refused with {@link StaleEpochException}. */
  long NOT_LEADING = -1;

  /**
   * Reads the leader row ({@code coordinator_leader}), with the store's clock at the read: the one clock
   * leases are judged by ({@link dev.tally.core.lead.LeaderLease}).
   *
   * @throws StoreException if the store fails
   */
  dev.tally.core.lead.LeaderRead leader();

  /**
   * Swaps the leader row for {@code next} if it is still exactly {@code expected} (epoch, holder and
   * expiry), in one transaction: how a coordinator takes or renews the lead ({@link
   * dev.tally.core.lead.LeaderLease} decides which). It is not fenced by {@link #writeAs}: it is how an epoch
   * is won. On PostgreSQL the row lock it takes waits for a batch in flight under the old epoch, so a
   * takeover and that batch are serialised.
   *
   * @return whether the row was swapped
   * @throws IllegalArgumentException if {@code next}'s epoch is neither {@code expected}'s (a renewal) nor
   *     one more (a takeover)
   * @throws StoreException if the store fails; the row is unchanged
   */
  boolean swapLeader(dev.tally.core.lead.LeaderRow expected, dev.tally.core.lead.LeaderRow next);

  /**
   * Sets the leader epoch every later write transaction of this instance carries: each begins by checking
   * it against the leader row and, if the row names another epoch, is refused with {@link
   * StaleEpochException} and writes nothing. {@link #NOT_LEADING} refuses every write (a standby); {@link
   * #UNFENCED} checks nothing. Reads are never fenced.
   *
   * @param epoch the epoch this instance's coordinator leads under, {@link #NOT_LEADING} or {@link #UNFENCED}
   * @throws IllegalArgumentException if {@code epoch} is below {@link #NOT_LEADING}
   */
  void writeAs(long epoch);

  /** The epoch this instance's writes carry ({@link #writeAs}). */
  long writeEpoch();

  /**
   * The one check of an epoch given to {@link #writeAs}, which every store calls.
   *
   * @return {@code epoch}
   * @throws IllegalArgumentException if {@code epoch} is below {@link #NOT_LEADING}
   */
  static long checkWriteEpoch(long epoch) {
    if (epoch < NOT_LEADING) {
      throw new IllegalArgumentException("a write epoch is a leader's (1 or more), NOT_LEADING or UNFENCED, got " + epoch);
    }
    return epoch;
  }

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

package dev.tally.simulation;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.RecordStatus;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.FailureReasons;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.ExpiredLease;
import dev.tally.core.store.StoreBatch.LeaseRequest;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatch.ReleaseStatus;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.WorkerStatus;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A {@link Store} held in memory, with the semantics of {@code SqliteStore} (it passes the same contract
 * suite), so that a simulation runs hundreds of histories a minute.
 *
 * <p><b>Durability.</b> The data lives in a {@link State} that outlives any one store instance: the
 * simulation keeps it across a simulated coordinator crash and opens it again with {@link #reopen()} (a
 * crash loses the scheduler's memory, not the store's), and {@link #open(Path)} maps a directory to one
 * state for the whole JVM, so that opening the same directory twice opens the same store, as reopening a
 * file does. A commit is "durable" the moment {@link #apply} returns.
 *
 * <p><b>Transactions.</b> Every write method runs under the state's lock. {@link #apply} keeps an undo log
 * (the first copy of every job and run row it touches, the attempts it appended) and rolls the whole
 * batch back if any part throws, so a batch commits entirely or not at all. The schema's checks are kept
 * as checks: an attempt is unique per (job, token), and a run never counts more ended jobs than it has;
 * breaking either aborts the batch with a {@link StoreException}, as the SQLite constraint would.
 *
 * <p><b>Planted faults.</b> Given a {@link PlantedFault}, the store misbehaves on purpose ({@link
 * PlantedFault#COUNT_DUPLICATES}, {@link PlantedFault#SKIP_FENCING}); other faults are not the store's and
 * are ignored here.
 *
 * <p>Thread-safety: safe for use from many threads; all operations on one state are serialized.
 */
public final class InMemoryStore implements Store {

  private static final Map<Path, State> BY_DIRECTORY = new ConcurrentHashMap<>();

  private final State state;
  private final Clock clock;
  private final PlantedFault fault;
  private long commits;
  private boolean closed;

  private InMemoryStore(State state, Clock clock, PlantedFault fault) {
    this.state = state;
    this.clock = clock;
    this.fault = fault;
  }

  /** A new, empty store with no planted fault, using {@code clock} for run creation times. */
  public static InMemoryStore create(Clock clock) {
    return new InMemoryStore(new State(), clock, null);
  }

  /**
   * A new, empty store.
   *
   * @param clock wall time for run creation times
   * @param fault a fault to plant, or null for a correct store
   */
  public static InMemoryStore create(Clock clock, PlantedFault fault) {
    return new InMemoryStore(new State(), clock, fault);
  }

  /**
   * Opens the store that lives in {@code dir} for this JVM (creating it, empty, the first time): two calls
   * with one directory see the same data, as two opens of one SQLite file do. Nothing is written to disk.
   */
  public static InMemoryStore open(Path dir) {
    State s = BY_DIRECTORY.computeIfAbsent(dir.toAbsolutePath().normalize(), d -> new State());
    return new InMemoryStore(s, Clock.systemUTC(), null);
  }

  /**
   * Opens this store's data again as a new instance, as a restarted coordinator opens the file its
   * predecessor used: the data and the planted fault carry over, the commit count starts at 0. This
   * instance is left as it is (a crashed process never closes its store).
   */
  public InMemoryStore reopen() {
    return new InMemoryStore(state, clock, fault);
  }

  /**
   * Makes every lease fail inside the store (after the batch's records and releases have run) until the
   * returned handle is closed: for the contract test of atomic batches.
   */
  AutoCloseable failLeases() {
    synchronized (state) {
      state.failLeases = true;
    }
    return () -> {
      synchronized (state) {
        state.failLeases = false;
      }
    };
  }

  /** The store of {@code dir} as {@link #open} would give it, for {@link #failLeases()} in tests. */
  static AutoCloseable failLeasesIn(Path dir) {
    return open(dir).failLeases();
  }

  // ---- data -------------------------------------------------------------------------------------

  /** All of one store's data; survives its store instances. Guarded by its own monitor. */
  /** Numbers the states made in this JVM, for their store ids (deterministic within one JVM). */
  private static final java.util.concurrent.atomic.AtomicLong STATES = new java.util.concurrent.atomic.AtomicLong();

  static final class State {
    /** Made with the state, kept across reopenings: the store's identity. */
    final String storeId = "in-memory-" + STATES.incrementAndGet();
    final TreeMap<Long, RunRow> runs = new TreeMap<>();
    final TreeMap<Long, JobRow> jobs = new TreeMap<>();
    /** Each run's job ids in dataset (position) order; fixed at creation. */
    final Map<Long, long[]> jobsByPosition = new HashMap<>();
    /** Ended attempts per job, in the order they were written. */
    final Map<Long, List<AttemptView>> attempts = new HashMap<>();
    final Map<String, WorkerStatus> workers = new LinkedHashMap<>();
    long nextRunId = 1;
    long nextJobId = 1;
    boolean failLeases;
  }

  private static final class RunRow {
    long id;
    RunSpec spec;
    long createdAt;
    long finishedAt;
    boolean finished;
    long total;
    long passed;
    long failed;
    long errored;
    long jobsFailed;
    long duplicates;
    long fenced;
    long redeliveries;

    RunRow copy() {
      RunRow r = new RunRow();
      r.id = id;
      r.spec = spec;
      r.createdAt = createdAt;
      r.finishedAt = finishedAt;
      r.finished = finished;
      r.total = total;
      r.passed = passed;
      r.failed = failed;
      r.errored = errored;
      r.jobsFailed = jobsFailed;
      r.duplicates = duplicates;
      r.fenced = fenced;
      r.redeliveries = redeliveries;
      return r;
    }

    long ended() {
      return passed + failed + errored + jobsFailed;
    }

    RunCounters counters() {
      return new RunCounters(total, passed, failed, errored, jobsFailed, duplicates, fenced, redeliveries);
    }
  }

  private static final class JobRow {
    long id;
    long runId;
    int position;
    String caseId;
    String caseJson;
    JobState state = JobState.PENDING;
    long token;
    String owner;
    long leasedAt;
    long leaseExpiry;
    int attempts;
    long notBefore;
    Outcome outcome;
    String worker;
    String failureReason;
    int lostStreak;

    JobRow copy() {
      JobRow j = new JobRow();
      j.id = id;
      j.runId = runId;
      j.position = position;
      j.caseId = caseId;
      j.caseJson = caseJson;
      j.state = state;
      j.token = token;
      j.owner = owner;
      j.leasedAt = leasedAt;
      j.leaseExpiry = leaseExpiry;
      j.attempts = attempts;
      j.notBefore = notBefore;
      j.outcome = outcome;
      j.worker = worker;
      j.failureReason = failureReason;
      j.lostStreak = lostStreak;
      return j;
    }

    JobView view() {
      String w = switch (state) {
        case LEASED -> owner;
        case DONE -> worker;
        default -> null;
      };
      return new JobView(id, runId, position, caseId, state, token, attempts, w,
          state == JobState.DONE ? outcome : null, state == JobState.FAILED ? failureReason : null);
    }
  }

  /** One open write transaction: the undo log of {@link #apply}. */
  private final class Tx {
    final Map<Long, JobRow> jobBefore = new HashMap<>();
    final Map<Long, RunRow> runBefore = new HashMap<>();
    final List<Long> attemptsAdded = new ArrayList<>();

    JobRow job(long id) {
      JobRow j = state.jobs.get(id);
      if (j != null && !jobBefore.containsKey(id)) {
        jobBefore.put(id, j.copy());
      }
      return j;
    }

    RunRow run(long id) {
      RunRow r = state.runs.get(id);
      if (r != null && !runBefore.containsKey(id)) {
        runBefore.put(id, r.copy());
      }
      return r;
    }

    void addAttempt(long jobId, long token, String worker, long startedAt, long endedAt, String ending, String detail) {
      List<AttemptView> list = state.attempts.computeIfAbsent(jobId, k -> new ArrayList<>());
      if (fault != PlantedFault.SKIP_FENCING) {
        for (AttemptView a : list) {
          if (a.token() == token) {
            // The attempts table's primary key (job_id, token): one ended attempt per lease.
            throw new StoreException("attempt (job " + jobId + ", token " + token + ") is already recorded");
          }
        }
      }
      list.add(new AttemptView(jobId, token, worker, startedAt, endedAt, ending, detail));
      attemptsAdded.add(jobId);
    }

    void rollback() {
      jobBefore.forEach(state.jobs::put);
      runBefore.forEach(state.runs::put);
      for (int i = attemptsAdded.size() - 1; i >= 0; i--) {
        List<AttemptView> list = state.attempts.get(attemptsAdded.get(i));
        list.remove(list.size() - 1);
      }
    }
  }

  /** Counter changes for one run, summed over a batch and applied once, as the SQLite store does. */
  private static final class RunDelta {
    long passed;
    long failed;
    long errored;
    long jobsFailed;
    long duplicates;
    long fenced;
    long redeliveries;

    boolean isZero() {
      return (passed | failed | errored | jobsFailed | duplicates | fenced | redeliveries) == 0;
    }
  }

  // ---- createRun --------------------------------------------------------------------------------

  /** {@inheritDoc} Also refuses two cases with one position; a run with no cases is finished at creation. */
  @Override
  public long createRun(RunSpec spec, List<CaseRecord> cases) {
    Set<String> ids = new HashSet<>();
    Set<Integer> positions = new HashSet<>();
    for (CaseRecord c : cases) {
      if (!ids.add(c.caseId())) {
        throw new IllegalArgumentException("cases must have unique ids, but id '" + c.caseId() + "' appears twice");
      }
      if (!positions.add(c.position())) {
        throw new IllegalArgumentException(
            "cases must have unique positions, but position " + c.position() + " appears twice");
      }
    }
    synchronized (state) {
      ensureOpen("createRun");
      long now = clock.millis();
      RunRow run = new RunRow();
      run.id = state.nextRunId++;
      // Stored as SQLite stores it: the case timeout in whole milliseconds.
      EvaluatorSpec e = spec.evaluator();
      run.spec = new RunSpec(spec.dataset(),
          new EvaluatorSpec(e.kind(), e.options(), Duration.ofMillis(e.caseTimeout().toMillis())), spec.maxAttempts(),
          spec.datasetDigest());
      run.createdAt = now;
      run.total = cases.size();
      run.finished = cases.isEmpty();
      run.finishedAt = cases.isEmpty() ? now : 0;
      state.runs.put(run.id, run);
      List<JobRow> rows = new ArrayList<>(cases.size());
      for (CaseRecord c : cases) {
        JobRow j = new JobRow();
        j.id = state.nextJobId++;
        j.runId = run.id;
        j.position = c.position();
        j.caseId = c.caseId();
        j.caseJson = c.caseJson();
        state.jobs.put(j.id, j);
        rows.add(j);
      }
      rows.sort(Comparator.comparingInt(j -> j.position));
      state.jobsByPosition.put(run.id, rows.stream().mapToLong(j -> j.id).toArray());
      commits++;
      return run.id;
    }
  }

  // ---- apply ------------------------------------------------------------------------------------

  /**
   * {@inheritDoc}
   *
   * <p>Order: records, releases, leases, renewals, the sweep. A record for a job that does not exist is
   * FENCED and charges no run; a release of one is STALE. A sweep asked for a run with no expired lease
   * does not read the run's spec (the SQLite store does, and fails the batch for a run id it does not
   * know; no scheduler asks that).
   */
  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    synchronized (state) {
      ensureOpen("apply");
      Tx tx = new Tx();
      try {
        StoreBatchResult result = applyInTransaction(tx, batch);
        if (!batch.isEmpty()) {
          commits++;
        }
        return result;
      } catch (RuntimeException | Error e) {
        tx.rollback();
        if (e instanceof StoreException || e instanceof Error) {
          throw e;
        }
        throw new StoreException("apply: a batch of " + batch.records().size() + " records, " + batch.releases().size()
            + " releases and " + batch.leases().size() + " lease requests failed; none of it was applied", e);
      }
    }
  }

  private StoreBatchResult applyInTransaction(Tx tx, StoreBatch batch) {
    long now = batch.nowMillis();
    Map<Long, RunDelta> touched = new LinkedHashMap<>();

    List<RecordStatus> recordStatuses = new ArrayList<>(batch.records().size());
    for (RecordRequest r : batch.records()) {
      recordStatuses.add(record(tx, r, now, touched));
    }
    List<ReleaseStatus> releaseStatuses = new ArrayList<>(batch.releases().size());
    for (ReleaseRequest r : batch.releases()) {
      releaseStatuses.add(release(tx, r, now, touched));
    }
    List<List<Assignment>> leases = new ArrayList<>(batch.leases().size());
    boolean exhausted = false;
    for (LeaseRequest l : batch.leases()) {
      // Eligibility depends only on now, so once one request comes up short the rest would find nothing.
      List<Assignment> got = exhausted ? List.of() : lease(tx, l, batch.runIds(), now, touched);
      exhausted |= got.size() < l.maxJobs();
      leases.add(got);
    }
    List<RenewResult> renewals = new ArrayList<>(batch.renewals().size());
    for (RenewRequest r : batch.renewals()) {
      JobRow j = state.jobs.get(r.jobId());
      if (j != null && j.state == JobState.LEASED && j.token == r.token()) {
        tx.job(j.id).leaseExpiry = r.leaseExpiryMillis();
        renewals.add(new RenewResult(true, j.runId, j.attempts));
      } else {
        renewals.add(new RenewResult(false, 0, 0));
      }
    }
    List<ExpiredLease> expired = batch.sweepExpiredLeases() ? sweepExpired(tx, batch.runIds(), now, touched) : List.of();

    Map<Long, RunCounters> counters = new HashMap<>();
    for (Map.Entry<Long, RunDelta> e : touched.entrySet()) {
      counters.put(e.getKey(), writeCounters(tx, e.getKey(), e.getValue(), now));
    }

    long nextNotBefore = Long.MAX_VALUE;
    boolean pendingLeft = false;
    for (long runId : batch.runIds()) {
      long[] ids = state.jobsByPosition.get(runId);
      if (ids == null) {
        continue;
      }
      for (long id : ids) {
        JobRow j = state.jobs.get(id);
        if (j.state == JobState.PENDING) {
          if (j.notBefore > now) {
            nextNotBefore = Math.min(nextNotBefore, j.notBefore);
          } else {
            pendingLeft = true;
          }
        }
      }
    }
    return new StoreBatchResult(
        recordStatuses, releaseStatuses, leases, counters, nextNotBefore, pendingLeft, renewals, expired);
  }

  private RecordStatus record(Tx tx, RecordRequest r, long now, Map<Long, RunDelta> touched) {
    JobRow j = state.jobs.get(r.jobId());
    if (j == null) {
      return RecordStatus.FENCED;
    }
    RunDelta d = touched.computeIfAbsent(j.runId, k -> new RunDelta());
    boolean current = j.state == JobState.LEASED && j.token == r.token();
    if (fault == PlantedFault.SKIP_FENCING) {
      // Planted: no fencing check. Any token is taken while the job is not yet ended.
      current = j.state == JobState.LEASED || j.state == JobState.PENDING;
    }
    if (current) {
      JobRow w = tx.job(j.id);
      w.state = JobState.DONE;
      w.outcome = r.outcome();
      w.worker = r.worker();
      w.owner = null;
      w.leaseExpiry = 0;
      count(d, r.outcome());
      tx.addAttempt(j.id, r.token(), r.worker(), j.leasedAt, now, "recorded", "");
      return RecordStatus.RECORDED;
    }
    if (j.state == JobState.DONE && j.token == r.token()) {
      if (fault == PlantedFault.COUNT_DUPLICATES) {
        // Planted: the resend is taken for a new result and counted again.
        count(d, r.outcome());
        return RecordStatus.RECORDED;
      }
      d.duplicates++;
      return RecordStatus.DUPLICATE;
    }
    d.fenced++;
    return RecordStatus.FENCED;
  }

  private static void count(RunDelta d, Outcome o) {
    switch (o.verdict()) {
      case PASS -> d.passed++;
      case FAIL -> d.failed++;
      case ERROR -> d.errored++;
    }
  }

  private ReleaseStatus release(Tx tx, ReleaseRequest r, long now, Map<Long, RunDelta> touched) {
    JobRow j = state.jobs.get(r.jobId());
    if (j == null) {
      return ReleaseStatus.STALE;
    }
    RunDelta d = touched.computeIfAbsent(j.runId, k -> new RunDelta());
    if (j.state != JobState.LEASED || j.token != r.token()) {
      return ReleaseStatus.STALE;
    }
    int lostStreak = j.lostStreak;
    if (r.diedRunning()) {
      lostStreak++;
    } else if (r.failure().kind() != InfraFailure.Kind.WORKER_LOST) {
      lostStreak = 0;
    }
    boolean poison = r.poisonLimit() > 0 && lostStreak >= r.poisonLimit();
    boolean fail = r.terminal() || poison;
    if (fail) {
      d.jobsFailed++;
    } else {
      d.redeliveries++;
    }
    InfraFailure f = r.failure();
    String ending = FailureReasons.ending(f.kind());
    String owner = j.owner;
    long startedAt = j.leasedAt;
    JobRow w = tx.job(j.id);
    w.owner = null;
    w.leaseExpiry = 0;
    w.lostStreak = lostStreak;
    if (fail) {
      w.state = JobState.FAILED;
      w.failureReason = poison
          ? FailureReasons.poison(lostStreak, f.detail())
          : FailureReasons.outOfAttempts(j.attempts, ending, f.detail());
    } else {
      w.state = JobState.PENDING;
      w.notBefore = r.notBeforeMillis();
    }
    tx.addAttempt(j.id, r.token(), owner, startedAt, now, ending, f.detail());
    return fail ? ReleaseStatus.FAILED : ReleaseStatus.RELEASED;
  }

  private List<Assignment> lease(Tx tx, LeaseRequest l, List<Long> runIds, long now, Map<Long, RunDelta> touched) {
    if (state.failLeases) {
      throw new IllegalStateException("injected lease failure");
    }
    List<Assignment> out = new ArrayList<>();
    for (long runId : runIds) {
      if (out.size() >= l.maxJobs()) {
        break;
      }
      long[] ids = state.jobsByPosition.get(runId);
      if (ids == null) {
        continue;
      }
      RunSpec spec = state.runs.get(runId).spec;
      for (long id : ids) {
        if (out.size() >= l.maxJobs()) {
          break;
        }
        JobRow j = state.jobs.get(id);
        if (j.state != JobState.PENDING || j.notBefore > now) {
          continue;
        }
        JobRow w = tx.job(id);
        w.state = JobState.LEASED;
        w.token++;
        w.attempts++;
        w.owner = l.worker();
        w.leasedAt = now;
        w.leaseExpiry = l.leaseExpiryMillis();
        touched.computeIfAbsent(runId, k -> new RunDelta());
        out.add(new Assignment(w.id, runId, w.token, w.attempts, w.caseId, w.caseJson, spec.evaluator()));
      }
    }
    return out;
  }

  private List<ExpiredLease> sweepExpired(Tx tx, List<Long> runIds, long now, Map<Long, RunDelta> touched) {
    List<ExpiredLease> expired = new ArrayList<>();
    for (long runId : runIds) {
      long[] ids = state.jobsByPosition.get(runId);
      if (ids == null) {
        continue;
      }
      List<JobRow> found = new ArrayList<>();
      for (long id : ids) {
        JobRow j = state.jobs.get(id);
        if (j.state == JobState.LEASED && j.leaseExpiry < now) {
          found.add(j);
        }
      }
      // The SQLite store walks its (run, expiry) index.
      found.sort(Comparator.<JobRow>comparingLong(j -> j.leaseExpiry).thenComparingLong(j -> j.id));
      if (found.isEmpty()) {
        continue;
      }
      int maxAttempts = state.runs.get(runId).spec.maxAttempts();
      for (JobRow j : found) {
        boolean terminal = j.attempts >= maxAttempts;
        InfraFailure why = new InfraFailure(InfraFailure.Kind.LEASE_EXPIRED,
            "lease expired " + (now - j.leaseExpiry) + " ms ago without being renewed");
        long token = j.token;
        ReleaseStatus status = release(tx, new ReleaseRequest(j.id, token, why, now, terminal), now, touched);
        if (status != ReleaseStatus.STALE) {
          expired.add(new ExpiredLease(j.id, token, runId, status == ReleaseStatus.FAILED));
        }
      }
    }
    return expired;
  }

  private RunCounters writeCounters(Tx tx, long runId, RunDelta d, long now) {
    RunRow run = state.runs.get(runId);
    if (run == null) {
      throw new StoreException("run " + runId + " vanished while its jobs were being changed");
    }
    if (d.isZero()) {
      return run.counters();
    }
    long endedBefore = run.ended();
    long ended = d.passed + d.failed + d.errored + d.jobsFailed;
    if (endedBefore + ended > run.total) {
      // The runs table's CHECK (passed + failed + errored + jobs_failed <= total): I2 guarded by the schema.
      throw new StoreException("run " + runId + " would count " + (endedBefore + ended) + " ended jobs of "
          + run.total + " (CHECK passed + failed + errored + jobs_failed <= total)");
    }
    RunRow w = tx.run(runId);
    w.passed += d.passed;
    w.failed += d.failed;
    w.errored += d.errored;
    w.jobsFailed += d.jobsFailed;
    w.duplicates += d.duplicates;
    w.fenced += d.fenced;
    w.redeliveries += d.redeliveries;
    if (!w.finished && endedBefore + ended >= w.total) {
      w.finished = true;
      w.finishedAt = now;
    }
    return w.counters();
  }

  // ---- releaseLeases ----------------------------------------------------------------------------

  /** {@inheritDoc} */
  @Override
  public int releaseLeases(long runId, long nowMillis) {
    synchronized (state) {
      ensureOpen("releaseLeases");
      Tx tx = new Tx();
      try {
        String detail = "the coordinator restarted while the attempt was leased";
        RunRow run = state.runs.get(runId);
        long[] ids = state.jobsByPosition.get(runId);
        int released = 0;
        if (run != null && ids != null) {
          List<Long> byId = new ArrayList<>();
          for (long id : ids) {
            byId.add(id);
          }
          byId.sort(null);
          long redelivered = 0;
          long failed = 0;
          for (long id : byId) {
            JobRow j = state.jobs.get(id);
            if (j.state != JobState.LEASED) {
              continue;
            }
            released++;
            tx.addAttempt(j.id, j.token, j.owner, j.leasedAt, nowMillis, "coordinator_restarted", detail);
            JobRow w = tx.job(id);
            w.owner = null;
            w.leaseExpiry = 0;
            if (j.attempts >= run.spec.maxAttempts()) {
              failed++;
              w.state = JobState.FAILED;
              w.failureReason = "ended failed after " + j.attempts + " attempts; the last ended with coordinator_restarted: " + detail;
            } else {
              redelivered++;
              w.state = JobState.PENDING;
              w.notBefore = nowMillis;
            }
          }
          if (released > 0) {
            RunRow r = tx.run(runId);
            r.redeliveries += redelivered;
            r.jobsFailed += failed;
            if (!r.finished && r.ended() >= r.total) {
              r.finished = true;
              r.finishedAt = nowMillis;
            }
          }
        }
        commits++;
        return released;
      } catch (RuntimeException e) {
        tx.rollback();
        throw new StoreException("releaseLeases: releasing the leases of run " + runId + " failed; nothing changed", e);
      }
    }
  }

  // ---- workers ----------------------------------------------------------------------------------

  /** {@inheritDoc} */
  @Override
  public void saveWorkerStatuses(List<WorkerStatus> statuses) {
    if (statuses.isEmpty()) {
      return;
    }
    synchronized (state) {
      ensureOpen("saveWorkerStatuses");
      for (WorkerStatus w : statuses) {
        state.workers.put(w.workerId(), w);
      }
      commits++;
    }
  }

  /** {@inheritDoc} */
  @Override
  public String storeId() {
    return state.storeId;
  }

  /** {@inheritDoc} */
  @Override
  public List<WorkerStatus> workerStatuses() {
    synchronized (state) {
      ensureOpen("workerStatuses");
      List<WorkerStatus> out = new ArrayList<>(state.workers.values());
      out.sort(Comparator.comparing(WorkerStatus::name).thenComparing(WorkerStatus::workerId));
      return out;
    }
  }

  // ---- reads ------------------------------------------------------------------------------------

  /** {@inheritDoc} */
  @Override
  public Optional<RunView> run(long runId) {
    synchronized (state) {
      ensureOpen("run");
      RunRow r = state.runs.get(runId);
      return r == null ? Optional.empty() : Optional.of(view(r));
    }
  }

  /** {@inheritDoc} */
  @Override
  public List<RunView> runs() {
    synchronized (state) {
      ensureOpen("runs");
      return state.runs.values().stream().map(InMemoryStore::view).toList();
    }
  }

  private static RunView view(RunRow r) {
    return new RunView(r.id, r.spec, r.finished, r.createdAt, r.finishedAt, r.counters());
  }

  /** {@inheritDoc} */
  @Override
  public List<JobView> jobs(long runId) {
    synchronized (state) {
      ensureOpen("jobs");
      long[] ids = state.jobsByPosition.get(runId);
      if (ids == null) {
        return List.of();
      }
      List<JobView> out = new ArrayList<>(ids.length);
      for (long id : ids) {
        out.add(state.jobs.get(id).view());
      }
      return out;
    }
  }

  /** {@inheritDoc} */
  @Override
  public List<AttemptView> attempts(long runId) {
    synchronized (state) {
      ensureOpen("attempts");
      long[] ids = state.jobsByPosition.get(runId);
      if (ids == null) {
        return List.of();
      }
      long[] sorted = ids.clone();
      java.util.Arrays.sort(sorted);
      List<AttemptView> out = new ArrayList<>();
      for (long id : sorted) {
        List<AttemptView> list = state.attempts.get(id);
        if (list != null) {
          List<AttemptView> byToken = new ArrayList<>(list);
          byToken.sort(Comparator.comparingLong(AttemptView::token)); // stable: a planted fault may repeat a token
          out.addAll(byToken);
        }
      }
      return out;
    }
  }

  /** {@inheritDoc} */
  @Override
  public long commits() {
    synchronized (state) {
      return commits;
    }
  }

  /** Closes this instance (the data stays for {@link #reopen} and {@link #open}). Idempotent. */
  @Override
  public void close() {
    synchronized (state) {
      closed = true;
    }
  }

  private void ensureOpen(String operation) {
    if (closed) {
      throw new StoreException(operation + ": the store is closed");
    }
  }

  @Override
  public String toString() {
    return "InMemoryStore" + (fault == null ? "" : "[planted " + fault.cliName() + "]");
  }
}

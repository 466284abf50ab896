package dev.tally.core.store.memory;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.Outcome;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.RedeliveryPolicy.JobHistory;
import dev.tally.core.Verdict;
import dev.tally.core.store.ProgressBucket;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.BatchRules;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.CaseQuery;
import dev.tally.core.store.CaseView;
import dev.tally.core.store.CreatedRun;
import dev.tally.core.store.IdempotencyKey;
import dev.tally.core.store.IdempotencyRules;
import dev.tally.core.store.KeyClaim;
import dev.tally.core.store.KeyCompletion;
import dev.tally.core.store.KeyReservationLostException;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunCreation;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.RunState;
import dev.tally.core.store.CounterDelta;
import dev.tally.core.store.RetryResult;
import dev.tally.core.store.RequeuedErrors;
import dev.tally.core.store.JobRecord;
import dev.tally.core.store.JobState;
import dev.tally.core.store.LiveLease;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatch;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StaleEpochException;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.StoreTransaction;
import dev.tally.core.store.WorkerStatus;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Store} held in memory: the deterministic simulation's store, and the scheduler's tests'. It
 * applies batches with the same {@link BatchRules} as {@code SqliteStore} (only the primitive reads and
 * writes are its own, as maps instead of SQL) and passes the same contract suite, so that a simulation runs
 * hundreds of histories a second on the real store semantics.
 *
 * <p><b>Durability.</b> The data lives in a state that outlives any one store instance: a simulation keeps
 * it across a simulated coordinator crash and opens it again with {@link #reopen()} (a crash loses the
 * scheduler's memory, not the store's), and {@link #open(Path)} maps a directory to one state for the whole
 * JVM, so that opening the same directory twice opens the same store, as reopening a file does. A commit
 * is "durable" the moment {@link #apply} returns.
 *
 * <p><b>Transactions.</b> Every write runs under the state's lock with an undo log (the first copy of
 * every job and run row it touches, the attempts it appended), and a write that throws is rolled back
 * whole. The schema's constraints are kept as checks that abort the transaction: one attempt per (job,
 * token), and I2 ({@link CounterDelta#applyTo}).
 *
 * <p><b>Planted bugs.</b> Given a {@link PlantedBug}, the store's primitives misbehave on purpose, so that a
 * simulation can prove its checker catches such a store.
 *
 * <p>Thread-safety: safe for use from many threads; all operations on one state are serialized.
 */
public final class InMemoryStore implements Store {

  /**
   * Bugs a store could have, planted on purpose (in the spirit of FoundationDB's BUGGIFY): a simulation
   * runs with one to prove its checker finds it. Production never plants one.
   */
  public enum PlantedBug {
    /** The compare-and-set also takes a resend of the accepted result as a new one (breaks I2). */
    TAKE_RESENT_RESULTS,
    /** The compare-and-set ignores the token: any report for a job not yet ended is taken (breaks I3). */
    IGNORE_TOKENS,
    /**
     * The count of a run's leased jobs, which fair share divides slots by, is wrong: an older run always
     * looks less loaded than a newer one, so the oldest run with leasable jobs takes every slot and later runs
     * starve (breaks fair share).
     */
    MISCOUNT_RUN_LEASES,
    /**
     * Ending a job's own lease while a backup attempt of it lives leaves the ended lease in force and forgets
     * the backup (promotion goes wrong): the ended holder can still be recorded, the backup never ends
     * (breaks I1 and I3, fencing by the set of live attempts).
     */
    KEEP_ENDED_LEASE_ON_PROMOTE
  }

  private static final Map<Path, State> BY_DIRECTORY = new ConcurrentHashMap<>();
  /** Numbers the states made in this JVM, for their store ids (deterministic within one JVM). */
  private static final AtomicLong STATES = new AtomicLong();

  private final State state;
  private final Clock clock;
  private final PlantedBug bug;
  private long commits;
  private boolean closed;

  private InMemoryStore(State state, Clock clock, PlantedBug bug) {
    this.state = state;
    this.clock = clock;
    this.bug = bug;
  }

  /** A new, empty store with no planted bug, using {@code clock} for run creation times. */
  public static InMemoryStore create(Clock clock) {
    return new InMemoryStore(new State(), clock, null);
  }

  /**
   * A new, empty store.
   *
   * @param clock wall time for run creation times
   * @param bug a bug to plant, or null for a correct store
   */
  public static InMemoryStore create(Clock clock, PlantedBug bug) {
    return new InMemoryStore(new State(), clock, bug);
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
   * predecessor used: the data and the planted bug carry over, the commit count starts at 0. This instance
   * is left as it is (a crashed process never closes its store).
   */
  public InMemoryStore reopen() {
    return new InMemoryStore(state, clock, bug);
  }

  /**
   * Makes every lease fail inside the store of {@code dir} (after the batch's records and releases have
   * run) until the returned handle is closed: for the contract test of atomic batches.
   */
  public static AutoCloseable failLeasesIn(Path dir) {
    State s = open(dir).state;
    synchronized (s) {
      s.failLeases = true;
    }
    return () -> {
      synchronized (s) {
        s.failLeases = false;
      }
    };
  }

  // ---- data -------------------------------------------------------------------------------------

  /** All of one store's data; survives its store instances. Guarded by its own monitor. */
  private static final class State {
    /** Made with the state, kept across reopenings: the store's identity. */
    final String storeId = "in-memory-" + STATES.incrementAndGet();
    /** The leader row: shared by every instance over this state, as coordinators share one database. */
    dev.tally.core.lead.LeaderRow leader = dev.tally.core.lead.LeaderRow.NONE;
    final TreeMap<Long, RunRow> runs = new TreeMap<>();
    final TreeMap<Long, JobRow> jobs = new TreeMap<>();
    /** Each run's job ids in dataset (position) order; fixed at creation. */
    final Map<Long, long[]> jobsByPosition = new HashMap<>();
    /**
     * Each run's pending jobs by position (an index, as SQLite's partial index on pending jobs): leasing
     * and the pending summary walk only these, not every job of the run. Kept by {@link #changeState}.
     */
    final Map<Long, TreeMap<Integer, Long>> pendingByRun = new HashMap<>();

    /** Each run's leased jobs, counted (as SQLite's partial index on leased jobs lets it count). */
    final Map<Long, Integer> leasedByRun = new HashMap<>();
    /** Each run's job ids by case id: the unique constraint (run, case id), and reads by case. */
    final Map<Long, Map<String, Long>> jobByCaseId = new HashMap<>();
    /** Idempotency keys by scope and key. */
    final Map<String, IdempotencyKey> keys = new HashMap<>();
    /**
     * Journalled responses by job, then request digest, in the order written. A job is one (run, case), so
     * this is the key SQLite's {@code responses} table has.
     */
    final Map<Long, LinkedHashMap<String, String>> responses = new HashMap<>();
    long nextReservation = 1;

    /** Moves a job to {@code to}, keeping the pending index and the leased counts. */
    void changeState(JobRow j, JobState to) {
      if (j.state == to) {
        return;
      }
      if (j.state == JobState.PENDING) {
        pendingByRun.get(j.runId).remove(j.position);
      } else if (j.state == JobState.LEASED) {
        leasedByRun.merge(j.runId, -1, Integer::sum);
      }
      j.state = to;
      if (to == JobState.PENDING) {
        pendingByRun.computeIfAbsent(j.runId, r -> new TreeMap<>()).put(j.position, j.id);
      } else if (to == JobState.LEASED) {
        leasedByRun.merge(j.runId, 1, Integer::sum);
      }
    }

    /** Counts a run's leased jobs again (after a rollback restored rows). */
    void recount(long runId) {
      long[] ids = jobsByPosition.get(runId);
      int n = 0;
      if (ids != null) {
        for (long id : ids) {
          if (jobs.get(id).state == JobState.LEASED) {
            n++;
          }
        }
      }
      leasedByRun.put(runId, n);
    }

    /** Puts a job back into (or out of) the pending index as its restored row says. */
    void reindex(JobRow j) {
      TreeMap<Integer, Long> pending = pendingByRun.computeIfAbsent(j.runId, r -> new TreeMap<>());
      if (j.state == JobState.PENDING) {
        pending.put(j.position, j.id);
      } else {
        pending.remove(j.position);
      }
    }
    /** Ended attempts per job, in the order they were written. */
    final Map<Long, List<AttemptView>> attempts = new HashMap<>();
    final Map<String, WorkerStatus> workers = new LinkedHashMap<>();
    long nextRunId = 1;
    long nextJobId = 1;
    boolean failLeases;
  }

  private static final class RunRow {
    long id;
    String name;
    RunSpec spec;
    RunState state;
    long createdAt;
    long finishedAt;
    RunCounters counters;
    String pausedReason;

    RunRow copy() {
      RunRow r = new RunRow();
      r.id = id;
      r.name = name;
      r.spec = spec;
      r.state = state;
      r.createdAt = createdAt;
      r.finishedAt = finishedAt;
      r.counters = counters;
      r.pausedReason = pausedReason;
      return r;
    }

    RunView view() {
      return new RunView(id, name, spec, state, createdAt, finishedAt, counters, pausedReason);
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
    /** The highest token issued for the job: above {@link #token} while a backup has a later one. */
    long issued;
    /** Its live backup attempts, by token (an immutable list, replaced on change, so a copy can share it). */
    List<LiveLease> backups = List.of();
    String owner;
    /** Who held the job's last lease that ended retryably: its retry goes to someone else if it can. */
    String lastWorker;
    long leasedAt;
    long leaseExpiry;
    long notBefore;
    Outcome outcome;
    String worker;
    String failureReason;
    JobHistory history = new JobHistory(0, 0, 0);

    JobRow copy() {
      JobRow j = new JobRow();
      j.id = id;
      j.runId = runId;
      j.position = position;
      j.caseId = caseId;
      j.caseJson = caseJson;
      j.state = state;
      j.token = token;
      j.issued = issued;
      j.backups = backups;
      j.owner = owner;
      j.lastWorker = lastWorker;
      j.leasedAt = leasedAt;
      j.leaseExpiry = leaseExpiry;
      j.notBefore = notBefore;
      j.outcome = outcome;
      j.worker = worker;
      j.failureReason = failureReason;
      j.history = history;
      return j;
    }

    JobRecord record() {
      return new JobRecord(id, runId, state, token, owner, leasedAt, leaseExpiry, history, backups.size());
    }

    JobView view() {
      String w = switch (state) {
        case LEASED -> owner;
        case DONE -> worker;
        default -> null;
      };
      return new JobView(id, runId, position, caseId, state, token, history.attempts(), w,
          state == JobState.DONE ? outcome : null, state == JobState.FAILED ? failureReason : null);
    }
  }

  /** One open write transaction: the primitives {@link BatchRules} calls, with the undo log. */
  private final class Tx implements StoreTransaction {
    final Map<Long, JobRow> jobBefore = new HashMap<>();
    final Map<Long, RunRow> runBefore = new HashMap<>();
    final List<Long> attemptsAdded = new ArrayList<>();
    /** Responses this transaction journalled (job, digest), to take out again on rollback. */
    final List<Map.Entry<Long, String>> responsesAdded = new ArrayList<>();
    /** Keys as they were before this transaction wrote them (null: no row). */
    final Map<String, IdempotencyKey> keysBefore = new HashMap<>();
    /** Runs this transaction is creating, with their job ids in insertion order. */
    final Map<Long, List<Long>> created = new LinkedHashMap<>();

    /** The job's row, saved in the undo log before it is changed. */
    JobRow write(long id) {
      JobRow j = state.jobs.get(id);
      if (j != null && !jobBefore.containsKey(id)) {
        jobBefore.put(id, j.copy());
      }
      return j;
    }

    RunRow writeRun(long id) {
      RunRow r = run(id);
      if (!runBefore.containsKey(id)) {
        runBefore.put(id, r.copy());
      }
      return r;
    }

    RunRow run(long id) {
      RunRow r = state.runs.get(id);
      if (r == null) {
        throw new StoreException("run " + id + " vanished while its jobs were being changed");
      }
      return r;
    }

    @Override
    public JobRecord job(long jobId) {
      JobRow j = state.jobs.get(jobId);
      return j == null ? null : j.record();
    }

    @Override
    public RecordedAttempt recordIfLive(long jobId, long token, String worker, Outcome outcome) {
      JobRow j = state.jobs.get(jobId);
      if (j == null) {
        return null;
      }
      LiveLease winner = null;
      if (j.state == JobState.LEASED) {
        for (LiveLease b : j.backups) {
          if (b.token() == token) {
            winner = b;
          }
        }
      }
      boolean current = j.state == JobState.LEASED && (j.token == token || winner != null);
      if (bug == PlantedBug.IGNORE_TOKENS) {
        current = j.state == JobState.LEASED || j.state == JobState.PENDING;
      } else if (bug == PlantedBug.TAKE_RESENT_RESULTS && j.state == JobState.DONE && j.token == token) {
        current = true;
      }
      if (!current) {
        return null;
      }
      JobRecord before = j.record();
      List<LiveLease> abandoned = new ArrayList<>();
      if (winner != null) {
        abandoned.add(before.lease());
        before = new JobRecord(j.id, j.runId, j.state, winner.token(), winner.owner(), winner.leasedAtMillis(),
            winner.leaseExpiryMillis(), j.history, j.backups.size());
      }
      for (LiveLease b : j.backups) {
        if (b != winner) {
          abandoned.add(b);
        }
      }
      JobRow w = write(jobId);
      state.changeState(w, JobState.DONE);
      if (winner != null) {
        w.token = winner.token();
        w.leasedAt = winner.leasedAtMillis();
      }
      w.backups = List.of();
      w.outcome = outcome;
      w.worker = worker;
      w.owner = null;
      w.leaseExpiry = 0;
      return new RecordedAttempt(before, abandoned);
    }

    @Override
    public List<LiveLease> backups(long jobId) {
      JobRow j = state.jobs.get(jobId);
      return j == null ? List.of() : j.backups;
    }

    @Override
    public List<LiveLease> runBackups(long runId) {
      long[] ids = state.jobsByPosition.get(runId);
      List<LiveLease> found = new ArrayList<>();
      if (ids != null) {
        for (long id : ids) {
          found.addAll(state.jobs.get(id).backups);
        }
      }
      found.sort(Comparator.comparingLong(LiveLease::jobId).thenComparingLong(LiveLease::token));
      return found;
    }

    @Override
    public Assignment leaseBackup(long jobId, String worker, long nowMillis, long leaseExpiryMillis) {
      JobRow w = write(jobId);
      w.issued = Math.max(w.issued, w.token) + 1;
      w.history = new JobHistory(w.history.attempts() + 1, w.history.lostStreak(), w.history.timeouts());
      List<LiveLease> backups = new ArrayList<>(w.backups);
      backups.add(new LiveLease(w.id, w.runId, w.issued, worker, nowMillis, leaseExpiryMillis));
      w.backups = List.copyOf(backups);
      return new Assignment(w.id, w.runId, w.issued, w.history.attempts(), w.caseId, w.caseJson,
          run(w.runId).spec.evaluator());
    }

    @Override
    public void endBackup(long jobId, long token) {
      JobRow w = write(jobId);
      w.backups = w.backups.stream().filter(b -> b.token() != token).toList();
    }

    @Override
    public void promoteBackup(long jobId, long token) {
      JobRow w = write(jobId);
      for (LiveLease b : bug == PlantedBug.KEEP_ENDED_LEASE_ON_PROMOTE ? List.<LiveLease>of() : w.backups) {
        if (b.token() == token) {
          w.token = b.token();
          w.owner = b.owner();
          w.leasedAt = b.leasedAtMillis();
          w.leaseExpiry = b.leaseExpiryMillis();
        }
      }
      w.backups = w.backups.stream().filter(b -> b.token() != token).toList();
    }

    @Override
    public void requeue(long jobId, long notBeforeMillis, JobHistory history) {
      JobRow w = write(jobId);
      w.lastWorker = w.owner;
      state.changeState(w, JobState.PENDING);
      w.owner = null;
      w.leaseExpiry = 0;
      w.notBefore = notBeforeMillis;
      w.history = history;
    }

    @Override
    public void fail(long jobId, String reason, JobHistory history) {
      JobRow w = write(jobId);
      state.changeState(w, JobState.FAILED);
      w.owner = null;
      w.leaseExpiry = 0;
      w.failureReason = reason;
      w.history = history;
    }

    @Override
    public void noteLateResult(long jobId, long token, boolean duplicate) {
      List<AttemptView> list = state.attempts.get(jobId);
      if (list == null) {
        return;
      }
      for (int i = 0; i < list.size(); i++) {
        if (list.get(i).token() == token) {
          list.set(i, list.get(i).withLateResult(duplicate));
          return;
        }
      }
    }

    @Override
    public void addAttempt(AttemptView a) {
      List<AttemptView> list = state.attempts.computeIfAbsent(a.jobId(), k -> new ArrayList<>());
      if (bug == null) {
        for (AttemptView other : list) {
          if (other.token() == a.token()) {
            // The attempts table's primary key (job_id, token): one ended attempt per lease.
            throw new StoreException("attempt (job " + a.jobId() + ", token " + a.token() + ") is already recorded");
          }
        }
      }
      list.add(a);
      attemptsAdded.add(a.jobId());
    }

    @Override
    public List<Assignment> lease(long runId, String worker, int maxJobs, long nowMillis, long leaseExpiryMillis,
        boolean avoidOwnRetries) {
      if (state.failLeases) {
        throw new IllegalStateException("injected lease failure");
      }
      TreeMap<Integer, Long> pending = state.pendingByRun.get(runId);
      if (pending == null || pending.isEmpty()) {
        return List.of();
      }
      List<Long> chosen = new ArrayList<>(Math.min(maxJobs, pending.size()));
      for (long id : pending.values()) {
        if (chosen.size() >= maxJobs) {
          break;
        }
        JobRow j = state.jobs.get(id);
        if (j.notBefore <= nowMillis && !(avoidOwnRetries && worker.equals(j.lastWorker))) {
          chosen.add(id);
        }
      }
      EvaluatorSpec evaluator = run(runId).spec.evaluator();
      List<Assignment> out = new ArrayList<>(chosen.size());
      for (long id : chosen) {
        JobRow w = write(id);
        state.changeState(w, JobState.LEASED);
        w.issued = Math.max(w.issued, w.token) + 1;
        w.token = w.issued;
        w.history = new JobHistory(w.history.attempts() + 1, w.history.lostStreak(), w.history.timeouts());
        w.owner = worker;
        w.leasedAt = nowMillis;
        w.leaseExpiry = leaseExpiryMillis;
        out.add(new Assignment(w.id, runId, w.token, w.history.attempts(), w.caseId, w.caseJson, evaluator));
      }
      return out;
    }

    @Override
    public RenewResult renew(RenewRequest r) {
      JobRow j = state.jobs.get(r.jobId());
      if (j == null || j.state != JobState.LEASED) {
        return RenewResult.NOT_CURRENT;
      }
      if (j.token == r.token()) {
        write(j.id).leaseExpiry = r.leaseExpiryMillis();
        return new RenewResult(true, j.runId, j.history.attempts());
      }
      for (LiveLease b : j.backups) {
        if (b.token() == r.token()) {
          JobRow w = write(j.id);
          w.backups = w.backups.stream().map(o -> o.token() != r.token() ? o
              : new LiveLease(o.jobId(), o.runId(), o.token(), o.owner(), o.leasedAtMillis(), r.leaseExpiryMillis())).toList();
          return new RenewResult(true, j.runId, j.history.attempts());
        }
      }
      return RenewResult.NOT_CURRENT;
    }

    @Override
    public List<JobRecord> expiredLeases(long runId, long nowMillis) {
      List<JobRecord> found = leases(runId, j -> j.leaseExpiry < nowMillis);
      found.sort(Comparator.comparingLong(JobRecord::leaseExpiryMillis).thenComparingLong(JobRecord::jobId));
      return found;
    }

    @Override
    public List<JobRecord> leasesIssuedBefore(long runId, long beforeMillis) {
      List<JobRecord> found = leases(runId, j -> j.leasedAt < beforeMillis);
      found.sort(Comparator.comparingLong(JobRecord::jobId));
      return found;
    }

    private List<JobRecord> leases(long runId, java.util.function.Predicate<JobRow> which) {
      long[] ids = state.jobsByPosition.get(runId);
      List<JobRecord> found = new ArrayList<>();
      if (ids != null) {
        for (long id : ids) {
          JobRow j = state.jobs.get(id);
          if (j.state == JobState.LEASED && which.test(j)) {
            found.add(j.record());
          }
        }
      }
      return found;
    }

    @Override
    public AttemptLimits limits(long runId) {
      return run(runId).spec.limits();
    }

    @Override
    public RunCounters addCounters(long runId, CounterDelta delta, long nowMillis) {
      RunRow r = writeRun(runId);
      r.counters = delta.applyTo(runId, r.counters);
      if (r.state == RunState.RUNNING && r.counters.finished()) {
        r.state = RunState.FINISHED;
        r.finishedAt = nowMillis;
      }
      return r.counters;
    }

    @Override
    public RunCounters counters(long runId) {
      return run(runId).counters;
    }

    @Override
    public PendingSummary pending(long runId, long nowMillis) {
      long next = Long.MAX_VALUE;
      boolean now = false;
      TreeMap<Integer, Long> pending = state.pendingByRun.get(runId);
      if (pending != null) {
        for (long id : pending.values()) {
          long notBefore = state.jobs.get(id).notBefore;
          if (notBefore > nowMillis) {
            next = Math.min(next, notBefore);
          } else {
            now = true;
          }
        }
      }
      return new PendingSummary(next, now);
    }

    void rollback() {
      for (Map.Entry<Long, String> r : responsesAdded) {
        state.responses.get(r.getKey()).remove(r.getValue());
      }
      for (int i = attemptsAdded.size() - 1; i >= 0; i--) {
        List<AttemptView> list = state.attempts.get(attemptsAdded.get(i));
        list.remove(list.size() - 1);
      }
      for (Map.Entry<Long, List<Long>> c : created.entrySet()) {
        for (long jobId : c.getValue()) {
          state.jobs.remove(jobId);
          jobBefore.remove(jobId);
        }
        long runId = c.getKey();
        state.runs.remove(runId);
        runBefore.remove(runId);
        state.jobsByPosition.remove(runId);
        state.pendingByRun.remove(runId);
        state.leasedByRun.remove(runId);
        state.jobByCaseId.remove(runId);
      }
      jobBefore.forEach(state.jobs::put);
      jobBefore.values().forEach(state::reindex);
      jobBefore.values().stream().mapToLong(j -> j.runId).distinct().forEach(state::recount);
      runBefore.forEach(state.runs::put);
      keysBefore.forEach((k, v) -> {
        if (v == null) {
          state.keys.remove(k);
        } else {
          state.keys.put(k, v);
        }
      });
    }

    // ---- the response journal ----

    @Override
    public boolean insertResponse(long jobId, String requestDigest, String response, long nowMillis) {
      if (!state.jobs.containsKey(jobId)) {
        throw new StoreException("no job " + jobId + " to journal a response for");
      }
      Map<String, String> byDigest = state.responses.computeIfAbsent(jobId, j -> new LinkedHashMap<>());
      if (byDigest.containsKey(requestDigest)) {
        return false;
      }
      byDigest.put(requestDigest, response);
      responsesAdded.add(Map.entry(jobId, requestDigest));
      return true;
    }

    @Override
    public Map<String, String> responses(long runId, String caseId, int maxBytes) {
      Long jobId = state.jobByCaseId.getOrDefault(runId, Map.of()).get(caseId);
      Map<String, String> byDigest = jobId == null ? null : state.responses.get(jobId);
      if (byDigest == null || byDigest.isEmpty()) {
        return Map.of();
      }
      Map<String, String> out = new LinkedHashMap<>();
      long bytes = 0;
      for (Map.Entry<String, String> e : byDigest.entrySet()) {
        bytes += e.getKey().length() + dev.tally.core.JournalEntry.utf8Length(e.getValue());
        if (bytes > maxBytes) {
          break;
        }
        out.put(e.getKey(), e.getValue());
      }
      return out;
    }

    // ---- fair share and cancel ----

    @Override
    public int leasedCount(long runId) {
      if (bug == PlantedBug.MISCOUNT_RUN_LEASES) {
        return (int) Math.min(Integer.MAX_VALUE / 2, runId * 100_000L); // the oldest run always looks idle
      }
      return state.leasedByRun.getOrDefault(runId, 0);
    }

    @Override
    public RunState runState(long runId) {
      RunRow r = state.runs.get(runId);
      return r == null ? null : r.state;
    }

    @Override
    public void setPause(long runId, String reason) {
      RunRow r = state.runs.get(runId);
      if (r != null && r.state == RunState.RUNNING) {
        writeRun(runId).pausedReason = reason;
      }
    }

    @Override
    public List<JobRecord> leasedJobs(long runId) {
      List<JobRecord> found = leases(runId, j -> true);
      found.sort(Comparator.comparingLong(JobRecord::jobId));
      return found;
    }

    @Override
    public void cancelLeased(long jobId) {
      JobRow w = write(jobId);
      state.changeState(w, JobState.CANCELLED);
      w.backups = List.of();
      w.owner = null;
      w.leaseExpiry = 0;
    }

    @Override
    public long cancelPending(long runId) {
      TreeMap<Integer, Long> pending = state.pendingByRun.get(runId);
      if (pending == null) {
        return 0;
      }
      List<Long> ids = new ArrayList<>(pending.values());
      for (long id : ids) {
        state.changeState(write(id), JobState.CANCELLED);
      }
      return ids.size();
    }

    @Override
    public void cancelRunRow(long runId, long nowMillis) {
      RunRow r = writeRun(runId);
      r.state = RunState.CANCELLED;
      r.finishedAt = nowMillis;
    }

    @Override
    public RequeuedErrors requeueErrors(long runId) {
      long errors = 0;
      long failed = 0;
      long scored = 0;
      double sum = 0;
      double squares = 0;
      long[] ids = state.jobsByPosition.get(runId);
      for (long id : ids == null ? new long[0] : ids) {
        JobRow j = state.jobs.get(id);
        boolean error = j.state == JobState.DONE && j.outcome != null && j.outcome.verdict() == dev.tally.core.Verdict.ERROR;
        if (!error && j.state != JobState.FAILED) {
          continue;
        }
        JobRow w = write(id);
        if (error) {
          errors++;
          if (w.outcome.score() != null) {
            scored++;
            sum += w.outcome.score();
            squares += w.outcome.score() * w.outcome.score();
          }
        } else {
          failed++;
        }
        state.changeState(w, JobState.PENDING);
        w.owner = null;
        w.leaseExpiry = 0;
        w.notBefore = 0;
        w.failureReason = null;
        w.history = new JobHistory(0, 0, 0);
      }
      return new RequeuedErrors(errors, failed, scored, sum, squares);
    }

    @Override
    public void reopenRunRow(long runId) {
      RunRow r = writeRun(runId);
      r.state = RunState.RUNNING;
      r.finishedAt = 0;
    }

    // ---- rescore ----

    @Override
    public List<dev.tally.core.store.RecordedCase> recordedCases(long runId, int afterPosition, int maxCases) {
      long[] ids = state.jobsByPosition.get(runId);
      List<dev.tally.core.store.RecordedCase> out = new ArrayList<>();
      if (ids == null) {
        return out;
      }
      int lo = 0; // the first job by position above afterPosition, by binary search: a page costs its own length
      int hi = ids.length;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (state.jobs.get(ids[mid]).position <= afterPosition) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      for (int i = lo; i < ids.length && out.size() < maxCases; i++) {
        JobRow j = state.jobs.get(ids[i]);
        if (j.state == JobState.DONE) {
          out.add(new dev.tally.core.store.RecordedCase(j.id, j.position, j.caseJson, j.outcome));
        }
      }
      return out;
    }

    @Override
    public void replaceOutcome(long jobId, Outcome outcome) {
      JobRow j = state.jobs.get(jobId);
      if (j == null || j.state != JobState.DONE) {
        throw new StoreException("job " + jobId + " is not done: it has no outcome to replace");
      }
      write(jobId).outcome = outcome;
    }

    @Override
    public void setEvaluatorOption(long runId, String key, String value) {
      RunRow r = writeRun(runId);
      EvaluatorSpec e = r.spec.evaluator();
      Map<String, String> options = new HashMap<>(e.options());
      options.put(key, value);
      r.spec = new RunSpec(r.spec.dataset(), new EvaluatorSpec(e.kind(), options, e.caseTimeout()), r.spec.limits(),
          r.spec.datasetDigest());
    }

    @Override
    public String evaluatorOption(long runId, String key) {
      return run(runId).spec.evaluator().options().get(key);
    }

    // ---- run creation ----

    @Override
    public long insertRun(NewRun run, long nowMillis) {
      RunRow r = new RunRow();
      r.id = state.nextRunId++;
      r.name = run.name();
      r.spec = run.spec();
      r.state = RunState.RUNNING;
      r.createdAt = nowMillis;
      r.counters = RunCounters.empty(0);
      state.runs.put(r.id, r);
      created.put(r.id, new ArrayList<>());
      state.jobByCaseId.put(r.id, new HashMap<>());
      state.pendingByRun.put(r.id, new TreeMap<>());
      return r.id;
    }

    @Override
    public boolean insertJob(long runId, CaseRecord c) {
      Map<String, Long> byCase = state.jobByCaseId.get(runId);
      TreeMap<Integer, Long> pending = state.pendingByRun.get(runId);
      if (byCase.containsKey(c.caseId()) || pending.containsKey(c.position())) {
        return false; // the unique constraints (run, case id) and (run, position): every job is pending now
      }
      JobRow j = new JobRow();
      j.id = state.nextJobId++;
      j.runId = runId;
      j.position = c.position();
      j.caseId = c.caseId();
      j.caseJson = c.caseJson();
      state.jobs.put(j.id, j);
      byCase.put(c.caseId(), j.id);
      pending.put(j.position, j.id);
      created.get(runId).add(j.id);
      return true;
    }

    @Override
    public int positionOfCase(long runId, String caseId) {
      Long id = state.jobByCaseId.getOrDefault(runId, Map.of()).get(caseId);
      return id == null ? -1 : state.jobs.get(id).position;
    }

    @Override
    public void setRunTotal(long runId, long total, long nowMillis) {
      RunRow r = state.runs.get(runId);
      r.counters = RunCounters.empty(total);
      if (total == 0) {
        r.state = RunState.FINISHED;
        r.finishedAt = nowMillis;
      }
      state.jobsByPosition.put(runId, state.pendingByRun.get(runId).values().stream().mapToLong(Long::longValue).toArray());
    }

    // ---- idempotency keys ----

    private String keyOf(String scope, String key) {
      return scope + "\n" + key;
    }

    private void saveKey(String k) {
      if (!keysBefore.containsKey(k)) {
        keysBefore.put(k, state.keys.get(k));
      }
    }

    @Override
    public IdempotencyKey key(String scope, String key) {
      return state.keys.get(keyOf(scope, key));
    }

    @Override
    public void insertKey(IdempotencyKey row) {
      String k = keyOf(row.scope(), row.key());
      if (state.keys.containsKey(k)) {
        throw new StoreException("idempotency key (" + row.scope() + ", " + row.key() + ") already has a row");
      }
      saveKey(k);
      state.keys.put(k, row);
    }

    @Override
    public void updateKey(IdempotencyKey row) {
      String k = keyOf(row.scope(), row.key());
      saveKey(k);
      state.keys.put(k, row);
    }

    @Override
    public void deleteKey(String scope, String key) {
      String k = keyOf(scope, key);
      saveKey(k);
      state.keys.remove(k);
    }

    @Override
    public int deleteKeys(long completedExpiredBy, long heldUntilBefore) {
      return deleteKeysWhere(row -> row.completed() ? row.expiresAtMillis() <= completedExpiredBy
          : row.holdUntilMillis() < heldUntilBefore);
    }

    @Override
    public int deleteHeldKeys() {
      return deleteKeysWhere(row -> !row.completed());
    }

    private int deleteKeysWhere(java.util.function.Predicate<IdempotencyKey> which) {
      List<String> gone = new ArrayList<>();
      state.keys.forEach((k, row) -> {
        if (which.test(row)) {
          gone.add(k);
        }
      });
      gone.forEach(k -> {
        saveKey(k);
        state.keys.remove(k);
      });
      return gone.size();
    }

    @Override
    public String newReservationToken() {
      return state.storeId + "-r" + state.nextReservation++;
    }
  }

  // ---- writes -----------------------------------------------------------------------------------

  /** {@inheritDoc} The run's creation time is this store's clock's. */
  @Override
  public CreatedRun createRun(NewRun run, CaseSource cases, KeyCompletion completion)
      throws CaseSourceException, KeyReservationLostException {
    synchronized (state) {
      ensureOpen("createRun");
      checkEpoch();
      Tx tx = new Tx();
      long nextRunId = state.nextRunId;
      long nextJobId = state.nextJobId;
      try {
        CreatedRun created = RunCreation.create(tx, run, cases, completion, clock.millis());
        commits++;
        return created;
      } catch (CaseSourceException | KeyReservationLostException | RuntimeException | Error e) {
        tx.rollback();
        state.nextRunId = nextRunId; // as SQLite: a rolled-back insert takes no id
        state.nextJobId = nextJobId;
        throw e;
      }
    }
  }

  /** {@inheritDoc} */
  @Override
  public CancelResult cancelRun(long runId, long nowMillis) {
    return write("cancelRun: cancelling run " + runId + " failed; nothing changed",
        tx -> BatchRules.cancelRun(runId, nowMillis, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public boolean unpause(long runId) {
    return write("unpause: resuming run " + runId + " failed; nothing changed", tx -> BatchRules.unpause(runId, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public boolean putRunOptions(long runId, Map<String, String> options) {
    return write("putRunOptions: setting run " + runId + "'s options failed; nothing changed",
        tx -> BatchRules.putRunOptions(runId, options, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public RetryResult retryErrors(long runId, long nowMillis) {
    return write("retryErrors: retrying run " + runId + "'s errors failed; nothing changed",
        tx -> BatchRules.retryErrors(runId, nowMillis, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public dev.tally.core.store.RescorePage rescore(long runId, dev.tally.core.score.Judge judge, int afterPosition,
      long nowMillis) {
    return write("rescore: rescoring run " + runId + " failed; nothing of the page changed",
        tx -> BatchRules.rescore(runId, judge, afterPosition, BatchRules.RESCORE_PAGE_CASES, nowMillis, tx), true);
  }

  /** {@inheritDoc} */
  @Override
  public KeyClaim claimKey(String scope, String key, String fingerprint, long nowMillis, long holdUntilMillis) {
    return write("claimKey failed", tx -> IdempotencyRules.claim(tx, scope, key, fingerprint, nowMillis, holdUntilMillis),
        true);
  }

  /** {@inheritDoc} */
  @Override
  public boolean renewKey(String scope, String key, String reservationToken, long holdUntilMillis) {
    return write("renewKey failed", tx -> IdempotencyRules.renew(tx, scope, key, reservationToken, holdUntilMillis), true);
  }

  /** {@inheritDoc} */
  @Override
  public void releaseKey(String scope, String key, String reservationToken) {
    write("releaseKey failed", tx -> IdempotencyRules.release(tx, scope, key, reservationToken), true);
  }

  /** {@inheritDoc} */
  @Override
  public int purgeKeys(long nowMillis) {
    synchronized (state) {
      int purged = write("purgeKeys failed", tx -> IdempotencyRules.purge(tx, nowMillis), false);
      if (purged > 0) {
        commits++; // a purge that found nothing wrote nothing
      }
      return purged;
    }
  }

  /** {@inheritDoc} */
  @Override
  public int releaseHeldKeys() {
    return write("releaseHeldKeys failed", Tx::deleteHeldKeys, true);
  }

  /** {@inheritDoc} */
  @Override
  public StoreBatchResult apply(StoreBatch batch) {
    return write("apply: a batch of " + batch.records().size() + " records, " + batch.releases().size()
        + " releases and " + batch.leases().size() + " lease requests failed; none of it was applied",
        tx -> BatchRules.apply(batch, tx), !batch.isEmpty());
  }

  /** {@inheritDoc} */
  @Override
  public int releaseLeases(long runId, long nowMillis, RedeliveryPolicy redelivery) {
    return write("releaseLeases: releasing the leases of run " + runId + " failed; nothing changed",
        tx -> BatchRules.releaseAllLeases(runId, nowMillis, redelivery, tx), true);
  }

  private <T> T write(String failure, java.util.function.Function<Tx, T> work, boolean counts) {
    synchronized (state) {
      ensureOpen("write");
      checkEpoch();
      Tx tx = new Tx();
      try {
        T result = work.apply(tx);
        if (counts) {
          commits++;
        }
        return result;
      } catch (RuntimeException | Error e) {
        tx.rollback();
        if (e instanceof StoreException || e instanceof IllegalArgumentException || e instanceof Error) {
          throw e;
        }
        throw new StoreException(failure, e);
      }
    }
  }

  /** {@inheritDoc} */
  @Override
  public void saveWorkerStatuses(List<WorkerStatus> statuses) {
    if (statuses.isEmpty()) {
      return;
    }
    synchronized (state) {
      ensureOpen("saveWorkerStatuses");
      checkEpoch();
      for (WorkerStatus w : statuses) {
        state.workers.put(w.workerId(), w);
      }
      commits++;
    }
  }

  // ---- reads ------------------------------------------------------------------------------------

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

  /** {@inheritDoc} */
  @Override
  public Optional<RunView> run(long runId) {
    synchronized (state) {
      ensureOpen("run");
      RunRow r = state.runs.get(runId);
      return r == null ? Optional.empty() : Optional.of(r.view());
    }
  }

  /** {@inheritDoc} */
  @Override
  public List<RunView> runs() {
    synchronized (state) {
      ensureOpen("runs");
      return state.runs.values().stream().map(RunRow::view).toList();
    }
  }

  /** {@inheritDoc} */
  @Override
  public List<RunView> runs(RunPage page) {
    synchronized (state) {
      ensureOpen("runs");
      List<RunView> out = new ArrayList<>(Math.min(page.limit(), state.runs.size()));
      for (RunRow r : state.runs.headMap(page.beforeRunId(), false).descendingMap().values()) {
        if (out.size() == page.limit()) {
          break;
        }
        out.add(r.view());
      }
      return out;
    }
  }

  /** {@inheritDoc} */
  @Override
  public List<CaseView> cases(long runId, CaseQuery query) {
    synchronized (state) {
      ensureOpen("cases");
      long[] ids = state.jobsByPosition.get(runId);
      List<CaseView> out = new ArrayList<>();
      if (ids == null) {
        return out;
      }
      for (long id : ids) {
        if (out.size() == query.limit()) {
          break;
        }
        JobView j = state.jobs.get(id).view();
        if (query.matches(j)) {
          out.add(new CaseView(j, recordedTiming(j)));
        }
      }
      return out;
    }
  }

  @Override
  public List<ProgressBucket> progress(long runId, long spanMillis) {
    if (spanMillis < 1) {
      throw new IllegalArgumentException("a span is at least 1 ms, got " + spanMillis);
    }
    synchronized (state) {
      ensureOpen("progress");
      long[] ids = state.jobsByPosition.get(runId);
      Optional<RunView> run = run(runId);
      if (ids == null || run.isEmpty()) {
        return List.of();
      }
      long created = run.get().createdAtMillis();
      java.util.TreeMap<Long, long[]> spans = new java.util.TreeMap<>();
      for (long id : ids) {
        JobView j = state.jobs.get(id).view();
        if (j.state() != JobState.DONE && j.state() != JobState.FAILED) {
          continue;
        }
        for (AttemptView a : state.attempts.getOrDefault(id, List.of())) {
          if (a.token() == j.token()) {
            long[] c = spans.computeIfAbsent(Math.max(0, a.endedAtMillis() - created) / spanMillis, k -> new long[3]);
            Verdict v = j.state() == JobState.FAILED || j.outcome() == null ? Verdict.ERROR : j.outcome().verdict();
            c[v == Verdict.PASS ? 0 : v == Verdict.FAIL ? 1 : 2]++;
          }
        }
      }
      List<ProgressBucket> out = new ArrayList<>(spans.size());
      spans.forEach((k, c) -> out.add(new ProgressBucket(k, c[0], c[1], c[2])));
      return out;
    }
  }

  private AttemptTiming recordedTiming(JobView j) {
    if (j.state() != JobState.DONE) {
      return AttemptTiming.NONE;
    }
    for (AttemptView a : state.attempts.getOrDefault(j.jobId(), List.of())) {
      if (a.token() == j.token() && a.ending().equals("recorded")) {
        return a.timing();
      }
    }
    return AttemptTiming.NONE;
  }

  /** {@inheritDoc} */
  @Override
  public Map<String, String> journalledResponses(long runId, String caseId) {
    synchronized (state) {
      ensureOpen("journalledResponses");
      Long id = state.jobByCaseId.getOrDefault(runId, Map.of()).get(caseId);
      Map<String, String> byDigest = id == null ? null : state.responses.get(id);
      return byDigest == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(byDigest));
    }
  }

  @Override
  public Optional<List<AttemptView>> attempts(long runId, String caseId) {
    synchronized (state) {
      ensureOpen("attempts");
      Long id = state.jobByCaseId.getOrDefault(runId, Map.of()).get(caseId);
      if (id == null) {
        return Optional.empty();
      }
      List<AttemptView> out = new ArrayList<>(state.attempts.getOrDefault(id, List.of()));
      out.sort(Comparator.comparingLong(AttemptView::token));
      return Optional.of(out);
    }
  }

  /**
   * How one run looks to leasing now, read from the data itself (not through the primitives a planted bug
   * may break): for the simulation's fair-share check.
   *
   * @param leased the run's leased jobs
   * @param leasable whether a pending job's backoff has passed and some worker among {@code requesters} may
   *     take it (a retry waits for a worker other than its last, unless only that one asks)
   */
  public record LeasingView(int leased, boolean leasable) {}

  /**
   * How run {@code runId} looks to leasing at {@code nowMillis}, for requests from {@code requesters}.
   */
  public LeasingView leasingView(long runId, long nowMillis, java.util.Set<String> requesters) {
    synchronized (state) {
      int leased = state.leasedByRun.getOrDefault(runId, 0);
      TreeMap<Integer, Long> pending = state.pendingByRun.get(runId);
      if (pending != null) {
        for (long id : pending.values()) {
          JobRow j = state.jobs.get(id);
          if (j.notBefore <= nowMillis && (j.lastWorker == null || requesters.size() > 1
              || !requesters.contains(j.lastWorker))) {
            return new LeasingView(leased, true);
          }
        }
      }
      return new LeasingView(leased, false);
    }
  }

  /** {@inheritDoc} */
  @Override
  public void forEachCase(long runId, java.util.function.BiPredicate<String, String> each) {
    List<String[]> cases = new ArrayList<>();
    synchronized (state) {
      ensureOpen("forEachCase");
      long[] ids = state.jobsByPosition.get(runId);
      for (long id : ids == null ? new long[0] : ids) {
        cases.add(new String[] {state.jobs.get(id).caseId, state.jobs.get(id).caseJson});
      }
    }
    for (String[] c : cases) { // outside the lock: the caller may read the store
      if (!each.test(c[0], c[1])) {
        return;
      }
    }
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
      Arrays.sort(sorted);
      List<AttemptView> out = new ArrayList<>();
      for (long id : sorted) {
        List<AttemptView> list = state.attempts.get(id);
        if (list != null) {
          List<AttemptView> byToken = new ArrayList<>(list);
          byToken.sort(Comparator.comparingLong(AttemptView::token)); // stable: a planted bug may repeat a token
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

  // ---- the leader row ---------------------------------------------------------------------------

  /** The epoch this instance's writes carry ({@link #writeAs}). */
  private volatile long writeEpoch = UNFENCED;

  /**
   * {@inheritDoc} The store's clock is the one given at creation (the simulation's virtual clock), so a
   * lease is judged by the one clock every coordinator of the simulation shares.
   */
  @Override
  public dev.tally.core.lead.LeaderRead leader() {
    synchronized (state) {
      ensureOpen("leader");
      return new dev.tally.core.lead.LeaderRead(state.leader, clock.millis());
    }
  }

  /** {@inheritDoc} */
  @Override
  public boolean swapLeader(dev.tally.core.lead.LeaderRow expected, dev.tally.core.lead.LeaderRow next) {
    dev.tally.core.lead.LeaderRow.checkSwap(expected, next);
    synchronized (state) {
      ensureOpen("swapLeader");
      if (!state.leader.equals(expected)) {
        return false;
      }
      state.leader = next;
      commits++;
      return true;
    }
  }

  /** {@inheritDoc} */
  @Override
  public void writeAs(long epoch) {
    writeEpoch = Store.checkWriteEpoch(epoch);
  }

  /** {@inheritDoc} */
  @Override
  public long writeEpoch() {
    return writeEpoch;
  }

  /**
   * The fence every write transaction begins with, under the state's lock (the SQL stores' is the {@code
   * UPDATE coordinator_leader ... WHERE epoch = ?} that begins theirs).
   */
  private void checkEpoch() {
    long epoch = writeEpoch;
    if (epoch != UNFENCED && epoch != state.leader.epoch()) {
      throw new StaleEpochException(epoch, state.leader.epoch(), state.leader.address());
    }
  }

  private void ensureOpen(String operation) {
    if (closed) {
      throw new StoreException(operation + ": the store is closed");
    }
  }

  @Override
  public String toString() {
    return "InMemoryStore" + (bug == null ? "" : "[planted " + bug + "]");
  }
}

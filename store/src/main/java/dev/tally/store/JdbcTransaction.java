package dev.tally.store;

import dev.tally.core.Assignment;
import dev.tally.core.CaseRecord;
import dev.tally.core.Outcome;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.RedeliveryPolicy.JobHistory;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.CounterDelta;
import dev.tally.core.store.JobRecord;
import dev.tally.core.store.JobState;
import dev.tally.core.store.LiveLease;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RequeuedErrors;
import dev.tally.core.store.IdempotencyKey;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunState;
import dev.tally.core.store.StoredResponse;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.RenewRequest;
import dev.tally.core.store.StoreBatch.RenewResult;
import dev.tally.core.store.StoreTransaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Locale;
import java.util.UUID;

/**
 * The {@link StoreTransaction} primitives for {@link dev.tally.core.store.BatchRules}, in SQL shared by every
 * database a {@link JdbcStore} runs on ({@link StoreSql}): each a prepared statement (prepared once per
 * write connection, reused), run inside the write transaction {@link JdbcStore} began. The fencing check
 * and the write of a record are one statement ({@code UPDATE ... WHERE state = 'leased' AND token = ?}): a
 * token that is not the job's own lease updates no row, and is then looked for among the job's live backup
 * attempts ({@code backup_leases}) only if the job has any.
 *
 * <p>A database error surfaces as {@link SqlFailure} (unchecked, wrapping the {@link SQLException}), which
 * {@link JdbcStore} unwraps when it rolls back. Attempt rows are gathered and inserted in multi-row
 * statements ({@link StoreSql#insertAttempts}) by {@link #flush()}, before the commit, or earlier when a
 * statement needs them (a late result noted on its attempt).
 *
 * <p>Thread-safety: none; used under the store's write lock.
 */
final class JdbcTransaction implements StoreTransaction {

  /** A database error inside a primitive; {@link JdbcStore} unwraps it and rolls back. */
  static final class SqlFailure extends RuntimeException {
    SqlFailure(SQLException cause) {
      super(cause.getMessage(), cause);
    }

    SQLException sqlCause() {
      return (SQLException) getCause();
    }
  }

  /** Reads a run's spec (cached: specs never change). */
  @FunctionalInterface
  interface Specs {
    RunSpec spec(long runId) throws SQLException;
  }

  /**
   * The fewest records a batch must have for {@link #recordAllIfLive} to write them in a multi-row
   * statement: a single record keeps its one prepared statement, whose text is shorter to bind and plan.
   */
  static final int MIN_MULTI_ROW_RECORDS = 2;

  private final Statements s;
  private final Specs specs;
  /** Attempt rows added and not yet inserted: they go in multi-row inserts, at the latest by {@link #flush()}. */
  private final List<AttemptView> unwrittenAttempts = new ArrayList<>();

  JdbcTransaction(Statements statements, Specs specs) {
    this.s = statements;
    this.specs = specs;
  }

  @FunctionalInterface
  private interface Sql<T> {
    T run() throws SQLException;
  }

  private static <T> T sql(Sql<T> work) {
    try {
      return work.run();
    } catch (SQLException e) {
      throw new SqlFailure(e);
    }
  }

  private static JobRecord jobRecord(ResultSet rs) throws SQLException {
    return new JobRecord(rs.getLong(1), rs.getLong(2), JobState.valueOf(rs.getString(3).toUpperCase(Locale.ROOT)),
        rs.getLong(4), rs.getString(5), rs.getLong(6), rs.getLong(7),
        new JobHistory(rs.getInt(8), rs.getInt(9), rs.getInt(10)), rs.getInt(11));
  }

  private static List<LiveLease> liveLeases(PreparedStatement q) throws SQLException {
    List<LiveLease> out = new ArrayList<>();
    try (ResultSet rs = q.executeQuery()) {
      while (rs.next()) {
        out.add(new LiveLease(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getString(4), rs.getLong(5), rs.getLong(6)));
      }
    }
    return out;
  }

  private static List<JobRecord> jobRecords(PreparedStatement q) throws SQLException {
    List<JobRecord> out = new ArrayList<>();
    try (ResultSet rs = q.executeQuery()) {
      while (rs.next()) {
        out.add(jobRecord(rs));
      }
    }
    return out;
  }

  @Override
  public JobRecord job(long jobId) {
    return sql(() -> {
      s.selectJob.setLong(1, jobId);
      try (ResultSet rs = s.selectJob.executeQuery()) {
        return rs.next() ? jobRecord(rs) : null;
      }
    });
  }

  @Override
  public RecordedAttempt recordIfLive(long jobId, long token, String worker, Outcome o) {
    return sql(() -> {
      PreparedStatement q = s.recordOutcome;
      bindOutcome(q, o);
      q.setString(9, worker);
      q.setLong(10, jobId);
      q.setLong(11, token);
      try (ResultSet rs = q.executeQuery()) {
        if (rs.next()) {
          int backups = rs.getInt(6);
          JobRecord before = new JobRecord(jobId, rs.getLong(1), JobState.LEASED, token, worker, rs.getLong(2), 0,
              new JobHistory(rs.getInt(3), rs.getInt(4), rs.getInt(5)), backups);
          return new RecordedAttempt(before, backups == 0 ? List.of() : endAllBackups(jobId));
        }
      }
      // Not the job's own lease: one of its live backups, if it has any.
      JobRecord j = job(jobId);
      if (j == null || j.state() != JobState.LEASED || j.backups() == 0) {
        return null;
      }
      LiveLease winner = null;
      for (LiveLease b : backups(jobId)) {
        if (b.token() == token) {
          winner = b;
        }
      }
      if (winner == null) {
        return null;
      }
      PreparedStatement r = s.recordBackupOutcome;
      bindOutcome(r, o);
      r.setString(9, worker);
      r.setLong(10, token);
      r.setLong(11, winner.leasedAtMillis());
      r.setLong(12, jobId);
      r.executeUpdate();
      List<LiveLease> abandoned = new ArrayList<>();
      abandoned.add(j.lease());
      for (LiveLease b : endBackups(jobId)) {
        if (b.token() != token) {
          abandoned.add(b);
        }
      }
      JobRecord before = new JobRecord(jobId, j.runId(), JobState.LEASED, token, winner.owner(),
          winner.leasedAtMillis(), winner.leaseExpiryMillis(), j.history(), j.backups());
      return new RecordedAttempt(before, abandoned);
    });
  }

  /**
   * The batch's records in multi-row statements ({@link StoreSql#recordOutcomes}), {@link
   * StoreSql#MAX_RECORD_ROWS} at a time: each job's first request in one of them, by the same fencing rule as
   * {@link #recordIfLive}. What they did not write (a backup attempt's token, a stale one, a job's second
   * request in the batch) then goes through {@link #recordIfLive} one by one, after the job's first request,
   * so that each request sees what the ones before it did.
   */
  @Override
  public List<RecordedAttempt> recordAllIfLive(List<RecordRequest> requests) {
    int n = requests.size();
    if (n < MIN_MULTI_ROW_RECORDS) {
      return StoreTransaction.super.recordAllIfLive(requests);
    }
    return sql(() -> {
      RecordedAttempt[] out = new RecordedAttempt[n];
      List<Integer> first = new ArrayList<>(n);
      List<Integer> oneByOne = new ArrayList<>();
      Set<Long> seen = new HashSet<>(n * 2);
      for (int i = 0; i < n; i++) {
        (seen.add(requests.get(i).jobId()) ? first : oneByOne).add(i);
      }
      List<Integer> unwritten = new ArrayList<>();
      for (int from = 0; from < first.size(); from += StoreSql.MAX_RECORD_ROWS) {
        List<Integer> chunk = first.subList(from, Math.min(first.size(), from + StoreSql.MAX_RECORD_ROWS));
        PreparedStatement q = s.recordOutcomes(chunk.size());
        int base = 0;
        for (int i : chunk) {
          RecordRequest r = requests.get(i);
          q.setLong(base + 1, r.jobId());
          q.setLong(base + 2, r.token());
          bindOutcome(q, base + 2, r.outcome());
          q.setString(base + 11, r.worker());
          base += StoreSql.RECORD_ROW_VALUES;
        }
        Map<Long, JobRecord> written = new HashMap<>(chunk.size() * 2);
        try (ResultSet rs = q.executeQuery()) {
          while (rs.next()) {
            long jobId = rs.getLong(1);
            written.put(jobId, new JobRecord(jobId, rs.getLong(2), JobState.LEASED, 0, null, rs.getLong(3), 0,
                new JobHistory(rs.getInt(4), rs.getInt(5), rs.getInt(6)), rs.getInt(7)));
          }
        }
        for (int i : chunk) {
          RecordRequest r = requests.get(i);
          JobRecord w = written.get(r.jobId());
          if (w == null) {
            unwritten.add(i);
            continue;
          }
          JobRecord before = new JobRecord(r.jobId(), w.runId(), JobState.LEASED, r.token(), r.worker(),
              w.leasedAtMillis(), 0, w.history(), w.backups());
          out[i] = new RecordedAttempt(before, w.backups() == 0 ? List.of() : endAllBackups(r.jobId()));
        }
      }
      // A job's first request comes before its later ones here too: each list is in the batch's order.
      for (List<Integer> rest : List.of(unwritten, oneByOne)) {
        for (int i : rest) {
          RecordRequest r = requests.get(i);
          out[i] = recordIfLive(r.jobId(), r.token(), r.worker(), r.outcome());
        }
      }
      return java.util.Arrays.asList(out);
    });
  }

  /** The job's record ended every live backup of it: they go, and are returned. */
  private List<LiveLease> endAllBackups(long jobId) throws SQLException {
    s.clearBackups.setLong(1, jobId);
    s.clearBackups.executeUpdate();
    return endBackups(jobId);
  }

  /** Deletes every live backup of a job (it ended), returning them. */
  private List<LiveLease> endBackups(long jobId) throws SQLException {
    s.deleteBackups.setLong(1, jobId);
    List<LiveLease> out = liveLeases(s.deleteBackups);
    out.sort(Comparator.comparingLong(LiveLease::token));
    return out;
  }

  @Override
  public List<LiveLease> backups(long jobId) {
    return sql(() -> {
      s.selectBackups.setLong(1, jobId);
      return liveLeases(s.selectBackups);
    });
  }

  @Override
  public List<LiveLease> runBackups(long runId) {
    return sql(() -> {
      s.selectRunBackups.setLong(1, runId);
      return liveLeases(s.selectRunBackups);
    });
  }

  @Override
  public Assignment leaseBackup(long jobId, String worker, long nowMillis, long leaseExpiryMillis) {
    return sql(() -> {
      s.issueBackup.setLong(1, jobId);
      long runId;
      long token;
      int attempt;
      String caseId;
      String caseJson;
      try (ResultSet rs = s.issueBackup.executeQuery()) {
        if (!rs.next()) {
          throw new SQLException("job " + jobId + " vanished while a backup attempt was issued");
        }
        runId = rs.getLong(1);
        token = rs.getLong(2);
        attempt = rs.getInt(3);
        caseId = rs.getString(4);
        caseJson = rs.getString(5);
      }
      PreparedStatement q = s.insertBackup;
      q.setLong(1, jobId);
      q.setLong(2, runId);
      q.setLong(3, token);
      q.setString(4, worker);
      q.setLong(5, nowMillis);
      q.setLong(6, leaseExpiryMillis);
      q.executeUpdate();
      return new Assignment(jobId, runId, token, attempt, caseId, caseJson, specs.spec(runId).evaluator());
    });
  }

  @Override
  public void endBackup(long jobId, long token) {
    sql(() -> {
      s.deleteBackup.setLong(1, jobId);
      s.deleteBackup.setLong(2, token);
      if (s.deleteBackup.executeUpdate() == 1) {
        s.countBackupEnded.setLong(1, jobId);
        s.countBackupEnded.executeUpdate();
      }
      return null;
    });
  }

  @Override
  public void promoteBackup(long jobId, long token) {
    sql(() -> {
      s.promoteBackup.setLong(1, jobId);
      s.promoteBackup.setLong(2, token);
      s.promoteBackup.setLong(3, jobId);
      s.promoteBackup.executeUpdate();
      s.deleteBackup.setLong(1, jobId);
      s.deleteBackup.setLong(2, token);
      return s.deleteBackup.executeUpdate();
    });
  }

  @Override
  public void requeue(long jobId, long notBeforeMillis, JobHistory h) {
    sql(() -> {
      PreparedStatement q = s.requeueJob;
      q.setLong(1, notBeforeMillis);
      q.setInt(2, h.attempts());
      q.setInt(3, h.lostStreak());
      q.setInt(4, h.timeouts());
      q.setLong(5, jobId);
      return q.executeUpdate();
    });
  }

  @Override
  public void fail(long jobId, String reason, JobHistory h) {
    sql(() -> {
      PreparedStatement q = s.failJob;
      q.setString(1, reason);
      q.setInt(2, h.attempts());
      q.setInt(3, h.lostStreak());
      q.setInt(4, h.timeouts());
      q.setLong(5, jobId);
      return q.executeUpdate();
    });
  }

  @Override
  public void addAttempt(AttemptView a) {
    unwrittenAttempts.add(a);
  }

  /** Inserts the attempt rows added since the last call, {@link StoreSql#MAX_ATTEMPT_ROWS} to a statement. */
  private void writeAttempts() throws SQLException {
    int n = unwrittenAttempts.size();
    for (int from = 0; from < n; from += StoreSql.MAX_ATTEMPT_ROWS) {
      List<AttemptView> chunk = unwrittenAttempts.subList(from, Math.min(n, from + StoreSql.MAX_ATTEMPT_ROWS));
      PreparedStatement q = chunk.size() == 1 ? s.insertAttempt : s.insertAttempts(chunk.size());
      int base = 0;
      for (AttemptView a : chunk) {
        q.setLong(base + 1, a.jobId());
        q.setLong(base + 2, a.token());
        q.setString(base + 3, a.worker());
        q.setLong(base + 4, a.startedAtMillis());
        q.setLong(base + 5, a.endedAtMillis());
        q.setString(base + 6, a.ending());
        q.setString(base + 7, a.detail());
        setDuration(q, base + 8, a.timing().elapsedMillis());
        setDuration(q, base + 9, a.timing().queuedMillis());
        setDuration(q, base + 10, a.timing().runMillis());
        base += StoreSql.ATTEMPT_ROW_VALUES;
      }
      q.executeUpdate();
    }
    unwrittenAttempts.clear();
  }

  private static void setDuration(PreparedStatement q, int index, long millis) throws SQLException {
    if (millis == AttemptTiming.UNKNOWN) {
      q.setNull(index, Types.INTEGER);
    } else {
      q.setLong(index, millis);
    }
  }

  // ---- fair share and cancel ----

  @Override
  public int leasedCount(long runId) {
    return sql(() -> {
      s.leasedCount.setLong(1, runId);
      try (ResultSet rs = s.leasedCount.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    });
  }

  @Override
  public RunState runState(long runId) {
    return sql(() -> {
      s.runState.setLong(1, runId);
      try (ResultSet rs = s.runState.executeQuery()) {
        return rs.next() ? RunState.parse(rs.getString(1)) : null;
      }
    });
  }

  @Override
  public void setPause(long runId, String reason) {
    sql(() -> {
      PreparedStatement q = s.setPause;
      q.setString(1, reason);
      q.setLong(2, runId);
      q.executeUpdate();
      return null;
    });
  }

  @Override
  public List<JobRecord> leasedJobs(long runId) {
    return sql(() -> {
      s.selectLeased.setLong(1, runId);
      return jobRecords(s.selectLeased);
    });
  }

  @Override
  public void cancelLeased(long jobId) {
    sql(() -> {
      s.cancelLeased.setLong(1, jobId);
      int changed = s.cancelLeased.executeUpdate();
      endBackups(jobId);
      return changed;
    });
  }

  @Override
  public long cancelPending(long runId) {
    return sql(() -> {
      s.cancelPending.setLong(1, runId);
      return (long) s.cancelPending.executeUpdate();
    });
  }

  @Override
  public void cancelRunRow(long runId, long nowMillis) {
    sql(() -> {
      s.cancelRun.setLong(1, nowMillis);
      s.cancelRun.setLong(2, runId);
      return s.cancelRun.executeUpdate();
    });
  }

  @Override
  public RequeuedErrors requeueErrors(long runId) {
    return sql(() -> {
      RequeuedErrors counted;
      s.countErrors.setLong(1, runId);
      try (ResultSet rs = s.countErrors.executeQuery()) {
        rs.next();
        counted = new RequeuedErrors(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getDouble(4), rs.getDouble(5));
      }
      s.requeueErrors.setLong(1, runId);
      int changed = s.requeueErrors.executeUpdate();
      if (changed != counted.recordedErrors() + counted.outOfAttempts()) {
        throw new SQLException("run " + runId + ": counted " + (counted.recordedErrors() + counted.outOfAttempts())
            + " errored jobs but put " + changed + " back in the queue");
      }
      return counted;
    });
  }

  @Override
  public void reopenRunRow(long runId) {
    sql(() -> {
      s.reopenRun.setLong(1, runId);
      return s.reopenRun.executeUpdate();
    });
  }

  // ---- rescore ----

  @Override
  public List<dev.tally.core.store.RecordedCase> recordedCases(long runId, int afterPosition, int maxCases) {
    return sql(() -> {
      PreparedStatement q = s.selectRecordedCases;
      q.setLong(1, runId);
      q.setInt(2, afterPosition);
      q.setInt(3, maxCases);
      List<dev.tally.core.store.RecordedCase> out = new ArrayList<>();
      try (ResultSet rs = q.executeQuery()) {
        while (rs.next()) {
          double score = rs.getDouble(5);
          Double boxed = rs.wasNull() ? null : score;
          int exit = rs.getInt(10);
          Integer exitCode = rs.wasNull() ? null : exit;
          Outcome o = new Outcome(dev.tally.core.Verdict.parse(rs.getString(4)), boxed, rs.getString(6), rs.getLong(7),
              rs.getString(8), rs.getString(9), exitCode, rs.getString(11));
          out.add(new dev.tally.core.store.RecordedCase(rs.getLong(1), rs.getInt(2), rs.getString(3), o));
        }
      }
      return out;
    });
  }

  /** Binds an outcome's columns, 1 to 8, in the order of {@link Statements#recordOutcome} and {@link Statements#replaceOutcome}. */
  private static void bindOutcome(PreparedStatement q, Outcome o) throws SQLException {
    bindOutcome(q, 0, o);
  }

  /** Binds an outcome's columns at {@code base + 1} to {@code base + 8}, in {@link #bindOutcome(PreparedStatement, Outcome)}'s order. */
  private static void bindOutcome(PreparedStatement q, int base, Outcome o) throws SQLException {
    q.setString(base + 1, o.verdict().wireName());
    if (o.score() == null) {
      q.setNull(base + 2, Types.DOUBLE);
    } else {
      q.setDouble(base + 2, o.score());
    }
    q.setString(base + 3, o.outputTail());
    q.setLong(base + 4, o.durationMillis());
    q.setString(base + 5, o.answer());
    q.setString(base + 6, o.fieldsJson());
    if (o.exitCode() == null) {
      q.setNull(base + 7, Types.INTEGER);
    } else {
      q.setInt(base + 7, o.exitCode());
    }
    q.setString(base + 8, o.stderrTail());
  }

  @Override
  public void replaceOutcome(long jobId, Outcome o) {
    sql(() -> {
      PreparedStatement q = s.replaceOutcome;
      bindOutcome(q, o);
      q.setLong(9, jobId);
      if (q.executeUpdate() != 1) {
        throw new SQLException("job " + jobId + " is not done: it has no outcome to replace");
      }
      return null;
    });
  }

  @Override
  public void setEvaluatorOption(long runId, String key, String value) {
    sql(() -> {
      s.upsertOption.setLong(1, runId);
      s.upsertOption.setString(2, key);
      s.upsertOption.setString(3, value);
      return s.upsertOption.executeUpdate();
    });
  }

  @Override
  public String evaluatorOption(long runId, String key) {
    return sql(() -> {
      s.selectOption.setLong(1, runId);
      s.selectOption.setString(2, key);
      try (ResultSet rs = s.selectOption.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    });
  }

  // ---- run creation ----

  @Override
  public long insertRun(NewRun run, long nowMillis) {
    return sql(() -> {
      RunSpec spec = run.spec();
      PreparedStatement ins = s.insertRun;
      ins.setString(1, spec.dataset());
      ins.setString(2, spec.evaluator().kind());
      ins.setLong(3, spec.evaluator().caseTimeout().toMillis());
      ins.setInt(4, spec.maxAttempts());
      ins.setInt(5, spec.limits().timeoutRetries());
      ins.setLong(6, nowMillis);
      ins.setString(7, spec.datasetDigest());
      ins.setString(8, run.name());
      long runId;
      try (ResultSet rs = ins.executeQuery()) {
        rs.next();
        runId = rs.getLong(1);
      }
      for (java.util.Map.Entry<String, String> o : spec.evaluator().options().entrySet()) {
        s.insertOption.setLong(1, runId);
        s.insertOption.setString(2, o.getKey());
        s.insertOption.setString(3, o.getValue());
        s.insertOption.addBatch();
      }
      s.insertOption.executeBatch();
      return runId;
    });
  }

  @Override
  public boolean insertJob(long runId, CaseRecord c) {
    return sql(() -> {
      PreparedStatement q = s.insertJob;
      q.setLong(1, runId);
      q.setInt(2, c.position());
      q.setString(3, c.caseId());
      q.setString(4, c.caseJson());
      // ON CONFLICT DO NOTHING: a repeated case inserts no row, and the transaction goes on.
      return q.executeUpdate() == 1;
    });
  }

  @Override
  public boolean insertResponse(long jobId, String requestDigest, String response, long nowMillis) {
    return sql(() -> {
      s.insertResponse.setString(1, requestDigest);
      s.insertResponse.setString(2, response);
      s.insertResponse.setLong(3, nowMillis);
      s.insertResponse.setLong(4, jobId);
      return s.insertResponse.executeUpdate() == 1;
    });
  }

  @Override
  public java.util.Map<String, String> responses(long runId, String caseId, int maxBytes) {
    return sql(() -> JdbcStore.responses(s.selectResponses, runId, caseId, maxBytes));
  }

  @Override
  public int positionOfCase(long runId, String caseId) {
    return sql(() -> {
      s.positionOfCase.setLong(1, runId);
      s.positionOfCase.setString(2, caseId);
      try (ResultSet rs = s.positionOfCase.executeQuery()) {
        return rs.next() ? rs.getInt(1) : -1;
      }
    });
  }

  @Override
  public void setRunTotal(long runId, long total, long nowMillis) {
    sql(() -> {
      s.setRunTotal.setLong(1, total);
      s.setRunTotal.setLong(2, total);
      s.setRunTotal.setLong(3, total);
      s.setRunTotal.setLong(4, nowMillis);
      s.setRunTotal.setLong(5, runId);
      return s.setRunTotal.executeUpdate();
    });
  }

  // ---- idempotency keys ----

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();
  private static final com.fasterxml.jackson.core.type.TypeReference<java.util.LinkedHashMap<String, String>> HEADERS =
      new com.fasterxml.jackson.core.type.TypeReference<>() {};

  @Override
  public IdempotencyKey key(String scope, String key) {
    return sql(() -> {
      s.selectKey.setString(1, scope);
      s.selectKey.setString(2, key);
      try (ResultSet rs = s.selectKey.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        boolean completed = rs.getInt(1) == 1;
        StoredResponse response = null;
        if (completed) {
          java.util.Map<String, String> headers;
          try {
            headers = JSON.readValue(rs.getString(8), HEADERS);
          } catch (java.io.IOException e) {
            throw new SQLException("idempotency key (" + scope + ", " + key + ") has unreadable headers", e);
          }
          response = new StoredResponse(rs.getInt(6), rs.getString(7), headers, rs.getBytes(9));
        }
        return new IdempotencyKey(scope, key, completed, rs.getString(2), rs.getLong(3), rs.getString(4),
            rs.getLong(5), response, rs.getLong(10), rs.getLong(11));
      }
    });
  }

  /** Binds a key row's columns in the order of {@link Statements#insertKey} and {@link Statements#updateKey}. */
  private static void bindKey(PreparedStatement q, IdempotencyKey row) throws SQLException {
    q.setInt(1, row.completed() ? 1 : 0);
    q.setString(2, row.reservationToken());
    q.setLong(3, row.holdUntilMillis());
    q.setString(4, row.fingerprint());
    if (row.runId() > 0) {
      q.setLong(5, row.runId());
    } else {
      q.setNull(5, Types.INTEGER);
    }
    StoredResponse r = row.response();
    if (r == null) {
      q.setNull(6, Types.INTEGER);
      q.setNull(7, Types.VARCHAR);
      q.setNull(8, Types.VARCHAR);
      q.setNull(9, Types.BINARY); // BLOB would be an oid to PostgreSQL's driver, not a bytea
    } else {
      q.setInt(6, r.status());
      q.setString(7, r.contentType());
      try {
        q.setString(8, JSON.writeValueAsString(r.headers()));
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new SQLException("cannot encode response headers", e);
      }
      q.setBytes(9, r.body());
    }
    q.setLong(10, row.createdAtMillis());
    q.setLong(11, row.expiresAtMillis());
    q.setString(12, row.scope());
    q.setString(13, row.key());
  }

  @Override
  public void insertKey(IdempotencyKey row) {
    sql(() -> {
      bindKey(s.insertKey, row);
      return s.insertKey.executeUpdate();
    });
  }

  @Override
  public void updateKey(IdempotencyKey row) {
    sql(() -> {
      bindKey(s.updateKey, row);
      return s.updateKey.executeUpdate();
    });
  }

  @Override
  public void deleteKey(String scope, String key) {
    sql(() -> {
      s.deleteKey.setString(1, scope);
      s.deleteKey.setString(2, key);
      return s.deleteKey.executeUpdate();
    });
  }

  @Override
  public int deleteKeys(long completedExpiredBy, long heldUntilBefore) {
    return sql(() -> {
      s.deleteKeys.setLong(1, completedExpiredBy);
      s.deleteKeys.setLong(2, heldUntilBefore);
      return s.deleteKeys.executeUpdate();
    });
  }

  @Override
  public int deleteHeldKeys() {
    return sql(() -> s.deleteHeldKeys.executeUpdate());
  }

  @Override
  public String newReservationToken() {
    return UUID.randomUUID().toString();
  }

  @Override
  public void noteLateResult(long jobId, long token, boolean duplicate) {
    sql(() -> {
      writeAttempts(); // the attempt may have ended in this very batch
      PreparedStatement q = duplicate ? s.noteDuplicate : s.noteFenced;
      q.setLong(1, jobId);
      q.setLong(2, token);
      q.executeUpdate();
      return null;
    });
  }

  /** Saves the workers' reports, each replacing the last one of its worker (not a primitive of the rules). */
  void saveWorkers(List<dev.tally.core.store.WorkerStatus> statuses) {
    // One row per worker id, its last status (Store#saveWorkerStatuses): a batched upsert naming a row twice
    // fails on PostgreSQL ("ON CONFLICT DO UPDATE command cannot affect row a second time"), and a worker's
    // superseded session and its new one are reported in one batch.
    java.util.Map<String, dev.tally.core.store.WorkerStatus> last = new java.util.LinkedHashMap<>();
    statuses.forEach(w -> last.put(w.workerId(), w));
    sql(() -> {
      PreparedStatement p = s.upsertWorker;
      for (dev.tally.core.store.WorkerStatus w : last.values()) {
        p.setString(1, w.workerId());
        p.setString(2, w.name());
        p.setString(3, w.suspicion());
        p.setInt(4, w.acceptingWork() ? 1 : 0);
        p.setLong(5, w.ejectedUntilMillis());
        p.setString(6, w.ejectionReason());
        p.setInt(7, w.timesEjected());
        p.setInt(8, w.inFlight());
        p.setLong(9, w.reportedAtMillis());
        p.setString(10, w.leftReason());
        if (Double.isNaN(w.suspicionLevel())) {
          p.setNull(11, Types.DOUBLE);
        } else {
          p.setDouble(11, w.suspicionLevel());
        }
        p.setInt(12, w.slots());
        p.addBatch();
      }
      return p.executeBatch();
    });
  }

  /** Inserts the attempt rows gathered so far; called before the commit. */
  void flush() {
    sql(() -> {
      writeAttempts();
      return null;
    });
  }

  private record Leased(long jobId, long runId, int position, long token, int attempt, String caseId, String caseJson) {}

  @Override
  public List<Assignment> lease(long runId, String worker, int maxJobs, long nowMillis, long leaseExpiryMillis,
      boolean avoidOwnRetries) {
    return sql(() -> {
      PreparedStatement q = s.leaseJobs;
      q.setString(1, worker);
      q.setLong(2, nowMillis);
      q.setLong(3, leaseExpiryMillis);
      q.setLong(4, runId);
      q.setLong(5, nowMillis);
      q.setInt(6, avoidOwnRetries ? 1 : 0);
      q.setString(7, worker);
      q.setInt(8, maxJobs);
      List<Leased> rows = new ArrayList<>(Math.min(maxJobs, 1024));
      try (ResultSet rs = q.executeQuery()) {
        while (rs.next()) {
          rows.add(new Leased(rs.getLong(1), rs.getLong(2), rs.getInt(3), rs.getLong(4), rs.getInt(5),
              rs.getString(6), rs.getString(7)));
        }
      }
      // Neither database promises RETURNING rows in any order; callers get dataset order.
      rows.sort(Comparator.comparingInt(Leased::position));
      List<Assignment> out = new ArrayList<>(rows.size());
      if (!rows.isEmpty()) {
        var evaluator = specs.spec(runId).evaluator();
        for (Leased r : rows) {
          out.add(new Assignment(r.jobId(), r.runId(), r.token(), r.attempt(), r.caseId(), r.caseJson(), evaluator));
        }
      }
      return out;
    });
  }

  @Override
  public RenewResult renew(RenewRequest r) {
    return sql(() -> {
      PreparedStatement q = s.renewLease;
      q.setLong(1, r.leaseExpiryMillis());
      q.setLong(2, r.jobId());
      q.setLong(3, r.token());
      try (ResultSet rs = q.executeQuery()) {
        if (rs.next()) {
          return new RenewResult(true, rs.getLong(1), rs.getInt(2));
        }
      }
      PreparedStatement b = s.renewBackup; // a backup row exists only while its job is leased
      b.setLong(1, r.leaseExpiryMillis());
      b.setLong(2, r.jobId());
      b.setLong(3, r.token());
      try (ResultSet rs = b.executeQuery()) {
        return rs.next() ? new RenewResult(true, rs.getLong(1), rs.getInt(2)) : RenewResult.NOT_CURRENT;
      }
    });
  }

  @Override
  public List<JobRecord> expiredLeases(long runId, long nowMillis) {
    return sql(() -> {
      s.selectExpiredLeases.setLong(1, runId);
      s.selectExpiredLeases.setLong(2, nowMillis);
      return jobRecords(s.selectExpiredLeases);
    });
  }

  @Override
  public List<JobRecord> leasesIssuedBefore(long runId, long beforeMillis) {
    return sql(() -> {
      s.selectLeasesIssuedBefore.setLong(1, runId);
      s.selectLeasesIssuedBefore.setLong(2, beforeMillis);
      return jobRecords(s.selectLeasesIssuedBefore);
    });
  }

  @Override
  public AttemptLimits limits(long runId) {
    return sql(() -> specs.spec(runId).limits());
  }

  @Override
  public RunCounters addCounters(long runId, CounterDelta d, long nowMillis) {
    return sql(() -> {
      long ended = d.ended();
      PreparedStatement q = s.addCounters;
      q.setLong(1, d.passed());
      q.setLong(2, d.failed());
      q.setLong(3, d.errored());
      q.setLong(4, d.jobsFailed());
      q.setLong(5, d.duplicatesSuppressed());
      q.setLong(6, d.staleResultsFenced());
      q.setLong(7, d.redeliveries());
      q.setLong(8, d.cancelled());
      q.setLong(9, d.scored());
      q.setDouble(10, d.scoreSum());
      q.setDouble(11, d.scoreSumOfSquares());
      q.setLong(12, d.promptTokens());
      q.setLong(13, d.completionTokens());
      q.setLong(14, d.backups());
      q.setLong(15, ended);
      q.setLong(16, ended);
      q.setLong(17, nowMillis);
      q.setLong(18, runId);
      return countersOf(q, runId);
    });
  }

  @Override
  public RunCounters counters(long runId) {
    return sql(() -> {
      s.selectCounters.setLong(1, runId);
      return countersOf(s.selectCounters, runId);
    });
  }

  private static RunCounters countersOf(PreparedStatement q, long runId) throws SQLException {
    try (ResultSet rs = q.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException("run " + runId + " vanished while its jobs were being changed");
      }
      return JdbcStore.counters(rs, 1);
    }
  }

  @Override
  public PendingSummary pending(long runId, long nowMillis) {
    return sql(() -> {
      PreparedStatement q = s.pendingSummary;
      q.setLong(1, runId);
      q.setLong(2, nowMillis);
      q.setLong(3, runId);
      q.setLong(4, nowMillis);
      try (ResultSet rs = q.executeQuery()) {
        rs.next();
        long min = rs.getLong(1);
        long next = rs.wasNull() ? Long.MAX_VALUE : min;
        return new PendingSummary(next, rs.getBoolean(2));
      }
    });
  }

  /** The write connection's statements, prepared once: the hot path never parses SQL. */
  static final class Statements {
    final PreparedStatement insertRun;
    final PreparedStatement insertOption;
    final PreparedStatement setPause;
    final PreparedStatement insertJob;
    final PreparedStatement recordOutcome;
    final PreparedStatement recordBackupOutcome;
    final PreparedStatement selectBackups;
    final PreparedStatement selectRunBackups;
    final PreparedStatement deleteBackups;
    final PreparedStatement deleteBackup;
    final PreparedStatement countBackupEnded;
    final PreparedStatement clearBackups;
    final PreparedStatement issueBackup;
    final PreparedStatement insertBackup;
    final PreparedStatement promoteBackup;
    final PreparedStatement renewBackup;
    final PreparedStatement selectJob;
    final PreparedStatement failJob;
    final PreparedStatement requeueJob;
    final PreparedStatement insertAttempt;
    final PreparedStatement noteDuplicate;
    final PreparedStatement noteFenced;
    final PreparedStatement leaseJobs;
    final PreparedStatement addCounters;
    final PreparedStatement selectCounters;
    final PreparedStatement pendingSummary;
    final PreparedStatement renewLease;
    final PreparedStatement selectExpiredLeases;
    final PreparedStatement selectLeasesIssuedBefore;
    final PreparedStatement begin;
    final PreparedStatement commit;
    final PreparedStatement leasedCount;
    final PreparedStatement runState;
    final PreparedStatement selectLeased;
    final PreparedStatement cancelLeased;
    final PreparedStatement cancelPending;
    final PreparedStatement cancelRun;
    final PreparedStatement countErrors;
    final PreparedStatement requeueErrors;
    final PreparedStatement reopenRun;
    final PreparedStatement positionOfCase;
    final PreparedStatement setRunTotal;
    final PreparedStatement selectKey;
    final PreparedStatement insertKey;
    final PreparedStatement updateKey;
    final PreparedStatement deleteKey;
    final PreparedStatement deleteKeys;
    final PreparedStatement deleteHeldKeys;
    final PreparedStatement insertResponse;
    final PreparedStatement selectResponses;
    final PreparedStatement selectRecordedCases;
    final PreparedStatement replaceOutcome;
    final PreparedStatement upsertOption;
    final PreparedStatement selectOption;
    final PreparedStatement upsertWorker;
    /** Begins every fenced write ({@link Dialect#fence()}): no row when the leader row names another epoch. */
    final PreparedStatement fenceLeader;
    /** Counts a fenced write against its epoch ({@code leader_epochs.writes}). */
    final PreparedStatement countEpochWrite;
    final PreparedStatement selectLeader;
    private final Connection connection;
    /** {@link StoreSql#recordOutcomes} by its number of rows, each prepared when first needed. */
    private final PreparedStatement[] recordOutcomes = new PreparedStatement[StoreSql.MAX_RECORD_ROWS + 1];

    /** {@link StoreSql#insertAttempts} by its number of rows, each prepared when first needed. */
    private final PreparedStatement[] insertAttempts = new PreparedStatement[StoreSql.MAX_ATTEMPT_ROWS + 1];

    /** The multi-row insert of {@code rows} attempts, prepared on first use and then reused. */
    PreparedStatement insertAttempts(int rows) throws SQLException {
      PreparedStatement q = insertAttempts[rows];
      if (q == null) {
        q = connection.prepareStatement(StoreSql.insertAttempts(rows));
        insertAttempts[rows] = q;
      }
      return q;
    }

    /** The multi-row record of {@code rows} jobs, prepared on first use and then reused. */
    PreparedStatement recordOutcomes(int rows) throws SQLException {
      PreparedStatement q = recordOutcomes[rows];
      if (q == null) {
        q = connection.prepareStatement(StoreSql.recordOutcomes(rows));
        recordOutcomes[rows] = q;
      }
      return q;
    }

    /** Closes every statement, ignoring failures: they are being replaced. */
    void closeQuietly() {
      for (PreparedStatement p : java.util.stream.Stream.concat(java.util.Arrays.stream(recordOutcomes),
          java.util.Arrays.stream(insertAttempts)).toList()) {
        try {
          if (p != null) {
            p.close();
          }
        } catch (SQLException ignored) {
          // already closed, or the connection is gone: either way it is not used again
        }
      }
      for (PreparedStatement p : new PreparedStatement[] {insertRun, insertOption, insertJob, recordOutcome, selectJob,
          failJob, requeueJob, insertAttempt, noteDuplicate, noteFenced, leaseJobs, addCounters, selectCounters, pendingSummary, renewLease,
          selectExpiredLeases, selectLeasesIssuedBefore, begin, commit, leasedCount, runState, selectLeased,
          countErrors, requeueErrors, reopenRun,
          cancelLeased, cancelPending, cancelRun, positionOfCase, setRunTotal, selectKey, insertKey, updateKey, deleteKey,
          deleteKeys, deleteHeldKeys, insertResponse, selectResponses, selectRecordedCases, replaceOutcome, upsertOption,
          selectOption, upsertWorker, recordBackupOutcome, selectBackups, selectRunBackups, deleteBackups, deleteBackup,
          countBackupEnded, clearBackups, issueBackup, insertBackup, promoteBackup, renewBackup, fenceLeader, countEpochWrite,
          selectLeader}) {
        try {
          p.close();
        } catch (SQLException ignored) {
          // already closed, or the connection is gone: either way it is not used again
        }
      }
    }

    /** Prepares every statement of {@code sql} on the write connection {@code c}. */
    Statements(Connection c, StoreSql sql) throws SQLException {
      connection = c;
      insertRun = c.prepareStatement(sql.insertRun);
      insertOption = c.prepareStatement(sql.insertOption);
      setPause = c.prepareStatement(sql.setPause);
      insertJob = c.prepareStatement(sql.insertJob);
      recordOutcome = c.prepareStatement(sql.recordOutcome);
      selectJob = c.prepareStatement(sql.selectJob);
      failJob = c.prepareStatement(sql.failJob);
      requeueJob = c.prepareStatement(sql.requeueJob);
      insertAttempt = c.prepareStatement(sql.insertAttempt);
      noteDuplicate = c.prepareStatement(sql.noteDuplicate);
      noteFenced = c.prepareStatement(sql.noteFenced);
      leaseJobs = c.prepareStatement(sql.leaseJobs);
      addCounters = c.prepareStatement(sql.addCounters);
      selectCounters = c.prepareStatement(sql.selectCounters);
      pendingSummary = c.prepareStatement(sql.pendingSummary);
      renewLease = c.prepareStatement(sql.renewLease);
      selectExpiredLeases = c.prepareStatement(sql.selectExpiredLeases);
      selectLeasesIssuedBefore = c.prepareStatement(sql.selectLeasesIssuedBefore);
      begin = c.prepareStatement(sql.begin);
      commit = c.prepareStatement(sql.commit);
      leasedCount = c.prepareStatement(sql.leasedCount);
      runState = c.prepareStatement(sql.runState);
      selectLeased = c.prepareStatement(sql.selectLeased);
      cancelLeased = c.prepareStatement(sql.cancelLeased);
      cancelPending = c.prepareStatement(sql.cancelPending);
      cancelRun = c.prepareStatement(sql.cancelRun);
      countErrors = c.prepareStatement(sql.countErrors);
      requeueErrors = c.prepareStatement(sql.requeueErrors);
      reopenRun = c.prepareStatement(sql.reopenRun);
      positionOfCase = c.prepareStatement(sql.positionOfCase);
      setRunTotal = c.prepareStatement(sql.setRunTotal);
      selectKey = c.prepareStatement(sql.selectKey);
      insertKey = c.prepareStatement(sql.insertKey);
      updateKey = c.prepareStatement(sql.updateKey);
      deleteKey = c.prepareStatement(sql.deleteKey);
      deleteKeys = c.prepareStatement(sql.deleteKeys);
      deleteHeldKeys = c.prepareStatement(sql.deleteHeldKeys);
      insertResponse = c.prepareStatement(sql.insertResponse);
      selectResponses = c.prepareStatement(sql.selectResponses);
      selectRecordedCases = c.prepareStatement(sql.selectRecordedCases);
      replaceOutcome = c.prepareStatement(sql.replaceOutcome);
      upsertOption = c.prepareStatement(sql.upsertOption);
      selectOption = c.prepareStatement(sql.selectOption);
      upsertWorker = c.prepareStatement(sql.upsertWorker);
      fenceLeader = c.prepareStatement(sql.fence);
      countEpochWrite = c.prepareStatement(LeaderSql.COUNT_WRITE);
      selectLeader = c.prepareStatement(LeaderSql.SELECT);
      recordBackupOutcome = c.prepareStatement(sql.recordBackupOutcome);
      selectBackups = c.prepareStatement(sql.selectBackups);
      selectRunBackups = c.prepareStatement(sql.selectRunBackups);
      deleteBackups = c.prepareStatement(sql.deleteBackups);
      deleteBackup = c.prepareStatement(sql.deleteBackup);
      countBackupEnded = c.prepareStatement(sql.countBackupEnded);
      clearBackups = c.prepareStatement(sql.clearBackups);
      issueBackup = c.prepareStatement(sql.issueBackup);
      insertBackup = c.prepareStatement(sql.insertBackup);
      promoteBackup = c.prepareStatement(sql.promoteBackup);
      renewBackup = c.prepareStatement(sql.renewBackup);
    }
  }
}

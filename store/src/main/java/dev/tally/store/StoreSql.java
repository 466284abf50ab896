package dev.tally.store;

/**
 * The text of the write path's statements, written once for every database a {@link JdbcStore} runs on,
 * in the SQL they all accept ({@code INSERT ... ON CONFLICT}, {@code UPDATE ... RETURNING},
 * {@code FILTER}, {@code IS DISTINCT FROM}: SQLite 3.39+ and PostgreSQL). Where a database needs a
 * fragment of its own (an index hint), the {@link Dialect} supplies it. {@link JdbcTransaction.Statements}
 * prepares each once per write connection.
 *
 * <p>The fencing rule (by the set of live attempts, {@link dev.tally.core.store.BatchRules}) is in the text:
 * an outcome is recorded by {@code UPDATE jobs ... WHERE id = ? AND state = 'leased' AND token = ?} when its
 * token is the job's own lease, or, when the job has live backup attempts ({@code backup_leases}) and the
 * token is one of them, by {@link #recordBackupOutcome}; any other token updates no row. A batch's records
 * go {@link #MAX_RECORD_ROWS} at a time through {@link #recordOutcomes}, the same rule for many jobs in one
 * statement, and its attempt rows through {@link #insertAttempts}: per record about a third of the cost of one
 * statement each on SQLite (4.5 against 14.4 us with 64 rows, and 1.2 against 2.1 us per attempt row).
 *
 * <p>Thread-safety: immutable.
 */
final class StoreSql {

  /** A job's columns as {@link JdbcStore}'s reads map them to a {@link dev.tally.core.store.JobView}. */
  static final String JOB_COLUMNS =
      "id, run_id, position, case_id, state, token, attempts, owner, worker, verdict, score, output_tail,"
          + " duration_millis, failure_reason, answer, fields_json, exit_code, stderr_tail";

  /** How many columns {@link #JOB_COLUMNS} has: a query's own columns after them start at this plus one. */
  static final int JOB_COLUMN_COUNT = JOB_COLUMNS.split(",").length;

  /** A run's counters, in {@link dev.tally.core.store.RunCounters}' order. */
  static final String COUNTER_COLUMNS =
      "total, passed, failed, errored, jobs_failed, duplicates_suppressed, stale_results_fenced, redeliveries, cancelled,"
          + " scored, score_sum, score_sum_of_squares, prompt_tokens, completion_tokens, backups";

  /** A run's columns as {@link JdbcStore}'s reads map them to a {@link dev.tally.core.store.RunView}. */
  static final String RUN_COLUMNS =
      "id, dataset, evaluator_kind, case_timeout_millis, max_attempts, created_at_millis, finished_at_millis,"
          // The counters last, so that a counter added later shifts no other column's position.
          + " state, dataset_digest, timeout_retries, name, paused_reason, " + COUNTER_COLUMNS;

  /** A job's columns as the batch rules see it ({@link dev.tally.core.store.JobRecord}). */
  static final String JOB_RECORD_COLUMNS =
      "id, run_id, state, token, owner, leased_at_millis, lease_expiry_millis, attempts, lost_streak, timeouts, backups";

  /** A live backup attempt's columns ({@link dev.tally.core.store.LiveLease}), bound in this order by its insert. */
  static final String BACKUP_COLUMNS = "job_id, run_id, token, owner, leased_at_millis, lease_expiry_millis";

  /** An idempotency key's columns, bound in this order by the key's insert and update. */
  static final String KEY_COLUMNS = "completed, reservation_token, hold_until_millis, fingerprint, run_id, response_status,"
      + " response_content_type, response_headers, response_body, created_at_millis, expires_at_millis";

  /** A worker report's columns, in {@link dev.tally.core.store.WorkerStatus}' order. */
  static final String WORKER_COLUMNS = "worker_id, name, suspicion, accepting_work, ejected_until_millis,"
      + " ejection_reason, times_ejected, in_flight, reported_at_millis, left_reason, suspicion_level, slots";

  /** An attempt's columns as the reads map them to a {@link dev.tally.core.store.AttemptView}. */
  static final String ATTEMPT_COLUMNS = "a.job_id, a.token, a.worker, a.started_at_millis, a.ended_at_millis, a.ending,"
      + " a.detail, a.elapsed_millis, a.queued_millis, a.run_millis, a.duplicate_results, a.fenced_results";

  final String commit = "COMMIT";
  final String begin;
  /** The leader fence every leader's write transaction begins with ({@link Dialect#fence()}). */
  final String fence;
  final String insertRun =
      "INSERT INTO runs (dataset, evaluator_kind, case_timeout_millis, max_attempts, timeout_retries,"
          + " created_at_millis, dataset_digest, name, state, total)"
          + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', 0) RETURNING id";
  final String setRunTotal =
      "UPDATE runs SET total = ?, state = CASE WHEN ? = 0 THEN 'finished' ELSE state END,"
          + " finished_at_millis = CASE WHEN ? = 0 THEN ? ELSE finished_at_millis END WHERE id = ?";
  final String positionOfCase = "SELECT position FROM jobs WHERE run_id = ? AND case_id = ?";
  final String leasedCount;
  final String runState = "SELECT state FROM runs WHERE id = ?";
  final String selectLeased;
  final String cancelLeased =
      "UPDATE jobs SET state = 'cancelled', owner = NULL, lease_expiry_millis = NULL, backups = 0 WHERE id = ?";
  final String cancelPending = "UPDATE jobs SET state = 'cancelled' WHERE run_id = ? AND state = 'pending'";
  final String cancelRun = "UPDATE runs SET state = 'cancelled', finished_at_millis = ? WHERE id = ?";
  final String countErrors;
  final String requeueErrors;
  final String reopenRun = "UPDATE runs SET state = 'running', finished_at_millis = 0 WHERE id = ?";
  final String selectKey = "SELECT " + KEY_COLUMNS + " FROM idempotency_keys WHERE scope = ? AND key = ?";
  final String insertKey = "INSERT INTO idempotency_keys (" + KEY_COLUMNS + ", scope, key)"
      + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  final String updateKey = "UPDATE idempotency_keys SET completed = ?, reservation_token = ?,"
      + " hold_until_millis = ?, fingerprint = ?, run_id = ?, response_status = ?, response_content_type = ?,"
      + " response_headers = ?, response_body = ?, created_at_millis = ?, expires_at_millis = ?"
      + " WHERE scope = ? AND key = ?";
  final String deleteKey = "DELETE FROM idempotency_keys WHERE scope = ? AND key = ?";
  final String deleteKeys = "DELETE FROM idempotency_keys WHERE (completed = 1 AND expires_at_millis <= ?)"
      + " OR (completed = 0 AND hold_until_millis < ?)";
  final String deleteHeldKeys = "DELETE FROM idempotency_keys WHERE completed = 0";
  /** The key is the job's run and case; DO NOTHING keeps the first response of a key (the primary key). */
  final String insertResponse =
      "INSERT INTO responses (run_id, case_id, request_digest, response, recorded_at_millis)"
          + " SELECT run_id, case_id, ?, ?, ? FROM jobs WHERE id = ? ON CONFLICT DO NOTHING";
  /** A case's journalled responses, in the order they were paid for. */
  final String selectResponses;
  final String insertOption = "INSERT INTO run_options (run_id, key, value) VALUES (?, ?, ?)";
  final String setPause = "UPDATE runs SET paused_reason = ? WHERE id = ? AND state = 'running'";
  final String upsertOption = "INSERT INTO run_options (run_id, key, value) VALUES (?, ?, ?)"
      + " ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value";
  final String selectOption = "SELECT value FROM run_options WHERE run_id = ? AND key = ?";
  /** A page of a run's done jobs, walking the (run_id, position) unique index from where the last page ended. */
  final String selectRecordedCases =
      "SELECT id, position, case_json, verdict, score, output_tail, duration_millis, answer, fields_json, exit_code,"
          + " stderr_tail FROM jobs WHERE run_id = ? AND position > ? AND state = 'done' ORDER BY position LIMIT ?";
  final String replaceOutcome =
      "UPDATE jobs SET verdict = ?, score = ?, output_tail = ?, duration_millis = ?, answer = ?, fields_json = ?,"
          + " exit_code = ?, stderr_tail = ? WHERE id = ? AND state = 'done'";
  /**
   * A case of a run being created. A repeated case id (or position) inserts no row rather than failing:
   * the transaction goes on, so the caller can ask which case came first before it rolls everything back
   * (a failed statement would end a PostgreSQL transaction there).
   */
  final String insertJob = "INSERT INTO jobs (run_id, position, case_id, case_json) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";
  /** The fencing rule of a record by the job's own lease: the job is leased, under the token reported. */
  private static final String LEASED_UNDER_TOKEN = "state = 'leased' AND token = ";

  /** What a record returns of the job as it was: its run, its lease's start and its history. */
  private static final String RECORDED_JOB_COLUMNS = "run_id, leased_at_millis, attempts, lost_streak, timeouts, backups";

  /** The fencing check and the write are one statement: accepted only under the current lease. */
  final String recordOutcome =
      "UPDATE jobs SET state = 'done', verdict = ?, score = ?, output_tail = ?, duration_millis = ?,"
          + " answer = ?, fields_json = ?, exit_code = ?, stderr_tail = ?, worker = ?, owner = NULL, lease_expiry_millis = NULL"
          + " WHERE id = ? AND " + LEASED_UNDER_TOKEN + "?"
          + " RETURNING " + RECORDED_JOB_COLUMNS;

  /** How many values one row of {@link #recordOutcomes} binds: job id, token, the outcome's eight, worker. */
  static final int RECORD_ROW_VALUES = 11;

  /**
   * The most records one {@link #recordOutcomes} statement writes. 64 rows bind 704 values, under the
   * 999 variables of the oldest SQLite builds (newer ones allow 32,766), and already bring the statement's
   * cost per record near its floor: past a few dozen rows the per-row work (binding, the index updates)
   * is all that is left.
   */
  static final int MAX_RECORD_ROWS = 64;

  /**
   * {@link #recordOutcome} for {@code rows} jobs at once, by the same fencing rule: each row of the VALUES
   * list is (job id, token, verdict, score, output tail, duration, answer, fields, exit code, stderr tail,
   * worker), and only a job leased under its row's token is written. Returns the job id first, then
   * {@link #recordOutcome}'s columns, for each job written. Each value is cast to its column's type, as
   * PostgreSQL types a VALUES list's parameters from what it holds; the job ids must be distinct.
   *
   * @throws IllegalArgumentException if {@code rows} is not between 1 and {@link #MAX_RECORD_ROWS}
   */
  static String recordOutcomes(int rows) {
    if (rows < 1 || rows > MAX_RECORD_ROWS) {
      throw new IllegalArgumentException("a multi-row record writes 1 to " + MAX_RECORD_ROWS + " rows, not " + rows);
    }
    String row = "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT),"
        + " CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT))";
    StringBuilder sql = new StringBuilder(120 + rows * (row.length() + 2));
    sql.append("UPDATE jobs SET state = 'done', verdict = v.column3, score = v.column4, output_tail = v.column5,")
        .append(" duration_millis = v.column6, answer = v.column7, fields_json = v.column8, exit_code = v.column9,")
        .append(" stderr_tail = v.column10, worker = v.column11, owner = NULL, lease_expiry_millis = NULL FROM (VALUES ");
    for (int i = 0; i < rows; i++) {
      sql.append(i == 0 ? "" : ", ").append(row);
    }
    // Unqualified columns name the job's (the VALUES list's are column1 to column11 on both databases).
    return sql.append(") AS v WHERE id = v.column1 AND ").append(LEASED_UNDER_TOKEN).append("v.column2")
        .append(" RETURNING id, ").append(RECORDED_JOB_COLUMNS).toString();
  }
  /** A live backup attempt's outcome: the job is done under the backup's token (the caller checked it is live). */
  final String recordBackupOutcome =
      "UPDATE jobs SET state = 'done', verdict = ?, score = ?, output_tail = ?, duration_millis = ?,"
          + " answer = ?, fields_json = ?, exit_code = ?, stderr_tail = ?, worker = ?, owner = NULL, lease_expiry_millis = NULL,"
          + " token = ?, leased_at_millis = ?, backups = 0 WHERE id = ? AND state = 'leased'";
  final String selectBackups = "SELECT " + BACKUP_COLUMNS + " FROM backup_leases WHERE job_id = ? ORDER BY token";
  final String selectRunBackups = "SELECT " + BACKUP_COLUMNS + " FROM backup_leases WHERE run_id = ? ORDER BY job_id, token";
  final String deleteBackups = "DELETE FROM backup_leases WHERE job_id = ? RETURNING " + BACKUP_COLUMNS;
  final String deleteBackup = "DELETE FROM backup_leases WHERE job_id = ? AND token = ?";
  final String countBackupEnded = "UPDATE jobs SET backups = backups - 1 WHERE id = ?";
  final String clearBackups = "UPDATE jobs SET backups = 0 WHERE id = ?";
  /** SET expressions see the old row: the backup's token is one above the highest issued. */
  final String issueBackup =
      "UPDATE jobs SET issued_token = issued_token + 1, attempts = attempts + 1, backups = backups + 1"
          + " WHERE id = ? AND state = 'leased' RETURNING run_id, issued_token, attempts, case_id, case_json";
  final String insertBackup = "INSERT INTO backup_leases (" + BACKUP_COLUMNS + ") VALUES (?, ?, ?, ?, ?, ?)";
  /** The job's own lease ends and a backup's becomes it. */
  final String promoteBackup =
      "UPDATE jobs SET (token, owner, leased_at_millis, lease_expiry_millis) ="
          + " (SELECT token, owner, leased_at_millis, lease_expiry_millis FROM backup_leases WHERE job_id = ? AND token = ?),"
          + " backups = backups - 1 WHERE id = ?";
  /** A backup row exists only while its job is leased. */
  final String renewBackup = "UPDATE backup_leases SET lease_expiry_millis = ? WHERE job_id = ? AND token = ?"
      + " RETURNING run_id, (SELECT attempts FROM jobs WHERE jobs.id = backup_leases.job_id)";
  final String selectJob = "SELECT " + JOB_RECORD_COLUMNS + " FROM jobs WHERE id = ?";
  final String failJob =
      "UPDATE jobs SET state = 'failed', owner = NULL, lease_expiry_millis = NULL, failure_reason = ?,"
          + " attempts = ?, lost_streak = ?, timeouts = ? WHERE id = ?";
  /** SET expressions see the old row: the last worker is the owner whose lease ends here. */
  final String requeueJob =
      "UPDATE jobs SET state = 'pending', last_worker = owner, owner = NULL, lease_expiry_millis = NULL,"
          + " not_before_millis = ?, attempts = ?, lost_streak = ?, timeouts = ? WHERE id = ?";
  final String noteDuplicate = "UPDATE attempts SET duplicate_results = duplicate_results + 1 WHERE job_id = ? AND token = ?";
  final String noteFenced = "UPDATE attempts SET fenced_results = fenced_results + 1 WHERE job_id = ? AND token = ?";
  /** The start of an attempt rows' insert; each row is {@link #ATTEMPT_ROW}. */
  private static final String INSERT_ATTEMPTS =
      "INSERT INTO attempts (job_id, token, worker, started_at_millis, ended_at_millis, ending, detail,"
          + " elapsed_millis, queued_millis, run_millis) VALUES ";
  private static final String ATTEMPT_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  /** How many values one attempt row binds. */
  static final int ATTEMPT_ROW_VALUES = 10;
  final String insertAttempt = INSERT_ATTEMPTS + ATTEMPT_ROW;

  /**
   * The most attempt rows one {@link #insertAttempts} statement writes: 640 values, under the 999 variables
   * of the oldest SQLite builds; a scheduler batch rarely ends more attempts than that.
   */
  static final int MAX_ATTEMPT_ROWS = 64;

  /**
   * {@link #insertAttempt} for {@code rows} attempts in one statement.
   *
   * @throws IllegalArgumentException if {@code rows} is not between 1 and {@link #MAX_ATTEMPT_ROWS}
   */
  static String insertAttempts(int rows) {
    if (rows < 1 || rows > MAX_ATTEMPT_ROWS) {
      throw new IllegalArgumentException("a multi-row attempt insert writes 1 to " + MAX_ATTEMPT_ROWS + " rows, not " + rows);
    }
    StringBuilder sql = new StringBuilder(INSERT_ATTEMPTS.length() + rows * (ATTEMPT_ROW.length() + 2));
    sql.append(INSERT_ATTEMPTS);
    for (int i = 0; i < rows; i++) {
      sql.append(i == 0 ? "" : ", ").append(ATTEMPT_ROW);
    }
    return sql.toString();
  }
  /** One run at a time, walking that run's part of the partial index in dataset order. */
  final String leaseJobs;
  final String addCounters =
      "UPDATE runs SET passed = passed + ?, failed = failed + ?, errored = errored + ?,"
          + " jobs_failed = jobs_failed + ?, duplicates_suppressed = duplicates_suppressed + ?,"
          + " stale_results_fenced = stale_results_fenced + ?, redeliveries = redeliveries + ?,"
          + " cancelled = cancelled + ?, scored = scored + ?, score_sum = score_sum + ?,"
          + " score_sum_of_squares = score_sum_of_squares + ?,"
          + " prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, backups = backups + ?,"
          // SET expressions see the old row: old ended + this batch's ended. A cancelled run stays so.
          + " state = CASE WHEN state = 'running' AND passed + failed + errored + jobs_failed + cancelled + ? >= total"
          + "   THEN 'finished' ELSE state END,"
          + " finished_at_millis = CASE WHEN state = 'running'"
          + "   AND passed + failed + errored + jobs_failed + cancelled + ? >= total THEN ? ELSE finished_at_millis END"
          + " WHERE id = ?"
          + " RETURNING " + COUNTER_COLUMNS;
  final String selectCounters = "SELECT " + COUNTER_COLUMNS + " FROM runs WHERE id = ?";
  final String renewLease = "UPDATE jobs SET lease_expiry_millis = ? WHERE id = ? AND token = ? AND state = 'leased'"
      + " RETURNING run_id, attempts";
  final String selectExpiredLeases;
  final String selectLeasesIssuedBefore;
  /**
   * The next backoff of one run to end (a seek on its part of the backoff index), and whether anything
   * is leasable now (the first leasable job in dataset order).
   */
  final String pendingSummary;
  /** A worker's report replaces the last one of the same worker. */
  final String upsertWorker = "INSERT INTO workers (" + WORKER_COLUMNS + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
      + " ON CONFLICT (worker_id) DO UPDATE SET name = excluded.name, suspicion = excluded.suspicion,"
      + " accepting_work = excluded.accepting_work, ejected_until_millis = excluded.ejected_until_millis,"
      + " ejection_reason = excluded.ejection_reason, times_ejected = excluded.times_ejected,"
      + " in_flight = excluded.in_flight, reported_at_millis = excluded.reported_at_millis,"
      + " left_reason = excluded.left_reason, suspicion_level = excluded.suspicion_level, slots = excluded.slots";

  /** The statements as {@code dialect} spells its fragments. */
  StoreSql(Dialect dialect) {
    begin = dialect.begin();
    fence = dialect.fence();
    String leasedByRun = "jobs" + dialect.indexedBy("jobs_leased_by_run_expiry");
    String pendingInOrder = "jobs" + dialect.indexedBy("jobs_pending_in_order");
    String inBackoff = "jobs" + dialect.indexedBy("jobs_pending_in_backoff");
    leasedCount = "SELECT count(*) FROM " + leasedByRun + " WHERE run_id = ? AND state = 'leased'";
    selectLeased = "SELECT " + JOB_RECORD_COLUMNS + " FROM " + leasedByRun + " WHERE run_id = ? AND state = 'leased' ORDER BY id";
    String errored = "run_id = ? AND ((state = 'done' AND verdict = 'error') OR state = 'failed')";
    countErrors = "SELECT COUNT(*) FILTER (WHERE state = 'done'), COUNT(*) FILTER (WHERE state = 'failed'),"
        + " COUNT(score) FILTER (WHERE state = 'done'), COALESCE(SUM(score) FILTER (WHERE state = 'done'), 0),"
        + " COALESCE(SUM(score * score) FILTER (WHERE state = 'done'), 0) FROM jobs WHERE " + errored;
    // The outcome's columns stay until a new outcome is recorded over them; the token keeps growing.
    requeueErrors = "UPDATE jobs SET state = 'pending', owner = NULL, lease_expiry_millis = NULL,"
        + " not_before_millis = 0, failure_reason = NULL, attempts = 0, lost_streak = 0, timeouts = 0 WHERE " + errored;
    selectResponses = "SELECT request_digest, response FROM responses WHERE run_id = ? AND case_id = ? ORDER BY "
        + dialect.responsesInInsertionOrder();
    // SET expressions see the old row: token and issued_token both become one above the highest issued.
    leaseJobs = "UPDATE jobs SET state = 'leased', token = issued_token + 1, issued_token = issued_token + 1,"
        + " attempts = attempts + 1, owner = ?,"
        + " leased_at_millis = ?, lease_expiry_millis = ?"
        + " WHERE id IN (SELECT id FROM " + pendingInOrder
        + "   WHERE run_id = ? AND state = 'pending' AND not_before_millis <= ?"
        + "   AND (? = 0 OR last_worker IS DISTINCT FROM ?) ORDER BY position LIMIT ?)"
        + " RETURNING id, run_id, position, token, attempts, case_id, case_json";
    selectExpiredLeases = "SELECT " + JOB_RECORD_COLUMNS + " FROM " + leasedByRun
        + " WHERE run_id = ? AND state = 'leased' AND lease_expiry_millis < ? ORDER BY lease_expiry_millis, id";
    selectLeasesIssuedBefore = "SELECT " + JOB_RECORD_COLUMNS + " FROM " + leasedByRun
        + " WHERE run_id = ? AND state = 'leased' AND leased_at_millis < ? ORDER BY id";
    // The backoff index holds only the jobs waiting out a backoff (not_before_millis > 0, written out so that
    // both planners see the query within the partial index). Whether anything is leasable now walks the
    // run's pending jobs in dataset order, as the lease does, and stops at the first whose backoff has
    // passed: it passes over only jobs in backoff, at most the jobs that were leased and came back.
    pendingSummary = "SELECT (SELECT min(not_before_millis) FROM " + inBackoff
        + "   WHERE run_id = ? AND state = 'pending' AND not_before_millis > 0 AND not_before_millis > ?),"
        + " EXISTS (SELECT 1 FROM " + pendingInOrder
        + "   WHERE run_id = ? AND state = 'pending' AND not_before_millis <= ?)";
  }
}

-- Tally as a service. Runs get a name, and a third state, cancelled, whose jobs end 'cancelled' and are
-- counted; the states become running (was 'active'), finished and cancelled. SQLite cannot change a CHECK
-- constraint in place, so runs and jobs are rebuilt as SQLite's ALTER TABLE documentation describes (new
-- table, copy, drop, rename; foreign keys are not enforced on the migration's connection), keeping every
-- column and index of V1-V10.

CREATE TABLE runs_v11 (
  id                    INTEGER PRIMARY KEY,
  name                  TEXT    NOT NULL DEFAULT '',
  dataset               TEXT    NOT NULL,
  evaluator_kind        TEXT    NOT NULL,
  case_timeout_millis   INTEGER NOT NULL CHECK (case_timeout_millis > 0),
  max_attempts          INTEGER NOT NULL CHECK (max_attempts >= 1),
  timeout_retries       INTEGER NOT NULL DEFAULT 1 CHECK (timeout_retries >= 0),
  dataset_digest        TEXT    NOT NULL DEFAULT '',
  created_at_millis     INTEGER NOT NULL,
  finished_at_millis    INTEGER NOT NULL DEFAULT 0,
  state                 TEXT    NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'finished', 'cancelled')),
  total                 INTEGER NOT NULL CHECK (total >= 0),
  passed                INTEGER NOT NULL DEFAULT 0,
  failed                INTEGER NOT NULL DEFAULT 0,
  errored               INTEGER NOT NULL DEFAULT 0,
  jobs_failed           INTEGER NOT NULL DEFAULT 0,
  duplicates_suppressed INTEGER NOT NULL DEFAULT 0,
  stale_results_fenced  INTEGER NOT NULL DEFAULT 0,
  redeliveries          INTEGER NOT NULL DEFAULT 0,
  cancelled             INTEGER NOT NULL DEFAULT 0,
  -- I2: a run never counts more ended jobs than it has.
  CHECK (passed + failed + errored + jobs_failed + cancelled <= total)
);
INSERT INTO runs_v11 (id, dataset, evaluator_kind, case_timeout_millis, max_attempts, timeout_retries, dataset_digest,
    created_at_millis, finished_at_millis, state, total, passed, failed, errored, jobs_failed, duplicates_suppressed,
    stale_results_fenced, redeliveries)
  SELECT id, dataset, evaluator_kind, case_timeout_millis, max_attempts, timeout_retries, dataset_digest,
    created_at_millis, finished_at_millis, CASE state WHEN 'active' THEN 'running' ELSE state END, total, passed,
    failed, errored, jobs_failed, duplicates_suppressed, stale_results_fenced, redeliveries
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v11 RENAME TO runs;

CREATE TABLE jobs_v11 (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER NOT NULL REFERENCES runs (id),
  position            INTEGER NOT NULL CHECK (position >= 0),
  case_id             TEXT    NOT NULL,
  case_json           TEXT    NOT NULL,
  state               TEXT    NOT NULL DEFAULT 'pending'
                              CHECK (state IN ('pending', 'leased', 'done', 'failed', 'cancelled')),
  -- The latest fencing token issued for this job (0 before the first lease). It only ever grows, and it
  -- is committed with the lease, so it stays ahead across restarts.
  token               INTEGER NOT NULL DEFAULT 0,
  owner               TEXT,
  leased_at_millis    INTEGER,
  lease_expiry_millis INTEGER,
  attempts            INTEGER NOT NULL DEFAULT 0,
  not_before_millis   INTEGER NOT NULL DEFAULT 0,
  verdict             TEXT CHECK (verdict IN ('pass', 'fail', 'error')),
  score               REAL,
  output_tail         TEXT,
  duration_millis     INTEGER,
  worker              TEXT,
  failure_reason      TEXT,
  lost_streak         INTEGER NOT NULL DEFAULT 0,
  timeouts            INTEGER NOT NULL DEFAULT 0,
  last_worker         TEXT,
  UNIQUE (run_id, case_id),
  UNIQUE (run_id, position)
);
INSERT INTO jobs_v11 (id, run_id, position, case_id, case_json, state, token, owner, leased_at_millis,
    lease_expiry_millis, attempts, not_before_millis, verdict, score, output_tail, duration_millis, worker,
    failure_reason, lost_streak, timeouts, last_worker)
  SELECT id, run_id, position, case_id, case_json, state, token, owner, leased_at_millis, lease_expiry_millis,
    attempts, not_before_millis, verdict, score, output_tail, duration_millis, worker, failure_reason, lost_streak,
    timeouts, last_worker
  FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_v11 RENAME TO jobs;
CREATE INDEX jobs_pending_in_order ON jobs (run_id, position, not_before_millis) WHERE state = 'pending';
CREATE INDEX jobs_pending_by_run_not_before ON jobs (run_id, not_before_millis) WHERE state = 'pending';
CREATE INDEX jobs_leased_by_run_expiry ON jobs (run_id, lease_expiry_millis) WHERE state = 'leased';

-- Idempotency keys (draft-ietf-httpapi-idempotency-key-header): one row per (scope, key), the scope a digest
-- of the API credential. In progress: held by a request under its reservation token until hold_until
-- (renewed while it lives). Completed: the fingerprint, the run and the response to replay, in the
-- transaction that created the run, kept until expires_at. What a row means is IdempotencyRules'.
CREATE TABLE idempotency_keys (
  scope                 TEXT    NOT NULL,
  key                   TEXT    NOT NULL,
  completed             INTEGER NOT NULL CHECK (completed IN (0, 1)),
  reservation_token     TEXT,
  hold_until_millis     INTEGER NOT NULL DEFAULT 0,
  fingerprint           TEXT,
  run_id                INTEGER REFERENCES runs (id),
  response_status       INTEGER,
  response_content_type TEXT,
  -- The replayed headers as a JSON object, in order.
  response_headers      TEXT,
  response_body         BLOB,
  created_at_millis     INTEGER NOT NULL,
  expires_at_millis     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, key),
  CHECK ((completed = 0 AND reservation_token IS NOT NULL)
      OR (completed = 1 AND fingerprint IS NOT NULL AND response_status IS NOT NULL AND response_body IS NOT NULL))
) WITHOUT ROWID;
-- Serves the purge of completed keys past their expiry.
CREATE INDEX idempotency_keys_completed_by_expiry ON idempotency_keys (expires_at_millis) WHERE completed = 1;

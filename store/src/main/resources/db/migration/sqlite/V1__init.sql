-- Tally store schema, version 1 (SQLite).
--
-- Times are epoch milliseconds (INTEGER). A run's counters live in its row and move only in the
-- transaction that changes a job's state, so they always agree with the jobs table.

CREATE TABLE runs (
  id                    INTEGER PRIMARY KEY,
  dataset               TEXT    NOT NULL,
  evaluator_kind        TEXT    NOT NULL,
  case_timeout_millis   INTEGER NOT NULL CHECK (case_timeout_millis > 0),
  max_attempts          INTEGER NOT NULL CHECK (max_attempts >= 1),
  created_at_millis     INTEGER NOT NULL,
  finished_at_millis    INTEGER NOT NULL DEFAULT 0,
  state                 TEXT    NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'finished')),
  total                 INTEGER NOT NULL CHECK (total >= 0),
  passed                INTEGER NOT NULL DEFAULT 0,
  failed                INTEGER NOT NULL DEFAULT 0,
  errored               INTEGER NOT NULL DEFAULT 0,
  jobs_failed           INTEGER NOT NULL DEFAULT 0,
  duplicates_suppressed INTEGER NOT NULL DEFAULT 0,
  stale_results_fenced  INTEGER NOT NULL DEFAULT 0,
  redeliveries          INTEGER NOT NULL DEFAULT 0,
  -- I2: a run never counts more ended jobs than it has.
  CHECK (passed + failed + errored + jobs_failed <= total)
);

-- Evaluator options as rows rather than an encoded blob: the core has no JSON library, and rows need
-- no escaping rules.
CREATE TABLE run_options (
  run_id INTEGER NOT NULL REFERENCES runs (id),
  key    TEXT    NOT NULL,
  value  TEXT    NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

CREATE TABLE jobs (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER NOT NULL REFERENCES runs (id),
  position            INTEGER NOT NULL CHECK (position >= 0),
  case_id             TEXT    NOT NULL,
  case_json           TEXT    NOT NULL,
  state               TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'done', 'failed')),
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
  UNIQUE (run_id, case_id),
  UNIQUE (run_id, position)
);

-- Serves leasing: "pending jobs in (run, dataset) order". Partial, so leased and ended jobs drop out and
-- a lease never walks past them; not_before_millis is included so the backoff check needs no table read.
CREATE INDEX jobs_pending_in_order ON jobs (run_id, position, not_before_millis) WHERE state = 'pending';

-- Serves the per-batch questions "is any pending job leasable now?" and "when is the next backoff over?"
-- with one index seek each, instead of a walk over every pending job.
CREATE INDEX jobs_pending_by_not_before ON jobs (not_before_millis) WHERE state = 'pending';

-- One row per ended attempt. Only the attempt that ends a lease writes a row, so (job, token) is unique.
CREATE TABLE attempts (
  job_id            INTEGER NOT NULL REFERENCES jobs (id),
  token             INTEGER NOT NULL,
  worker            TEXT,
  started_at_millis INTEGER NOT NULL,
  ended_at_millis   INTEGER NOT NULL,
  ending            TEXT    NOT NULL,
  detail            TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (job_id, token)
) WITHOUT ROWID;

-- Speculative execution: a straggling job may get a backup attempt on another worker while its own lease
-- lives, and whichever live attempt reports first is recorded (fencing by the set of live attempts).
-- The job's row keeps its own lease (token, owner, lease times); the live backups are rows of their own,
-- deleted when they end. A backup's token is above every token the job had, so the row now also keeps the
-- highest token issued (issued_token), from which every new lease's token is taken, and how many backups
-- are live (backups), so that recording a job with none reads no other table.
ALTER TABLE jobs ADD COLUMN issued_token INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET issued_token = token;
ALTER TABLE jobs ADD COLUMN backups INTEGER NOT NULL DEFAULT 0 CHECK (backups >= 0);

CREATE TABLE backup_leases (
  job_id              INTEGER NOT NULL REFERENCES jobs (id),
  token               INTEGER NOT NULL,
  run_id              INTEGER NOT NULL REFERENCES runs (id),
  owner               TEXT    NOT NULL,
  leased_at_millis    INTEGER NOT NULL,
  lease_expiry_millis INTEGER NOT NULL,
  PRIMARY KEY (job_id, token)
) WITHOUT ROWID;
-- The sweep and the orphan release read a run's backups.
CREATE INDEX backup_leases_by_run ON backup_leases (run_id, job_id);

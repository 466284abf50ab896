-- Speculative execution, as SQLite's V21: a straggling job may get a backup attempt on another worker
-- while its own lease lives, and whichever live attempt reports first is recorded (fencing by the set of
-- live attempts). The job's row keeps its own lease; live backups are rows of their own, deleted when they
-- end; issued_token is the highest token issued for the job (every new lease's comes from it), backups how
-- many are live (so recording a job with none reads no other table). Numbered as SQLite's so that the two
-- folders' versions say the same thing.
ALTER TABLE jobs ADD COLUMN issued_token BIGINT NOT NULL DEFAULT 0;
UPDATE jobs SET issued_token = token;
ALTER TABLE jobs ADD COLUMN backups INTEGER NOT NULL DEFAULT 0 CHECK (backups >= 0);

CREATE TABLE backup_leases (
  job_id              BIGINT  NOT NULL REFERENCES jobs (id),
  token               BIGINT  NOT NULL,
  run_id              BIGINT  NOT NULL REFERENCES runs (id),
  owner               TEXT    NOT NULL,
  leased_at_millis    BIGINT  NOT NULL,
  lease_expiry_millis BIGINT  NOT NULL,
  PRIMARY KEY (job_id, token)
);
-- The sweep and the orphan release read a run's backups.
CREATE INDEX backup_leases_by_run ON backup_leases (run_id, job_id);

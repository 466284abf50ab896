-- The last report of each worker a coordinator had, for tally status: suspicion and outlier ejection.
-- Rows are overwritten every few seconds while the worker is connected; an old row is a worker gone.
CREATE TABLE workers (
  worker_id            TEXT    PRIMARY KEY,
  name                 TEXT    NOT NULL,
  suspicion            TEXT    NOT NULL,
  accepting_work       INTEGER NOT NULL,
  ejected_until_millis INTEGER NOT NULL,
  ejection_reason      TEXT,
  times_ejected        INTEGER NOT NULL,
  in_flight            INTEGER NOT NULL,
  reported_at_millis   INTEGER NOT NULL
);

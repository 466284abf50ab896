-- A timeout is most often the case's own: a run says how many times a job that timed out is tried again
-- (runs made before this migration get 1, the default), and each job counts its timeouts.
ALTER TABLE runs ADD COLUMN timeout_retries INTEGER NOT NULL DEFAULT 1 CHECK (timeout_retries >= 0);
ALTER TABLE jobs ADD COLUMN timeouts INTEGER NOT NULL DEFAULT 0;
-- Attempt durations, measured on monotonic clocks (the started/ended columns are wall-clock instants, and
-- a clock stepped back made attempts end before they started): the whole attempt as the coordinator saw
-- it, and the worker's queue time and run time. NULL when nobody measured it (and for older attempts).
ALTER TABLE attempts ADD COLUMN elapsed_millis INTEGER;
ALTER TABLE attempts ADD COLUMN queued_millis INTEGER;
ALTER TABLE attempts ADD COLUMN run_millis INTEGER;

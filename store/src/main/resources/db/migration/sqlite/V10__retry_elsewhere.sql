-- Who held a job's last lease that ended retryably: its retry goes to another worker when one has room
-- (a case that timed out or was killed on one worker is tried on a different one). NULL for a job never
-- released.
ALTER TABLE jobs ADD COLUMN last_worker TEXT;

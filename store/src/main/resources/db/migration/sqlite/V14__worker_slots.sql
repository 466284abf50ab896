-- Each worker report keeps the worker's slots (cases it runs at once), beside its jobs in flight.
-- 0: not known (older reports).
ALTER TABLE workers ADD COLUMN slots INTEGER NOT NULL DEFAULT 0;

-- How many backup attempts a run started (speculative execution, V21), a counter beside redeliveries: a
-- case that ran twice because a copy of it was started shows in the run's summary, not only as
-- "attempts": 2 in its results line. Moved in the transaction that issues the backup, as every counter is.
ALTER TABLE runs ADD COLUMN backups INTEGER NOT NULL DEFAULT 0 CHECK (backups >= 0);

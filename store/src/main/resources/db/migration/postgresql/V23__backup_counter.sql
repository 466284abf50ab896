-- As SQLite's V23: how many backup attempts a run started (speculative execution, V21), a counter beside
-- redeliveries, moved in the transaction that issues the backup.
ALTER TABLE runs ADD COLUMN backups BIGINT NOT NULL DEFAULT 0 CHECK (backups >= 0);

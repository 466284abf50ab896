-- Throughput: every lease took a job out of three indexes, one of them (run_id, not_before_millis) over
-- every pending job, though only jobs waiting out a backoff ever have a not-before time (it is 0 for
-- the rest: a new job, or one retried without a backoff). The index now holds only those, so a lease
-- and a new job write one index fewer; the next backoff to end is still one seek. Whether anything is
-- leasable now walks jobs_pending_in_order instead (StoreSql.pendingSummary).
DROP INDEX jobs_pending_by_run_not_before;
CREATE INDEX jobs_pending_in_backoff ON jobs (run_id, not_before_millis) WHERE state = 'pending' AND not_before_millis > 0;

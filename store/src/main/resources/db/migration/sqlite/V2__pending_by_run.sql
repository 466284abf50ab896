-- A coordinator leases only from the runs it serves (another process may share the file), so the
-- questions "when does the next backoff end?" and "is anything leasable now?" are asked per run: the
-- not-before index leads with the run.
DROP INDEX jobs_pending_by_not_before;
CREATE INDEX jobs_pending_by_run_not_before ON jobs (run_id, not_before_millis) WHERE state = 'pending';

-- Leases expire unless renewed: each step may ask for the expired leases of its runs, with one seek.
CREATE INDEX jobs_leased_by_run_expiry ON jobs (run_id, lease_expiry_millis) WHERE state = 'leased';

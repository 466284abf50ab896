-- A run can be paused with a reason (its first cases all failed alike: fail fast): it leases nothing until
-- it is resumed, and the pause survives a restart. NULL: not paused. Caps reached are not stored here:
-- they follow from the run's options and counters.
ALTER TABLE runs ADD COLUMN paused_reason TEXT;

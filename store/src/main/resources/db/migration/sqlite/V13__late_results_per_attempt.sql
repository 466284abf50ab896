-- A result that reaches the store after its attempt ended is refused, and now also noted on that attempt:
-- sent again after it was recorded (a duplicate, suppressed) or after the lease ended (fenced). The run's
-- counters count them too; these say which attempt they belonged to.
ALTER TABLE attempts ADD COLUMN duplicate_results INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN fenced_results INTEGER NOT NULL DEFAULT 0;

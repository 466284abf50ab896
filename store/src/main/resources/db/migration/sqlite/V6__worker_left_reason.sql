-- Why a worker left (closed, reaped, said goodbye, its coordinator stopped); NULL while it is connected.
-- Lets tally status tell a worker that left from one whose coordinator stopped reporting (killed).
ALTER TABLE workers ADD COLUMN left_reason TEXT;

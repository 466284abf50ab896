-- A digest of a run's cases, so that tally run resumes an unfinished run only for the same cases, not
-- for an edited dataset at the same path. Runs made before this migration have none ('').
ALTER TABLE runs ADD COLUMN dataset_digest TEXT NOT NULL DEFAULT '';

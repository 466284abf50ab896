-- Each run keeps the moments of its recorded scores (how many, their sum, the sum of their squares), moved
-- in the same transaction as its other counters, so that its mean score and the mean's interval are read
-- from one row at any moment (dev.tally.core.stats.Estimates). Runs recorded before this version get theirs
-- from their jobs.
ALTER TABLE runs ADD COLUMN scored INTEGER NOT NULL DEFAULT 0 CHECK (scored >= 0);
ALTER TABLE runs ADD COLUMN score_sum REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN score_sum_of_squares REAL NOT NULL DEFAULT 0;
UPDATE runs SET
  scored = (SELECT COUNT(score) FROM jobs WHERE jobs.run_id = runs.id AND jobs.state = 'done'),
  score_sum = (SELECT COALESCE(SUM(score), 0) FROM jobs WHERE jobs.run_id = runs.id AND jobs.state = 'done'),
  score_sum_of_squares = (SELECT COALESCE(SUM(score * score), 0) FROM jobs WHERE jobs.run_id = runs.id AND jobs.state = 'done');

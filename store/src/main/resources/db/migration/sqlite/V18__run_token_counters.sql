-- Each run counts the tokens its journalled responses report (prompt and completion), moved in the same
-- transaction that stores the response, so its spend (tokens, and with a price its cost) is read from one
-- row at any moment and survives a restart: what a run's token and cost caps are checked against. Runs
-- journalled before this version get theirs as 0 (their responses' usage was not kept apart).
ALTER TABLE runs ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0);
ALTER TABLE runs ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0);
-- The model evaluator's completion limit was the option max-tokens; that name is now the run's token cap.
UPDATE run_options SET key = 'max-completion-tokens'
  WHERE key = 'max-tokens' AND run_id IN (SELECT id FROM runs WHERE evaluator_kind = 'model');

-- A recorded outcome keeps what its evaluator gave beside the verdict and score: the answer its scorers
-- judge, its other structured fields (a JSON object's text), the exit code of its process, and its stderr
-- apart from its stdout (output_tail). NULL for outcomes recorded before this version.
ALTER TABLE jobs ADD COLUMN answer TEXT;
ALTER TABLE jobs ADD COLUMN fields_json TEXT;
ALTER TABLE jobs ADD COLUMN exit_code INTEGER;
ALTER TABLE jobs ADD COLUMN stderr_tail TEXT;

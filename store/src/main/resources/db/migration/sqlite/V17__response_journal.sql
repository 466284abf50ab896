-- The response journal: each paid call's response (a model's completion) as the attempt that paid for it
-- journalled it, under its run, its case (an epoch is a case of its own) and the digest of the request, so
-- that no later attempt of the case (a redelivery after a worker died, a coordinator restart, a retry or a
-- rescore) pays for the same request again. The first response of a key stays: a second is ignored.
CREATE TABLE responses (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  case_id TEXT NOT NULL,
  request_digest TEXT NOT NULL,
  response TEXT NOT NULL,
  recorded_at_millis INTEGER NOT NULL,
  PRIMARY KEY (run_id, case_id, request_digest)
);

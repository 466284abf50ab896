-- Coordinators that take over from each other: SQLite's V20 for PostgreSQL. One row says which coordinator
-- leads the store, under which epoch, where it is, and until when its lease holds (by the server's clock,
-- PostgresDialect.nowMillis). Every write transaction of a leader begins by updating this row under its
-- epoch, which takes the row's lock: a takeover waits for a batch in flight, and a batch after a takeover
-- finds another epoch and writes nothing.
CREATE TABLE coordinator_leader (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch BIGINT NOT NULL CHECK (epoch >= 0),
  holder TEXT,
  address TEXT,
  expires_at_millis BIGINT NOT NULL
);
INSERT INTO coordinator_leader (id, epoch, holder, address, expires_at_millis) VALUES (1, 0, NULL, NULL, 0);

-- Every epoch that ever led: who, since when, and how many write transactions it committed (bumped by the
-- statement pair that fences each write, so a deposed leader's count stops moving).
CREATE TABLE leader_epochs (
  epoch BIGINT PRIMARY KEY,
  holder TEXT NOT NULL,
  address TEXT,
  began_at_millis BIGINT NOT NULL,
  writes BIGINT NOT NULL DEFAULT 0
);

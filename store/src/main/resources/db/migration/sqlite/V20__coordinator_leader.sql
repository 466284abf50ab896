-- Coordinators that take over from each other (DESIGN.md section 7). One row says which coordinator leads
-- the store, under which epoch, where it is, and until when its lease holds (by the store's clock). The
-- epoch grows by one with every new leader; every write transaction of a leader begins by checking it.
CREATE TABLE coordinator_leader (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch INTEGER NOT NULL CHECK (epoch >= 0),
  holder TEXT,
  address TEXT,
  expires_at_millis INTEGER NOT NULL
);
INSERT INTO coordinator_leader (id, epoch, holder, address, expires_at_millis) VALUES (1, 0, NULL, NULL, 0);

-- Every epoch that ever led: who, since when, and how many write transactions it committed. The count is
-- bumped by the very statement pair that fences each write, so it shows that a deposed leader wrote
-- nothing after the takeover (its count stops moving).
CREATE TABLE leader_epochs (
  epoch INTEGER PRIMARY KEY,
  holder TEXT NOT NULL,
  address TEXT,
  began_at_millis INTEGER NOT NULL,
  writes INTEGER NOT NULL DEFAULT 0
);

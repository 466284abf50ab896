-- The store's identity, made once with the store: job ids and fencing tokens are only unique within one
-- store, so workers tell a coordinator on another store from theirs by this (Welcome.store_id).
CREATE TABLE store_info (
  store_id TEXT NOT NULL
);
INSERT INTO store_info (store_id) VALUES (lower(hex(randomblob(16))));

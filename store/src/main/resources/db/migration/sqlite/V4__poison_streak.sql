-- How many attempts in a row ended with their worker dying while the case ran: a case that keeps taking
-- its worker down is poison, and ends failed instead of taking the whole fleet down.
ALTER TABLE jobs ADD COLUMN lost_streak INTEGER NOT NULL DEFAULT 0;

-- Each worker report keeps its suspicion as a number too (the text stays for tally status), so that the
-- API can chart it against the detector's drain and conviction levels. NULL: not known (older reports).
ALTER TABLE workers ADD COLUMN suspicion_level REAL;

#!/usr/bin/env python3
"""An exec evaluator with an external effect that happens once per case, however often the case runs.

Tally runs each case at least once and records its outcome exactly once. Whatever a case does outside
Tally can happen more than once: a worker killed after this script charged an account, and before its
result reached the store, makes Tally run the case again elsewhere. This script shows the receiver's side of
the cure, the consumer-inbox pattern: the effect (adding the case's "amount" to an account's balance) and
the case's TALLY_IDEMPOTENCY_KEY are written in one SQLite transaction, with the key as the inbox's primary
key. A repeated attempt finds its key there and changes nothing.

    python3 effect.py LEDGER.db SIDE.log      (as --cmd; the case's JSON comes on stdin)

LEDGER.db holds the inbox and the account (run.py creates them). SIDE.log gets one JSON line per event,
appended by every execution: "execution" when it starts, "effect" once its transaction committed (applied,
or not because the key was there), "done" at the end. It is the log of what ran, as opposed to the ledger's
record of what happened. EFFECT_HOLD_SECONDS (default 1.0) is how long the case goes on after its effect:
the window in which a killed worker makes the case run again.
"""
import json
import os
import sqlite3
import sys
import time

ENV = ("TALLY_RUN_ID", "TALLY_CASE_ID", "TALLY_JOB_ID", "TALLY_ATTEMPT", "TALLY_FENCING_TOKEN",
       "TALLY_IDEMPOTENCY_KEY")


def side_log(path, event, **fields):
    """Appends one line; O_APPEND makes each write land whole at the end, whatever else writes."""
    line = json.dumps(dict(event=event, pid=os.getpid(), at=time.time(), **fields)) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def apply_once(ledger, key, case_id, run_id, attempt, amount):
    """The effect and its key in one transaction: True if applied now, False if the key was there."""
    db = sqlite3.connect(ledger, timeout=60, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT INTO inbox(key, case_id, run_id, attempt) VALUES (?, ?, ?, ?)",
                       (key, case_id, run_id, attempt))
        except sqlite3.IntegrityError:
            db.execute("ROLLBACK")
            return False  # an earlier attempt of this case already did it
        db.execute("UPDATE account SET balance = balance + ? WHERE id = 1", (amount,))
        db.execute("COMMIT")
        return True
    finally:
        db.close()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: effect.py LEDGER.db SIDE.log (the case's JSON on stdin)")
    ledger, log = sys.argv[1], sys.argv[2]
    missing = [name for name in ENV if name not in os.environ]
    if missing:
        sys.exit("not run by Tally's exec evaluator: no " + ", ".join(missing))
    env = {name: os.environ[name] for name in ENV}
    case = json.loads(sys.stdin.readline())
    key, case_id = env["TALLY_IDEMPOTENCY_KEY"], env["TALLY_CASE_ID"]
    who = dict(case=case_id, key=key, run=env["TALLY_RUN_ID"], job=env["TALLY_JOB_ID"],
               attempt=int(env["TALLY_ATTEMPT"]), token=env["TALLY_FENCING_TOKEN"])
    side_log(log, "execution", **who)
    applied = apply_once(ledger, key, case_id, int(env["TALLY_RUN_ID"]), who["attempt"], int(case["amount"]))
    side_log(log, "effect", applied=applied, **who)
    time.sleep(float(os.environ.get("EFFECT_HOLD_SECONDS", "1.0")))
    side_log(log, "done", **who)
    # The verdict is the case's; whether this attempt or an earlier one applied the effect is the ledger's.
    print(json.dumps({"verdict": "pass"}))


if __name__ == "__main__":
    main()

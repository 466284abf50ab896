#!/usr/bin/env python3
"""Runs a dataset whose cases each perform an external effect (effect.py) under kill -9 of workers and of the
coordinator, then shows N cases -> N effects while the side log shows more than N executions.

    python3 run.py [--cases 60] [--worker-kills 4] [--coordinator-kills 1] [--work-dir DIR] [--tally CMD]

It starts `tally run` with 3 local worker processes of 2 slots, and whenever a case has applied its effect
but not yet finished (effect.py says so in the side log), kills that case's worker JVM with kill -9: the
case dies with it, its result never reaches the store, and Tally runs it again on another worker. That is
at-least-once delivery doing its job, and a second execution of an effect that already happened. With
--coordinator-kills it also kills `tally run` itself that way once, and runs the same command again, which
resumes the run. Then it counts:

  - cases: the dataset's lines;
  - effects: rows of the ledger's inbox, and the account's balance against the sum of the amounts;
  - executions: "execution" lines of the side log.

It exits 0 only if tally run passed every case and every case's effect happened exactly once (effects ==
cases, and the balance is right); 1 otherwise. Everything it writes is under --work-dir (default: a new
temporary directory, printed).
"""
import argparse
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# How long a case goes on after its effect: the window a kill needs to land in (see effect.py).
HOLD_SECONDS = "1.0"
# The longest the whole run may take: far beyond a healthy one (seconds), short of a hung CI job.
RUN_TIMEOUT_SECONDS = 600


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=60, help="cases in the dataset (default 60)")
    p.add_argument("--worker-kills", type=int, default=4, help="worker JVMs to kill -9 after an effect (default 4)")
    p.add_argument("--coordinator-kills", type=int, default=1, help="times to kill -9 tally run itself (default 1)")
    p.add_argument("--work-dir", help="where to write everything (default: a new temporary directory)")
    p.add_argument("--tally", default=os.path.join(HERE, "..", "..", "tally"),
                   help="the tally command, as shell words (default: the clone's ./tally)")
    p.add_argument("--hold", default=HOLD_SECONDS, help="seconds each case goes on after its effect (default 1.0)")
    return p.parse_args()


def create_ledger(path):
    db = sqlite3.connect(path)
    db.executescript("""
        PRAGMA journal_mode=WAL;
        CREATE TABLE inbox(key TEXT PRIMARY KEY, case_id TEXT NOT NULL, run_id INTEGER NOT NULL,
                           attempt INTEGER NOT NULL);
        CREATE TABLE account(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
        INSERT INTO account VALUES (1, 0);
    """)
    db.close()


def read_side_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def parent_of(pid):
    """The parent pid from /proc/PID/stat (its command name, in parentheses, may hold spaces)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def worker_of(pid, coordinator_pid):
    """The worker JVM running the case process pid: its ancestor whose parent is tally run."""
    while pid and pid > 1:
        parent = parent_of(pid)
        if parent == coordinator_pid:
            return pid
        pid = parent
    return None


def past_effect(events, already):
    """A running execution that has applied its effect and not finished, not yet acted on: (pid, case)."""
    finished = {(e["pid"], e["key"]) for e in events if e["event"] == "done"}
    for e in events:
        if e["event"] == "effect" and e["applied"] and (e["pid"], e["key"]) not in finished \
                and (e["pid"], e["key"]) not in already:
            return e["pid"], e["key"], e["case"]
    return None


def main():
    args = parse_args()
    work = os.path.abspath(args.work_dir or tempfile.mkdtemp(prefix="tally-exactly-once-"))
    os.makedirs(work, exist_ok=True)
    ledger, side, cases_file = (os.path.join(work, n) for n in ("ledger.db", "side.log", "cases.jsonl"))
    for stale in (ledger, side, os.path.join(work, "tally.db")):
        if os.path.exists(stale):
            sys.exit(f"run.py: {stale} exists; give a new --work-dir")
    create_ledger(ledger)
    amounts = {f"case-{i}": i + 1 for i in range(args.cases)}
    with open(cases_file, "w") as f:
        for case_id, amount in amounts.items():
            f.write(json.dumps({"id": case_id, "amount": amount}) + "\n")

    effect = os.path.join(HERE, "effect.py")
    command = shlex.split(args.tally) + [
        "run", cases_file, "--workers", "3", "--slots", "2", "--db", os.path.join(work, "tally.db"),
        "--out", os.path.join(work, "results.jsonl"), "--summary", os.path.join(work, "summary.json"),
        "--evaluator", "exec", "--cmd", f"python3 {shlex.quote(effect)} {shlex.quote(ledger)} {shlex.quote(side)}",
        "--no-progress"]
    env = dict(os.environ, EFFECT_HOLD_SECONDS=args.hold)
    print(f"run.py: {args.cases} cases, 3 workers x 2 slots, in {work}", flush=True)

    # The kills, in order: the coordinator's after the first worker's, so that both a lost worker and a
    # restarted coordinator make cases run again.
    plan = ["worker"] * args.worker_kills
    for _ in range(args.coordinator_kills):
        plan.insert(min(1, len(plan)), "coordinator")
    acted_on = set()
    deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
    with open(os.path.join(work, "tally-run.log"), "a") as out:
        while True:
            run = subprocess.Popen(command, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
            killed_coordinator = False
            while run.poll() is None:
                if time.monotonic() > deadline:
                    run.kill()
                    sys.exit(f"run.py: tally run did not finish in {RUN_TIMEOUT_SECONDS} s; see {work}/tally-run.log")
                target = past_effect(read_side_log(side), acted_on) if plan else None
                if target is None:
                    time.sleep(0.05)
                    continue
                pid, key, case_id = target
                acted_on.add((pid, key))
                if plan[0] == "coordinator":
                    plan.pop(0)
                    os.kill(run.pid, signal.SIGKILL)
                    run.wait()
                    killed_coordinator = True
                    print(f"run.py: killed tally run (kill -9) while {case_id} was past its effect;"
                          " running the same command again", flush=True)
                    break
                worker = worker_of(pid, run.pid)
                if worker is None:
                    continue  # it finished meanwhile
                plan.pop(0)
                os.kill(worker, signal.SIGKILL)
                print(f"run.py: killed worker JVM {worker} (kill -9) while {case_id} was past its effect", flush=True)
            if not killed_coordinator:
                break
            # Its local workers notice their parent is gone and exit; their cases die with them.
            time.sleep(1.5)
    code = run.returncode
    print(f"run.py: tally run exited {code}", flush=True)

    db = sqlite3.connect(ledger)
    effects = db.execute("SELECT COUNT(*) FROM inbox").fetchone()[0]
    per_case = dict(db.execute("SELECT case_id, COUNT(*) FROM inbox GROUP BY case_id").fetchall())
    balance = db.execute("SELECT balance FROM account WHERE id = 1").fetchone()[0]
    db.close()
    events = read_side_log(side)
    executions = [e for e in events if e["event"] == "execution"]
    runs_of = {}
    for e in executions:
        runs_of.setdefault(e["case"], []).append(e)
    repeated = {c: len(es) for c, es in runs_of.items() if len(es) > 1}
    suppressed = sum(1 for e in events if e["event"] == "effect" and not e["applied"])

    print(f"{args.cases} cases -> {effects} effects in the ledger (balance {balance}; the amounts sum to "
          f"{sum(amounts.values())})")
    print(f"{len(executions)} executions in the side log: {len(repeated)} cases ran more than once, and the ledger"
          f" turned {suppressed} repeated effects away by their TALLY_IDEMPOTENCY_KEY")
    for case_id in sorted(repeated, key=lambda c: int(c.split("-")[1])):
        keys = {e["key"] for e in runs_of[case_id]}
        attempts = [e["attempt"] for e in runs_of[case_id]]
        print(f"  {case_id}: attempts {attempts}, {'one key' if len(keys) == 1 else 'KEYS DIFFER: ' + str(keys)}")
    problems = []
    if code != 0:
        problems.append(f"tally run exited {code} (see {work}/tally-run.log)")
    if effects != args.cases or any(n != 1 for n in per_case.values()) or set(per_case) != set(amounts):
        problems.append(f"{effects} effects for {args.cases} cases")
    if balance != sum(amounts.values()):
        problems.append(f"the balance is {balance}, not {sum(amounts.values())}")
    if len(executions) <= args.cases and args.worker_kills + args.coordinator_kills > 0:
        print("run.py: note: no kill landed after an effect this time, so nothing ran twice")
    if problems:
        print("run.py: FAILED: " + "; ".join(problems))
        return 1
    print("run.py: OK: every case's effect happened exactly once")
    return 0


if __name__ == "__main__":
    sys.exit(main())

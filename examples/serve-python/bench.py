#!/usr/bin/env python3
"""Runs one Python scorer over N cases with `--evaluator exec` and with `--evaluator exec --serve`, and
prints both wall times, the machine and the commands. A benchmark, not a test: compare the two as a ratio
within one run, since the machines are shared.

    python3 examples/serve-python/bench.py [--cases 2000] [--workers 1] [--slots 2] [--dir DIR]
"""
import argparse
import json
import os
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TALLY = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tally")
SCORER = os.path.join(HERE, "scorer.py")


def write_cases(path, n, seed=7):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            a, b = rng.randrange(1000), rng.randrange(1000)
            # one in ten is wrong on purpose, so the run has fails to count
            target = a + b + (1 if i % 10 == 9 else 0)
            f.write(json.dumps({"id": f"s{i}", "question": f"{a}+{b}", "target": str(target)}) + "\n")


def run(work, cases, args, serve):
    name = "serve" if serve else "exec"
    cmd = [TALLY, "run", cases, "--workers", str(args.workers), "--slots", str(args.slots),
           "--evaluator", "exec", "--cmd", f"python3 {SCORER}", "--no-progress",
           "--db", os.path.join(work, name + ".db"), "--out", os.path.join(work, name + "-results.jsonl"),
           "--summary", os.path.join(work, name + "-summary.json")]
    if serve:
        cmd.append("--serve")
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if done.returncode not in (0, 1):  # 1: some cases failed, as they should
        sys.exit(f"{name} run failed (exit {done.returncode}):\n{done.stderr}")
    with open(os.path.join(work, name + "-summary.json")) as f:
        summary = json.load(f)
    return cmd, wall, summary


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--dir", help="where the stores and results go (default: a new temporary directory)")
    args = p.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="tally-serve-bench-")
    os.makedirs(work, exist_ok=True)
    cases = os.path.join(work, "cases.jsonl")
    write_cases(cases, args.cases)

    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, {platform.python_implementation()} "
          f"{platform.python_version()}; load average {os.getloadavg()[0]:.2f} at start")
    results = {}
    for serve in (False, True):
        cmd, wall, summary = run(work, cases, args, serve)
        name = "exec --serve" if serve else "exec"
        results[name] = wall
        print(f"{name:>12}: {wall:7.1f} s wall ({summary['runWallMillis'] / 1000:.1f} s the run's span), "
              f"{args.cases / wall:6.1f} cases/s; {summary['passed']} passed, {summary['failed']} failed, "
              f"{summary['errored']} errored")
        print(f"              {shlex.join(cmd)}")
    print(f"ratio: exec takes {results['exec'] / results['exec --serve']:.1f}x the wall time of exec --serve")


if __name__ == "__main__":
    main()

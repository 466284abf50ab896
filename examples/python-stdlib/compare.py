#!/usr/bin/env python3
"""Check a Tally results file against running each module directly.

For every line of RESULTS, runs `python3 -m test MODULE` on its own and compares the verdict (exit 0 is
pass, anything else fail) with what Tally recorded. Also checks that each module appears exactly once.
Exits 0 when every verdict matches.

    python3 compare.py results.jsonl --jobs 2
"""
import argparse
import collections
import concurrent.futures
import json
import subprocess
import sys


def direct_verdict(module: str, timeout: float) -> str:
    try:
        done = subprocess.run([sys.executable, "-m", "test", module], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "pass" if done.returncode == 0 else "fail"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("--dataset", help="the dataset the run used: every case must appear exactly once")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()

    with open(args.results, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    counts = collections.Counter(row["id"] for row in rows)
    repeated = [m for m, n in counts.items() if n != 1]
    missing = []
    if args.dataset:
        with open(args.dataset, encoding="utf-8") as f:
            wanted = [json.loads(line)["id"] for line in f if line.strip()]
        missing = [m for m in wanted if m not in counts]

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        direct = dict(zip([r["id"] for r in rows], pool.map(lambda r: direct_verdict(r["id"], args.timeout), rows)))
    mismatches = [(r["id"], r["verdict"], direct[r["id"]]) for r in rows if r["verdict"] != direct[r["id"]]]

    print(f"modules: {len(rows)}; repeated: {len(repeated)}; missing: {len(missing)}; verdict mismatches: {len(mismatches)}")
    print(f"tally verdicts: {dict(collections.Counter(r['verdict'] for r in rows))}")
    for module, tally, own in mismatches:
        print(f"  {module}: tally {tally}, direct {own}")
    for module in repeated:
        print(f"  {module}: appears {counts[module]} times")
    for module in missing:
        print(f"  {module}: missing")
    return 0 if not (mismatches or repeated or missing) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Time CPython's regression tests three ways, N at a time: CPython's own runner, xargs, and tally run.

The same modules (make_dataset.py's, --limit of them) run as:

  cpython    python3 -m test -jN MODULE...                      CPython's parallel runner (light workers)
  xargs      xargs -PN -n1 setsid -w python3 -m test < modules  one `python3 -m test MODULE` per module
  tally      tally run cases.jsonl --workers N --slots 1 --evaluator exec --cmd 'python3 -m test {id}'
  tally-in-process   the same, with --workers 0 --in-process N: one JVM, no worker processes
  tally-no-prefetch  the tally variant with --prefetch none: a module goes to a worker only when its slot is
                     free, in dataset order, as xargs hands them out
  tally-baseline     with --baseline-tally PATH: the tally variant run by another launcher (say, a build
                     from before a change), in the same sitting

and prints each one's wall time and CPU time (user + system of it and every process it waited for: the
tally JVMs, the shells and the Pythons), with ratios to xargs; for a tally run also where its wall time
went (start to the run's creation, to the first case leased, the cases, the end to the exit), from its store, which runs exactly the command tally runs
per case; tally's own cost is its gap to xargs. The machine and the settings are printed with them.

With --rounds R every variant runs R times, interleaved (round r runs them in a rotated order), so that a
shared machine's load falls on all of them alike; each round's ratios are printed, then the medians.

    python3 bench.py --tally ~/src/tally/tally              # roughly 5 minutes on an idle 2-core machine
    python3 bench.py --tally ~/src/tally/tally --rounds 3 --variants xargs,tally

Every run happens in a scratch directory of its own under --work (a temporary directory by default,
removed at the end unless --keep), so the tests' files and tally's store and results stay there.
"""
import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("cpython", "xargs", "tally", "tally-no-prefetch", "tally-in-process", "tally-baseline")


def command(variant: str, jobs: int, tally: str, modules: list, dataset: Path, baseline: str = None) -> list:
    """The argv of one variant; each reads what it runs from `dataset` (or the modules list)."""
    if variant == "cpython":
        return [sys.executable, "-m", "test", f"-j{jobs}", *modules]
    if variant == "xargs":
        # In a session of its own, as tally runs each case (and CPython's runner its workers): Linux's
        # autogroup scheduler gives each session a share of the CPU, so on a machine busy with other work
        # three modules in one session get a third of what three sessions get, and run minutes slower.
        session = ["setsid", "-w"] if shutil.which("setsid") else []
        return ["xargs", f"-P{jobs}", "-n1", *session, sys.executable, "-m", "test"]
    run = [baseline if variant == "tally-baseline" else tally, "run", str(dataset), "--evaluator", "exec", "--cmd", f"{shlex.quote(sys.executable)} -m test {{id}}",
           "--case-timeout", "5m", "--db", "tally.db", "--out", "results.jsonl", "--summary", "summary.json", "--no-progress"]
    if variant == "tally-no-prefetch":
        return run + ["--workers", str(jobs), "--slots", "1", "--prefetch", "none"]
    if variant in ("tally", "tally-baseline"):
        return run + ["--workers", str(jobs), "--slots", "1"]
    if variant == "tally-in-process":
        return run + ["--workers", "0", "--in-process", str(jobs)]
    raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")


def measure(argv: list, cwd: Path, stdin_text: str) -> dict:
    """Runs argv in cwd; its wall time, and the CPU time of it and all it waited for (wait4's rusage)."""
    with open(cwd / "output.log", "wb") as log:
        load = os.getloadavg()[0]
        started_at = time.time()
        started = time.monotonic()
        process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        process.stdin.write(stdin_text.encode())
        process.stdin.close()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "user": usage.ru_utime, "sys": usage.ru_stime,
            "exit": process.returncode, "load": load, "started_at": started_at}


def check_tally(cwd: Path, modules: list) -> str:
    """What tally's results file says: every module once, or what is wrong."""
    try:
        with open(cwd / "results.jsonl", encoding="utf-8") as f:
            ids = [json.loads(line)["id"] for line in f if line.strip()]
    except OSError as e:
        return f"no results file: {e}"
    if sorted(ids) != sorted(modules):
        return f"results hold {len(ids)} lines for {len(modules)} modules ({len(set(ids))} distinct)"
    return "ok"


def where_time_went(cwd: Path, wall: float, started_at: float) -> str:
    """A tally run's wall time in parts, from its store: start to the run's creation (the JVM, the store),
    creation to the first case leased (the workers joining), the run, and its end to the process's exit."""
    try:
        import sqlite3
        db = sqlite3.connect(f"file:{cwd / 'tally.db'}?mode=ro", uri=True)
        created, finished = db.execute("SELECT created_at_millis, finished_at_millis FROM runs ORDER BY id LIMIT 1").fetchone()
        first = db.execute("SELECT MIN(started_at_millis) FROM attempts").fetchone()[0]
        db.close()
    except Exception as e:  # noqa: BLE001 - a breakdown is a nicety; the run's own check says what matters
        return f"no breakdown ({e})"
    start_ms, end_ms = started_at * 1000, (started_at + wall) * 1000
    return (f"start to run created {(created - start_ms) / 1000:.1f} s, to first case leased {(first - created) / 1000:.1f} s,"
            f" cases {(finished - first) / 1000:.1f} s, end to exit {(end_ms - finished) / 1000:.1f} s")


def text_of(argv: list) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return (done.stdout + done.stderr).strip().splitlines()[0] if done.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def machine(tally: str) -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    java = text_of(["java", "-version"])
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled", encoding="utf-8") as f:
            model += ", autogroup scheduling " + ("on" if f.read().strip() == "1" else "off")
    except OSError:
        pass
    commit = text_of(["git", "-C", str(Path(tally).resolve().parent), "log", "-1", "--format=%h %cs"])
    return (f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}; Python {platform.python_version()}"
            f" ({sys.executable}); {java}; tally {tally} at {commit}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tally", default=str(HERE.parent.parent / "tally"), help="the tally launcher (default: this clone's)")
    parser.add_argument("--limit", type=int, default=60, help="modules (make_dataset.py --limit; default: 60)")
    parser.add_argument("--jobs", type=int, default=3, help="modules at a time, N (default: 3)")
    parser.add_argument("--rounds", type=int, default=1, help="times each variant runs, interleaved (default: 1)")
    parser.add_argument("--variants", help=f"comma-separated, of {', '.join(VARIANTS)} (default: all but tally-baseline,"
                        " and it too with --baseline-tally)")
    parser.add_argument("--baseline-tally", help="another tally launcher (or a script running another jar) for tally-baseline")
    parser.add_argument("--work", help="scratch directory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    default = VARIANTS if args.baseline_tally else VARIANTS[:-1]
    variants = [v.strip() for v in (args.variants or ",".join(default)).split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            parser.error(f"--variants: unknown {v!r}; known: {', '.join(VARIANTS)}")
    if args.limit < 1 or args.jobs < 1 or args.rounds < 1:
        parser.error("--limit, --jobs and --rounds must be at least 1")
    if "tally-baseline" in variants and not args.baseline_tally:
        parser.error("the tally-baseline variant needs --baseline-tally PATH")

    work = Path(args.work or tempfile.mkdtemp(prefix="tally-bench-exec-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    dataset = work / "cases.jsonl"
    subprocess.run([sys.executable, str(HERE / "make_dataset.py"), "--out", str(dataset), "--limit", str(args.limit)], check=True)
    with open(dataset, encoding="utf-8") as f:
        modules = [json.loads(line)["id"] for line in f if line.strip()]
    if any(v.startswith("tally") for v in variants):
        # The launcher builds the jar (and its class-data archive) on first use: not part of any measurement.
        subprocess.run([args.tally, "--version"], check=True, stdout=subprocess.DEVNULL)
        if args.baseline_tally:
            subprocess.run([args.baseline_tally, "--version"], check=True, stdout=subprocess.DEVNULL)

    print(f"machine: {machine(args.tally)}")
    print(f"settings: {len(modules)} modules of make_dataset.py --limit {args.limit}, {args.jobs} at a time,"
          f" {args.rounds} round(s), variants in rotated order per round")
    for v in variants:
        argv = command(v, args.jobs, args.tally, ["MODULE..."], Path("cases.jsonl"), args.baseline_tally)
        print(f"  {v}: {' '.join(shlex.quote(a) for a in argv)}")
    sys.stdout.flush()

    results = {v: [] for v in variants}
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[: r % len(variants)]
        for v in order:
            cwd = work / f"round-{r + 1}" / v
            cwd.mkdir(parents=True, exist_ok=True)
            m = measure(command(v, args.jobs, args.tally, modules, dataset, args.baseline_tally), cwd, "\n".join(modules) + "\n")
            m["check"] = check_tally(cwd, modules) if v.startswith("tally") else "-"
            results[v].append(m)
            print(f"round {r + 1} {v:17} wall {m['wall']:7.1f} s  CPU {m['cpu']:7.1f} s (user {m['user']:.1f}, sys {m['sys']:.1f})"
                  f"  exit {m['exit']}  load before {m['load']:.1f}  {m['check'] if m['check'] != '-' else ''}".rstrip())
            if v.startswith("tally"):
                print(f"        {v}: {where_time_went(cwd, m['wall'], m['started_at'])}")
            sys.stdout.flush()

    print()
    print(f"{'':17} {'wall s':>8} {'CPU s':>8} {'wall/xargs':>11} {'CPU/xargs':>10} {'wall-xargs s':>13} {'wall/xargs range':>17}"
          f"   (medians over {args.rounds} round(s); ratios and differences per round, then their median; the range is"
          f" the lowest and highest round's ratio: on a noisy machine a difference inside it is not a result)")
    for v in variants:
        wall = statistics.median(m["wall"] for m in results[v])
        cpu = statistics.median(m["cpu"] for m in results[v])
        if "xargs" in results:
            # Tally's own cost is fixed more than proportional (JVM and store start-up), so the difference in
            # seconds says it as well as the ratio, which shrinks as the modules take longer.
            wall_ratio = statistics.median(m["wall"] / x["wall"] for m, x in zip(results[v], results["xargs"]))
            cpu_ratio = statistics.median(m["cpu"] / x["cpu"] for m, x in zip(results[v], results["xargs"]))
            wall_over = statistics.median(m["wall"] - x["wall"] for m, x in zip(results[v], results["xargs"]))
            ratios = [m["wall"] / x["wall"] for m, x in zip(results[v], results["xargs"])]
            spread = f"{min(ratios):.3f}-{max(ratios):.3f}"
            print(f"{v:17} {wall:8.1f} {cpu:8.1f} {wall_ratio:11.3f} {cpu_ratio:10.3f} {wall_over:13.1f} {spread:>17}")
        else:
            print(f"{v:17} {wall:8.1f} {cpu:8.1f}")
    bad = [f"{v} round {i + 1}: {m['check']}" for v in variants for i, m in enumerate(results[v]) if m["check"] not in ("ok", "-")]
    for line in bad:
        print(f"CHECK FAILED: {line}")
    if args.work is None and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"scratch: {work}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

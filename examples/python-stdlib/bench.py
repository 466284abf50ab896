#!/usr/bin/env python3
"""Time CPython's regression tests N at a time: CPython's own runner, xargs, tally run and a warm tally server.

The same modules (make_dataset.py's, --limit of them) run as:

  cpython    python3 -m test -jN MODULE...                      CPython's parallel runner (light workers)
  xargs      xargs -PN -n1 setsid -w python3 -m test < modules  one `python3 -m test MODULE` per module
  tally      tally run cases.jsonl --workers N --slots 1 --evaluator exec --cmd 'python3 -m test {id}'
  tally-in-process   the same, with --workers 0 --in-process N: one JVM, no worker processes
  tally-no-prefetch  the tally variant with --prefetch none: a module goes to a worker only when its slot is
                     free, in dataset order, as xargs hands them out
  tally-server       a warm coordinator kept running: `tally server --workers N --slots 1`, started once before
                     the first round, its workers joined and warmed up by two runs of 300 `true` cases; each
                     round measures a run submitted to its HTTP API (the dataset as NDJSON), waited for on
                     its event stream, and its results.jsonl fetched, by this script (no JVM on the client's
                     side); CPU is the server's, its workers' and their cases' over that span (/proc), and
                     the client's; "tally's own" is the JVMs' alone, without the cases
  tally-server-in-process   the same with `tally server --workers 0 --in-process N`: one warm JVM, no worker
                     processes
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
import http.client
import json
import os
import platform
import resource
import secrets
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("cpython", "xargs", "tally", "tally-no-prefetch", "tally-in-process", "tally-server", "tally-server-in-process", "tally-baseline")


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
    if variant.startswith("tally-server"):
        # Started before the measurement; what is measured is a submission to it (Server.measure).
        fleet = ["--workers", "0", "--in-process", str(jobs)] if variant.endswith("in-process") else ["--workers", str(jobs), "--slots", "1"]
        return [tally, "server", "--db", "tally.db", "--http", "127.0.0.1:0", *fleet, "--api-token-file", "api-token"]
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


def tree_cpu(root: int) -> tuple:
    """CPU seconds (user + system) of a process and all its live descendants, with what each has reaped of its
    children: a process is counted either live or in its reaper's cutime/cstime, never twice (/proc/PID/stat);
    and the Java processes' own time alone (the server and its worker JVMs, without their cases)."""
    parents, cpu, own, java = {}, {}, {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        # After the command's name: state ppid ... utime(14) stime cutime cstime, counting from the pid as 1.
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(x) for x in fields[11:15])
        own[int(entry)] = sum(int(x) for x in fields[11:13])
        try:
            if os.path.basename(os.readlink(f"/proc/{entry}/exe")) == "java":
                java.add(int(entry))
        except OSError:
            pass
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    tick = os.sysconf("SC_CLK_TCK")
    return sum(cpu.get(pid, 0) for pid in tree) / tick, sum(own.get(pid, 0) for pid in tree if pid in java) / tick


class Server:
    """A tally server started with argv in cwd, its workers joined (not measured), taking submissions."""

    def __init__(self, argv: list, cwd: Path, workers: int, warm_up: int = 300):
        self.cwd, self.token = cwd, secrets.token_hex(32)
        with open(os.open(cwd / "api-token", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
            f.write(self.token)
        self.log = open(cwd / "server.log", "wb")
        self.process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.port, deadline = None, time.monotonic() + 120
            while self.port is None:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"tally server did not start (exit {self.process.returncode}); see {cwd / 'server.log'}")
                text = (cwd / "server.log").read_text(encoding="utf-8", errors="replace")
                marker = "API http://127.0.0.1:"
                if marker in text:
                    self.port = int(text.split(marker, 1)[1].split("/", 1)[0])
                else:
                    time.sleep(0.05)
            while len([w for w in self.request("GET", "/workers")["workers"] if w["state"] == "live"]) < workers:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tally server's {workers} workers did not join; see {cwd / 'server.log'}")
                time.sleep(0.05)
            if warm_up:
                # What a server kept running has done before: the JIT has compiled its paths for a case.
                cases = cwd / "warm-up.jsonl"
                cases.write_text("".join(json.dumps({"id": f"warm-{i}"}) + "\n" for i in range(warm_up)), encoding="utf-8")
                for _ in range(2):
                    self.measure(cases, "true {id}", cwd / "warm-up-results.jsonl")
                time.sleep(2)
        except BaseException:
            self.stop()
            raise

    def open(self, method: str, path: str, body: bytes = None, headers: dict = None, timeout: float = 60):
        """One request to the API; the open response (the caller reads it) and its connection."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        connection.request(method, "/api/v1" + path, body=body, headers={"Authorization": f"Bearer {self.token}", **(headers or {})})
        return connection.getresponse(), connection

    def request(self, method: str, path: str, body: bytes = None, headers: dict = None):
        response, connection = self.open(method, path, body, headers)
        try:
            answer = json.loads(response.read())
        finally:
            connection.close()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {answer}")
        return answer

    def measure(self, dataset: Path, cmd: str, results: Path) -> dict:
        """Submits the dataset as a run of cmd, waits for its end on the event stream and writes its
        results to `results`; wall time, and the CPU of the server's process tree and this client meanwhile."""
        server_cpu, server_own = tree_cpu(self.process.pid)
        load = os.getloadavg()[0]
        started_at = time.time()
        started = time.monotonic()
        own = resource.getrusage(resource.RUSAGE_SELF)
        # The event stream first, so that the run's end cannot pass before it is open.
        events, events_connection = self.open("GET", "/events", headers={"Accept": "text/event-stream"}, timeout=600)
        body = json.dumps({"evaluator": {"kind": "exec", "cmd": cmd}, "settings": {"caseTimeout": "5m"}}).encode() + b"\n" + dataset.read_bytes()
        created = self.request("POST", "/runs", body, {"Content-Type": "application/x-ndjson", "Idempotency-Key": secrets.token_hex(16)})
        event = None
        for raw in events:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "run":
                run = json.loads(line[5:])
                if run["id"] == created["id"] and run["state"] != "running":
                    break
        events_connection.close()
        response, connection = self.open("GET", f"/runs/{created['id']}/results")
        with open(results, "wb") as f:
            shutil.copyfileobj(response, f)
        connection.close()
        wall = time.monotonic() - started
        done = resource.getrusage(resource.RUSAGE_SELF)
        client_user, client_sys = done.ru_utime - own.ru_utime, done.ru_stime - own.ru_stime
        server_cpu_after, server_own_after = tree_cpu(self.process.pid)
        cpu = server_cpu_after - server_cpu + client_user + client_sys
        tally_own = server_own_after - server_own
        # The server's tree is not split into user and system time: "user" is all of it, "sys" the client's.
        return {"wall": wall, "cpu": cpu, "user": cpu - client_sys, "sys": client_sys, "exit": 0, "load": load,
                "started_at": started_at, "run": created["id"], "tally_own": tally_own}

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


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


def where_time_went(store: Path, run: int, wall: float, started_at: float, submitted: bool = False) -> str:
    """A tally run's wall time in parts, from its store: start to the run's creation (the JVM, the store),
    creation to the first case leased (the workers joining), the run, and its end to the process's exit; for
    a run submitted to a server, from the submission, and to the results fetched."""
    try:
        import sqlite3
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        created, finished = db.execute("SELECT created_at_millis, finished_at_millis FROM runs WHERE id = ?", (run,)).fetchone()
        first = db.execute("SELECT MIN(a.started_at_millis) FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.run_id = ?",
                           (run,)).fetchone()[0]
        db.close()
    except Exception as e:  # noqa: BLE001 - a breakdown is a nicety; the run's own check says what matters
        return f"no breakdown ({e})"
    start_ms, end_ms = started_at * 1000, (started_at + wall) * 1000
    begin, finish = ("submission", "results fetched") if submitted else ("start", "exit")
    return (f"{begin} to run created {(created - start_ms) / 1000:.2f} s, to first case leased {(first - created) / 1000:.2f} s,"
            f" cases {(finished - first) / 1000:.2f} s, end to {finish} {(end_ms - finished) / 1000:.2f} s")


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
    servers = {}
    try:
        run_rounds(args, variants, modules, dataset, work, results, servers)
    finally:
        for server in servers.values():
            server.stop()
    print_table(args, variants, results)
    bad = [f"{v} round {i + 1}: {m['check']}" for v in variants for i, m in enumerate(results[v]) if m["check"] not in ("ok", "-")]
    for line in bad:
        print(f"CHECK FAILED: {line}")
    if args.work is None and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"scratch: {work}")
    return 1 if bad else 0


def run_rounds(args, variants: list, modules: list, dataset: Path, work: Path, results: dict, servers: dict) -> None:
    """Runs every variant args.rounds times, interleaved, into results; a server variant's server is started
    (and warmed up) on its first round and kept in servers for the next."""
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[: r % len(variants)]
        for v in order:
            cwd = work / f"round-{r + 1}" / v
            cwd.mkdir(parents=True, exist_ok=True)
            argv = command(v, args.jobs, args.tally, modules, dataset, args.baseline_tally)
            if v.startswith("tally-server"):
                if v not in servers:
                    home = work / v
                    home.mkdir(parents=True, exist_ok=True)
                    servers[v] = Server(argv, home, 1 if v.endswith("in-process") else args.jobs)
                m = servers[v].measure(dataset, f"{shlex.quote(sys.executable)} -m test {{id}}", cwd / "results.jsonl")
                store = servers[v].cwd / "tally.db"
            else:
                m = measure(argv, cwd, "\n".join(modules) + "\n")
                store = cwd / "tally.db"
            m["check"] = check_tally(cwd, modules) if v.startswith("tally") else "-"
            results[v].append(m)
            print(f"round {r + 1} {v:17} wall {m['wall']:7.1f} s  CPU {m['cpu']:7.1f} s (user {m['user']:.1f}, sys {m['sys']:.1f})"
                  f"  exit {m['exit']}  load before {m['load']:.1f}  {m['check'] if m['check'] != '-' else ''}".rstrip())
            if v.startswith("tally"):
                own = f"; tally's own CPU {m['tally_own']:.2f} s" if "tally_own" in m else ""
                print(f"        {v}: {where_time_went(store, m.get('run', 1), m['wall'], m['started_at'], 'run' in m)}{own}")
            sys.stdout.flush()


def print_table(args, variants: list, results: dict) -> None:
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
    for v in variants:
        if "xargs" in results and all("tally_own" in m for m in results[v]):
            # The JVMs' own CPU, without the cases': free of the modules' own spread from round to round.
            share = statistics.median(m["tally_own"] / x["cpu"] for m, x in zip(results[v], results["xargs"]))
            print(f"{v}: tally's own CPU (its JVMs, not the cases) {statistics.median(m['tally_own'] for m in results[v]):.2f} s,"
                  f" {100 * share:.1f}% of xargs' CPU (median per round)")


if __name__ == "__main__":
    sys.exit(main())

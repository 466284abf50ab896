#!/usr/bin/env bash
# A run of a million noop cases through `tally run` with the coordinator's heap capped at 512 MiB
# (-Xmx512m): the dataset is checked and streamed into the store, and the results and summary streamed
# out, so nothing holds every case. Prints the machine, the settings, wall time, evals/s and the
# coordinator's peak heap, read from its GC log (-Xlog:gc): the most the heap held before a collection
# (bounded by -Xmx: garbage counts until it is collected) and the most it still held after one (what was
# live: the figure that would grow with the run if something kept every case).
#
# Usage: bench/million-cases.sh [CASES] [WORKERS] [SLOTS] [HEAP]   (defaults 1000000 3 2 512m)
# The local workers are JVMs of their own with their own heaps; only the coordinator gets HEAP.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cases="${1:-1000000}"
workers="${2:-3}"
slots="${3:-2}"
heap="${4:-512m}"
dir="$(mktemp -d "${TMPDIR:-/tmp}/tally-million.XXXXXX")"
trap 'rm -rf "$dir"' EXIT

# Each case is a small object like a real eval's: an id and a question.
awk -v n="$cases" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\":\"case-%d\",\"input\":\"What is %d + 1?\",\"target\":\"%d\"}\n", i, i, i + 1 }' \
  > "$dir/cases.jsonl"

"$here/tally" --version >/dev/null # builds the jar first if the sources changed, outside the measurement
echo "tally million-cases bench: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
  "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "java: $(java -version 2>&1 | head -1)"
echo "dataset: $cases cases, $(du -h "$dir/cases.jsonl" | cut -f1) of JSON Lines; store: SQLite at tally run's default durability"
cmd=(run "$dir/cases.jsonl" --evaluator noop --workers "$workers" --slots "$slots" --prefetch 128 --no-progress
  --db "$dir/tally.db" --out "$dir/results.jsonl" --summary "$dir/summary.json")
echo "command: TALLY_JAVA_OPTS='-Xmx$heap -Xlog:gc:file=GC_LOG' tally ${cmd[*]}"
start=$(date +%s%N)
set +e
TALLY_JAVA_OPTS="-Xmx$heap -Xlog:gc:file=$dir/gc.log" "$here/tally" "${cmd[@]}" > "$dir/stdout" 2> "$dir/stderr"
exit_code=$?
set -e
end=$(date +%s%N)
if [ "$exit_code" -ne 0 ]; then
  echo "tally run exited $exit_code:"; tail -20 "$dir/stderr"; exit 1
fi
wall_ms=$(( (end - start) / 1000000 ))
python3 - "$dir" "$cases" "$wall_ms" "$heap" <<'PY'
import json, re, sys, os
d, cases, wall_ms, heap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = json.load(open(os.path.join(d, "summary.json")))
lines = sum(1 for _ in open(os.path.join(d, "results.jsonl")))
before = after = 0.0
collections = 0
unit = {"K": 1 / 1024, "M": 1, "G": 1024}
for line in open(os.path.join(d, "gc.log")):
    m = re.search(r"(\d+)([KMG])->(\d+)([KMG])\((\d+)([KMG])\)", line)
    if m:
        collections += 1
        before = max(before, int(m.group(1)) * unit[m.group(2)])
        after = max(after, int(m.group(3)) * unit[m.group(4)])
print(f"wall: {wall_ms} ms from the command to its exit (JVM start, dataset check, run creation, run, results);"
      f" summary wallMillis {s['wallMillis']}, runWallMillis {s['runWallMillis']} (creation in the store to the last result)")
print(f"{cases / (s['runWallMillis'] / 1000):.0f} evals/s over the run ({cases / (wall_ms / 1000):.0f} over the whole command)")
print(f"coordinator heap (-Xmx{heap}): peak used {before:.0f} MiB (before a collection), peak live {after:.0f} MiB (after one), {collections} collections")
ok = s["recorded"] == cases and s["passed"] == cases and lines == cases
print(f"recorded {s['recorded']} of {cases}, {lines} results lines (duplicates suppressed {s['duplicatesSuppressed']},"
      f" fenced {s['staleResultsFenced']}, redeliveries {s['redeliveries']})" + ("" if ok else "  <-- NOT EXACT"))
sys.exit(0 if ok else 1)
PY

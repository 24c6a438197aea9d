#!/usr/bin/env bash
# Harness throughput: arbiter vs a Python thread-pool harness on the same data, against the same
# simulator in instant mode on loopback, in one run. Prints judgments/s and the ratio.
# The Python harness runs on Debian's /usr/bin/python3 with python3-httpx.
# Usage: bench/run.sh [N_ITEMS (default 10000)] [PY_ITEMS (default 2000)]
set -euo pipefail
cd "$(dirname "$0")/.."
ARB=./build/arbiter
N=${1:-10000}
PY_N=${2:-2000}
W=bench/out
rm -rf "$W"; mkdir -p "$W"
python3 bench/gen_data.py "$W/data" "$N"
python3 bench/gen_data.py "$W/pydata" "$PY_N"
$ARB sim-server --instant --port 0 --port-file "$W/port" --judge bench-judge 2>"$W/sim.log" &
SIM=$!
trap 'kill $SIM 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.05; done
URL="http://127.0.0.1:$(cat "$W/port")/v1"

echo "arbiter: $((N*2)) judgments (render -> HTTP -> parse -> SQLite), 64 in flight"
t0=$(date +%s.%N)
$ARB sbs --items "$W/data/items.jsonl" --answers "$W/data/answers.jsonl" --candidate model-x \
  --baseline model-y --judge-url "$URL" --judge-model bench-judge --jobs 64 --no-progress \
  --db "$W/bench.db" 2>"$W/arbiter.log"
t1=$(date +%s.%N)
cat "$W/arbiter.log"
arb_rate=$(python3 -c "print(f'{$((N*2))/($t1-$t0):.0f}')")
echo "arbiter: $arb_rate judgments/s (wall clock, including start-up and loading)"

echo "python (httpx, thread pool of 32): $((PY_N*2)) judgments"
py=$(/usr/bin/python3 bench/harness_python.py "$W/pydata/items.jsonl" "$W/pydata/answers.jsonl" "$URL" \
  bench-judge "$W/py.jsonl" 32 templates/II-reason.txt)
echo "$py"
py_rate=$(echo "$py" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["per_second"]))')
echo "python: $py_rate judgments/s"
phase_rate=$(sed -n 's/.*(\([0-9]*\) calls\/s).*/\1/p' "$W/arbiter.log")
echo "arbiter judging phase: $phase_rate judgments/s (like the Python rate: loading excluded)"
python3 -c "print(f'ratio arbiter/python, judging phase (like for like): {$phase_rate/$py_rate:.1f}x')"
python3 -c "print(f'ratio arbiter wall clock incl. start-up / python judging phase: {$arb_rate/$py_rate:.1f}x')"

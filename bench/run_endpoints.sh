#!/usr/bin/env bash
# Multi-endpoint dispatch: how many calls per second one arbiter process drives across 1 and
# across 4 local simulator endpoints (`arbiter sim-server --instant`, loopback), with the same
# judge, data and requests in flight. The 4 endpoints are one judge's `endpoints:` in a judges
# file (least-outstanding dispatch, README "Several endpoints per judge"); the 1-endpoint run
# uses `url:`. Each configuration runs ROUNDS times on a fresh database, alternating, and the
# median of arbiter's judging-phase rate (the "calls/s" it prints; loading excluded) is
# reported with every round's figure. The simulators share the machine's cores with arbiter.
# Usage: bench/run_endpoints.sh [N_ITEMS (default 20000)] [IN_FLIGHT (default 64)] [ROUNDS (3)]
set -euo pipefail
cd "$(dirname "$0")/.."
ARB=${ARBITER:-./build/arbiter}
N=${1:-20000}
J=${2:-64}
ROUNDS=${3:-3}
W=bench/out/endpoints
rm -rf "$W"; mkdir -p "$W"
/usr/bin/python3 bench/gen_data.py "$W/data" "$N"
SIMS=()
trap 'for p in "${SIMS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
URLS=()
for i in 1 2 3 4; do
  $ARB sim-server --instant --port 0 --port-file "$W/port$i" --judge bench-judge 2>"$W/sim$i.log" &
  SIMS+=($!)
done
for i in 1 2 3 4; do
  for _ in $(seq 100); do [ -s "$W/port$i" ] && break; sleep 0.05; done
  URLS+=("http://127.0.0.1:$(cat "$W/port$i")/v1")
done
printf 'judges:\n  - {name: one, model: bench-judge, url: %s}\n' "${URLS[0]}" > "$W/one.yaml"
printf 'judges:\n  - {name: four, model: bench-judge, endpoints: [%s, %s, %s, %s]}\n' \
  "${URLS[@]}" > "$W/four.yaml"

run() { # CONFIG ROUND: one sbs run; prints its calls/s
  local db="$W/$1-$2.db"
  rm -f "$db"
  $ARB sbs --items "$W/data/items.jsonl" --answers "$W/data/answers.jsonl" --candidate model-x \
    --baseline model-y --judges "$W/$1.yaml" --jobs "$J" --no-progress --db "$db" \
    2>"$W/$1-$2.log"
  sed -n 's/.*(\([0-9]*\) calls\/s).*/\1/p' "$W/$1-$2.log"
  if [ "$1" = four ]; then
    /usr/bin/python3 -c 'import sqlite3, sys
print(" ".join(str(n) for (n,) in sqlite3.connect(sys.argv[1]).execute(
    "SELECT count(*) FROM calls GROUP BY endpoint ORDER BY endpoint")))' "$db" > "$W/split"
  fi
  rm -f "$db" "$db-wal" "$db-shm"
}
echo "arbiter sbs --jobs $J: $((N * 2)) calls per run, $ROUNDS rounds, instant simulators on loopback"
one=(); four=()
for r in $(seq "$ROUNDS"); do
  one+=("$(run one "$r")")
  four+=("$(run four "$r")")
  echo "round $r: 1 endpoint ${one[-1]} calls/s, 4 endpoints ${four[-1]} calls/s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
m1=$(median "${one[@]}"); m4=$(median "${four[@]}")
echo "median: 1 endpoint $m1 calls/s, 4 endpoints $m4 calls/s (ratio $(awk -v a="$m4" -v b="$m1" 'BEGIN{printf "%.2f", a / b}'))"
echo "calls per endpoint in the last 4-endpoint round: $(cat "$W/split")"

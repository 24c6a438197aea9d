#!/usr/bin/env bash
# Harness throughput and client CPU per call: arbiter against the two ways Python users write the
# same job, on the same data, against the same simulator (instant mode, loopback), in one run,
# all with the same number of requests in flight:
#   - asyncio + aiohttp (the fastest thing Python users write),
#   - a thread pool + httpx (the common synchronous way; TCP_NODELAY forced on, see
#     harness_common.py, because Debian's httpcore never sets it).
# The official `openai` client is measured too when `import openai` works (it is not packaged in
# Debian 12, and this machine has no PyPI): harness_openai.py.
# The transport floor: wrk (Debian's C load generator) sends arbiter's first stored request again
# and again over the same number of keep-alive connections and only reads the replies (no JSON,
# no store); its CPU per request is what sending and receiving alone cost on this machine.
# Prints calls/s and client CPU-ms per call (user + system time of the client process only; the
# simulator's CPU is not counted) and the ratios. Python runs on Debian's /usr/bin/python3.
# Usage: bench/run.sh [N_ITEMS (default 20000)] [PY_ITEMS (default 5000)] [IN_FLIGHT (64)]
set -euo pipefail
cd "$(dirname "$0")/.."
ARB=${ARBITER:-./build/arbiter}
N=${1:-20000}
PY_N=${2:-5000}
J=${3:-64}
W=bench/out
rm -rf "$W"; mkdir -p "$W"
/usr/bin/python3 bench/gen_data.py "$W/data" "$N"
/usr/bin/python3 bench/gen_data.py "$W/pydata" "$PY_N"
$ARB sim-server --instant --port 0 --port-file "$W/port" --judge bench-judge 2>"$W/sim.log" &
SIM=$!
trap 'kill $SIM 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.05; done
URL="http://127.0.0.1:$(cat "$W/port")/v1"
T=templates/II-reason.txt

echo "arbiter sbs --jobs $J: $((N*2)) calls (render -> HTTP -> parse -> SQLite: every call and judgment stored)"
/usr/bin/time -f '%e %U %S' -o "$W/arbiter.time" \
  $ARB sbs --items "$W/data/items.jsonl" --answers "$W/data/answers.jsonl" --candidate model-x \
  --baseline model-y --judge-url "$URL" --judge-model bench-judge --jobs "$J" --no-progress \
  --db "$W/bench.db" 2>"$W/arbiter.log"
cat "$W/arbiter.log"
read -r wall user sys <"$W/arbiter.time"
phase_rate=$(sed -n 's/.*(\([0-9]*\) calls\/s).*/\1/p' "$W/arbiter.log")
/usr/bin/python3 - "$((N*2))" "$wall" "$user" "$sys" "$phase_rate" >"$W/arbiter.json" <<'PY'
import json, sys
n, wall, user, sys_, phase = int(sys.argv[1]), *map(float, sys.argv[2:6])
print(json.dumps({"harness": "arbiter", "judgments": n, "per_second": phase,
                  "wall_per_second": n / wall, "cpu_ms_per_call": 1000 * (user + sys_) / n}))
PY
cat "$W/arbiter.json"

if command -v wrk >/dev/null; then
  echo "transport floor: wrk, one thread, $J connections, 5 s, arbiter's first request"
  $ARB export --db "$W/bench.db" --output "$W/export.jsonl"
  /usr/bin/python3 -c 'import json, sys; sys.stdout.write(json.loads(open(sys.argv[1]).readline())["request"])' \
    "$W/export.jsonl" >"$W/wrk_body.json"
  # The body is read from a file: a request holds "]]" (the verdict format), which would end a
  # Lua long string.
  cat >"$W/wrk.lua" <<'LUA'
local f = assert(io.open(os.getenv("WRK_BODY"), "rb"))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = f:read("*a")
f:close()
LUA
  WRK_BODY="$W/wrk_body.json" /usr/bin/time -f '%e %U %S' -o "$W/wrk.time" \
    wrk -t1 -c"$J" -d5s -s "$W/wrk.lua" "$URL/chat/completions" >"$W/wrk.log" 2>&1
  cat "$W/wrk.log"
  /usr/bin/python3 - "$W" <<'PY' >"$W/wrk.json"
import json, re, sys
w = sys.argv[1]
log = open(f"{w}/wrk.log").read()
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", log) or re.search(r"Socket errors: (.*)", log)
if bad:
    sys.exit(f"wrk: the simulator did not answer every request: {bad.group(0)}")
n = int(re.search(r"(\d+) requests in ([0-9.]+)s", log).group(1))
secs = float(re.search(r"(\d+) requests in ([0-9.]+)s", log).group(2))
wall, user, sys_ = map(float, open(f"{w}/wrk.time").read().split())
print(json.dumps({"harness": "wrk", "judgments": n, "per_second": n / secs,
                  "cpu_ms_per_call": 1000 * (user + sys_) / n}))
PY
  cat "$W/wrk.json"
else
  echo "transport floor: skipped (wrk not installed: apt-get install wrk, or make bench)"
fi

run_py() { # name script
  echo "python: $1, $((PY_N*2)) calls, $J in flight"
  (cd bench && /usr/bin/python3 "$2" "../$W/pydata/items.jsonl" "../$W/pydata/answers.jsonl" "$URL" \
     bench-judge "../$W/$1.jsonl" "$J" "../$T") | tee "$W/$1.json"
}
run_py aiohttp harness_aiohttp.py
run_py httpx harness_python.py
if /usr/bin/python3 -c 'import openai' 2>/dev/null; then
  run_py openai harness_openai.py
else
  echo "python: openai client skipped (not installed: not packaged in Debian 12; 'pip install openai')"
fi

/usr/bin/python3 - "$W" <<'PY'
import json, os, sys
w = sys.argv[1]
arb = json.load(open(f"{w}/arbiter.json"))
rows = [("arbiter", arb)]
for name in ("wrk", "aiohttp", "httpx", "openai"):
    if os.path.exists(f"{w}/{name}.json") and os.path.getsize(f"{w}/{name}.json"):
        rows.append((name, json.load(open(f"{w}/{name}.json"))))
print()
print(f"{'harness':<10} {'calls/s':>9} {'CPU-ms/call':>12} {'arbiter is (speed)':>19} {'(CPU per call)':>15}")
for name, r in rows:
    speed = arb["per_second"] / r["per_second"]
    cpu = r["cpu_ms_per_call"] / arb["cpu_ms_per_call"]
    extra = "" if name == "arbiter" else f"{speed:>18.1f}x {cpu:>14.1f}x"
    print(f"{name:<10} {r['per_second']:>9.0f} {r['cpu_ms_per_call']:>12.3f} {extra}")
    if "nodelay_connections" in r and r["nodelay_connections"] != r["connections"]:
        print(f"WARNING: {name}: only {r['nodelay_connections']} of {r['connections']} connections had TCP_NODELAY")
print("arbiter's rate is its judging phase (loading excluded, as for Python); its CPU includes "
      "start-up, loading and SQLite.")
if any(name == "wrk" for name, _ in rows):
    print("wrk is the transport floor: a C client that sends the same request and reads the "
          "reply, nothing else; arbiter's CPU above it is rendering, parsing and storing.")
json.dump({n: r for n, r in rows}, open(f"{w}/results.json", "w"), indent=1)
PY

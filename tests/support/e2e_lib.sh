# e2e_lib.sh -- what the end-to-end test scripts share (sourced, not run): a scratch directory
# removed on exit, pass/fail counting, and the simulated judge server on a free port over the
# demo benchmark. The caller sets ARB (the arbiter binary) before sourcing.
set -euo pipefail
SRC=${ARB_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
T=$(mktemp -d)
SIM_PID=""
cleanup() { [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
pass=0; fail=0
ok()   { pass=$((pass+1)); echo "ok   - $1"; }
bad()  { fail=$((fail+1)); echo "FAIL - $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

# start_sim ARGS...: copies the demo benchmark into $T (n_items = its size) and starts
# `arbiter sim-server` with ARGS (judges, seed) on a free port; sets PORT and URL.
start_sim() {
  cp "$SRC/demo/items.jsonl" "$SRC/demo/answers.jsonl" "$T/"
  n_items=$(grep -c . "$T/items.jsonl")
  "$ARB" sim-server --port 0 --port-file "$T/port" --items "$T/items.jsonl" \
    --answers "$T/answers.jsonl" "$@" 2>"$T/sim.log" &
  SIM_PID=$!
  for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  PORT=$(cat "$T/port")
  URL="http://127.0.0.1:$PORT/v1"
}

# scenarios_oracle SCENARIOS: writes $T/items.jsonl and $T/answers.jsonl from a persona scenarios
# file the way the persona protocol stores them (PERSONA.md): one item per scenario, answers
# "response1"/"response2" with the scenario's quality, where the simulator's answer oracle finds
# each response's quality by its text.
scenarios_oracle() {
  python3 - "$1" "$T" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
with open(out + "/items.jsonl", "w") as it, open(out + "/answers.jsonl", "w") as an:
    for line in open(src, encoding="utf-8"):
        o = json.loads(line)
        it.write(json.dumps({"id": o["id"], "question": o["scenario"], "category": o["base"]}) + "\n")
        for k in (0, 1):
            an.write(json.dumps({"item": o["id"], "model": "response%d" % (k + 1),
                                 "answer": o["responses"][k], "quality": o["qualities"][k]}) + "\n")
PY
}

# finish: prints the tally; the script's exit status is whether everything passed.
finish() { echo "$pass passed, $fail failed"; [ "$fail" = 0 ]; }

# sent_calls STORE: writes STORE.sent.db, whose table calls(judge_name, request, content,
# logprobs) holds the side-by-side and pointwise (grade) calls of STORE as `arbiter export` gives
# them back: the requests exactly as sent (the store keeps them compact, which the sqlite3 shell
# cannot read).
sent_calls() {
  "$ARB" export --db "$1" --format jsonl --output "$1.sent.jsonl" || return 1
  "$ARB" export --db "$1" --format pointwise --output "$1.sent_pw.jsonl" || return 1
  rm -f "$1.sent.db"
  python3 - "$1.sent.jsonl" "$1.sent.db" "$1.sent_pw.jsonl" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[2])
db.execute("create table calls (judge_name, request, content, logprobs)")
for path in (sys.argv[1], sys.argv[3]):  # side-by-side rows, then pointwise (grade) rows
    for line in open(path):
        r = json.loads(line)
        if path == sys.argv[3] and r.get("request") is None:
            continue  # a grade judgment without a call
        lp = r.get("logprobs")
        db.execute("insert into calls values (?, ?, ?, ?)", (r["judge"], r["request"], r["content"],
                   None if lp is None else json.dumps(lp, sort_keys=True)))
db.commit()
PY
}

# judgments STORE [FORMAT]: the judgments (or, with FORMAT transcripts, the transcripts) as
# `arbiter export` gives them, sorted, without what differs between two runs of the same calls
# (timings, attempts, row ids, time stamps). Uses $PY, else python3.
judgments() { "$ARB" export --db "$1" --format "${2:-jsonl}" | "${PY:-python3}" -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    for k in ("latency_ms", "attempts", "dialogue", "created_at", "judged_at"):
        o.pop(k, None)
    for t in o.get("turns", []):
        for k in ("latency_ms", "attempts", "call_id"):
            t.pop(k, None)
    print(json.dumps(o, sort_keys=True))' | sort; }

# wait_for_count STORE SQL N: waits (at most 30 s) until the count SQL reads from STORE, opened
# read-only, is above N; for tests that kill a run once it has stored something.
wait_for_count() {
  local c
  for _ in $(seq 300); do
    if [ -s "$1" ]; then
      c=$(sqlite3 -readonly "$1" "$2" 2>/dev/null || true)
      [ "${c:-0}" -gt "$3" ] 2>/dev/null && return 0
    fi
    sleep 0.1
  done
  return 0
}

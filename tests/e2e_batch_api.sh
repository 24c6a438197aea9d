#!/usr/bin/env bash
# End-to-end test of the OpenAI Batch API path (issue 16): `--batch submit|status|collect|wait`
# against the simulator's Batch API (POST /v1/files, POST /v1/batches, GET /v1/batches/ID,
# GET /v1/files/ID/content). Submit, kill -9 while waiting, resume from the ids in the store,
# collect with partial failures (error lines), resubmit the failed calls; a server whose
# batches expire after half their lines: the partial output is collected and the rest goes in
# later batches. Judgments end identical to a normal run's; the API key never reaches the store.
set -euo pipefail
ARB=${1:?usage: e2e_batch_api.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

start_sim --judge "sim-fair:skill=4" --seed 11 --batch-delay 1500 --batch-fail-every 25
export E2E_BATCH_KEY=sk-e2e-batch-secret-777
IN=(--items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large --baseline birch-medium --no-progress --judge-model sim-fair --api-key-env E2E_BATCH_KEY)
sbs() { "$ARB" sbs "${IN[@]}" --judge-url "$URL" "$@"; }
q() { sqlite3 "$1" "$2"; }
judgments() { "$ARB" export --db "$1" --format jsonl | "$PY" -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    for k in ("latency_ms", "attempts"):
        o.pop(k, None)
    print(json.dumps(o, sort_keys=True))' | sort; }
n_calls=$((n_items * 2))
n_fail=$((n_calls / 25))

sbs --db "$T/a.db" 2>/dev/null
sbs --db "$T/b.db" --batch submit 2>"$T/err"
check "submit creates one batch and sends no call" "grep -q '1 batches submitted' '$T/err' && [ \$(q '$T/b.db' 'select count(*) from batches') = 1 ] && [ \$(q '$T/b.db' 'select count(*) from calls') = 0 ] && [ \$(q '$T/b.db' 'select n_calls from batches') = $n_calls ]"
sbs --db "$T/b.db" --batch status 2>"$T/err"
check "status reports the running batch and judges nothing" "grep -q '1 batches open: 1 running' '$T/err' && [ \$(q '$T/b.db' 'select count(*) from pairwise') = 0 ]"
sbs --db "$T/b.db" --batch submit 2>"$T/err"
check "a second submit does not resubmit calls held by an open batch" "! grep -q 'batches submitted' '$T/err'"
check "still one batch" "[ \$(q '$T/b.db' 'select count(*) from batches') = 1 ]"
"$ARB" sbs "${IN[@]}" --judge-url "$URL" --db "$T/b.db" --batch wait --poll 0.05 2>/dev/null & waiter=$!
sleep 0.2
kill -9 $waiter; wait $waiter 2>/dev/null || true
check "killed while waiting: nothing collected yet" "[ \$(q '$T/b.db' 'select collected from batches') = 0 ] && [ \$(q '$T/b.db' 'select count(*) from calls') = 0 ]"
# collect (no waiting): once the batch ended, its replies and error lines are stored and judged
for _ in $(seq 100); do
  sbs --db "$T/b.db" --batch collect 2>"$T/err"
  [ "$(q "$T/b.db" 'select collected from batches')" = 1 ] && break
  sleep 0.1
done
check "a new process resumes from the store and collects, partial failures stored" "grep -q '1 batches collected: $((n_calls - n_fail)) replies stored, $n_fail failed' '$T/err' && [ \$(q '$T/b.db' 'select status || collected from batches') = completed1 ]"
check "the collected replies are judged in the same run" "grep -q '$((n_calls - n_fail)) stored before' '$T/err' && [ \$(q '$T/b.db' 'select count(*) from pairwise') = $((n_calls - n_fail)) ]"
check "failed lines are failed calls with the provider's reason" "[ \$(q '$T/b.db' \"select count(*) from calls where ok = 0 and error like 'batch error server_error%'\") = $n_fail ]"
check "collect says how many calls are still to come and that another submit sends them" "grep -q '$n_fail calls still to come: $n_fail queued, 0 wait' '$T/err' && grep -q 'another --batch submit sends them' '$T/err'"
sbs --db "$T/b.db" --batch submit 2>"$T/err"
check "the failed calls go in a new batch" "grep -q '1 batches submitted' '$T/err' && [ \$(q '$T/b.db' 'select n_calls from batches order by rowid desc limit 1') = $n_fail ]"
sbs --db "$T/b.db" --batch wait --poll 0.05 2>"$T/err"
check "the second batch completes the run" "grep -q 'collected: $n_fail replies stored, 0 failed' '$T/err' && grep -q 'nothing to queue' '$T/err' && grep -q '0 rounds of batches' '$T/err'"
check "Batch API judgments are identical to a normal run's" "[ \$(judgments '$T/b.db' | grep -c .) = $n_calls ] && cmp -s <(judgments '$T/a.db') <(judgments '$T/b.db')"
check "the API key is nowhere in the store" "! grep -qa 'sk-e2e-batch-secret' '$T/b.db'* && [ \$(q '$T/b.db' \"select count(*) from batches where api_key_env = 'E2E_BATCH_KEY'\") = 2 ]"

# ---- the batch price: --price-batch-discount (judges file: price.batch_discount) ------------
P=(--price-in 2 --price-out 8 --price-batch-discount 0.5)
sbs --db "$T/p-http.db" "${P[@]}" 2>/dev/null
sbs --db "$T/p-batch.db" "${P[@]}" --batch wait --poll 0.05 2>/dev/null
check "calls collected through the Batch API cost the batch price (half), HTTP calls the listed one" "$PY - '$T/p-http.db' '$T/p-batch.db' <<'PY'
import sqlite3, sys
def spend(db):
    return sqlite3.connect(db).execute('select count(*), sum(prompt_tokens), sum(completion_tokens), sum(cost_usd) from calls where ok = 1').fetchone()
a, b = spend(sys.argv[1]), spend(sys.argv[2])
assert a[:3] == b[:3] and a[0] > 0, (a, b)
assert abs(a[3] - (a[1] * 2 + a[2] * 8) / 1e6) < 1e-9, a
assert abs(b[3] - a[3] / 2) < 1e-12, (a, b)
PY"
sbs --db "$T/p-dry.db" "${P[@]}" --max-tokens 100 --dry-run 2>"$T/dry"
sbs --db "$T/p-dry.db" "${P[@]}" --max-tokens 100 --dry-run --batch submit 2>"$T/dry-batch"
cost_of() { sed -n 's/.*cost <= \$\([0-9.]*\).*/\1/p' "$1"; }
check "--dry-run --batch estimates at the batch price and says so" "[ -n \"\$(cost_of '$T/dry')\" ] && $PY -c \"import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); assert abs(b - a / 2) <= 1e-4, (a, b)\" \$(cost_of '$T/dry') \$(cost_of '$T/dry-batch') && grep -q 'batch price: 50% off' '$T/dry-batch' && ! grep -q 'batch price' '$T/dry'"
set +e
sbs --db "$T/p-bad.db" --price-batch-discount 0.5 2>"$T/err"; rc=$?
sbs --db "$T/p-bad.db" --price-in 1 --price-out 2 --price-batch-discount 2 2>"$T/err2"; rc2=$?
set -e
check "--price-batch-discount without a price, or above 1: exit 2" "[ $rc = 2 ] && grep -q 'needs both --price-in and --price-out' '$T/err' && [ $rc2 = 2 ] && grep -q -- '--price-batch-discount' '$T/err2'"

# ---- a provider whose batches expire after half their lines --------------------------------
"$ARB" sim-server --port 0 --port-file "$T/port2" --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --judge "sim-fair:skill=4" --seed 11 --batch-expire 2>"$T/sim2.log" & SIM2=$!
for _ in $(seq 100); do [ -s "$T/port2" ] && break; sleep 0.05; done
URL2="http://127.0.0.1:$(cat "$T/port2")/v1"
sbs2() { "$ARB" sbs "${IN[@]}" --judge-url "$URL2" --db "$T/c.db" "$@"; }
sbs2 --batch submit 2>/dev/null
for _ in $(seq 100); do
  sbs2 --batch collect 2>"$T/err"
  [ "$(q "$T/c.db" 'select collected from batches')" = 1 ] && break
  sleep 0.05
done
check "an expired batch: its partial output is collected, the rest stored as failed" "grep -q 'collected: $((n_calls / 2)) replies stored, $((n_calls / 2)) failed' '$T/err' && [ \$(q '$T/c.db' \"select status from batches\") = expired ] && [ \$(q '$T/c.db' \"select count(*) from calls where error like 'batch error batch_expired%'\") = $((n_calls / 2)) ]"
# --batch wait goes round after round: every expired batch's rest goes in the next one
sbs2 --batch wait --poll 0.05 2>"$T/err"
rounds=$(sed -n 's/.*batch: \([0-9]*\) rounds.*/\1/p' "$T/err")
check "one --batch wait sends the rest in later batches until every call is answered" "[ \$(q '$T/c.db' 'select count(*) from calls where ok = 1') = $n_calls ] && [ '${rounds:-0}' -gt 2 ] && grep -q 'nothing to queue' '$T/err' && [ \$(q '$T/c.db' 'select count(*) from batches where collected = 0') = 0 ]"
check "judgments after expiries are identical to a normal run's" "cmp -s <(judgments '$T/a.db') <(judgments '$T/c.db')"
kill $SIM2 2>/dev/null; wait $SIM2 2>/dev/null || true
finish

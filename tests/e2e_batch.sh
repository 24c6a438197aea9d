#!/usr/bin/env bash
# End-to-end test of batch files (issue 16): a judging command run with --batch export queues
# its missing calls and writes them as OpenAI batch input; a tiny offline engine
# (support/batch_engine.py, answering through the simulator like vLLM run-batch) writes the
# output lines, with injected error lines and HTTP 500s; `arbiter batch ingest` stores them;
# the next rounds judge the replies, queue the failed calls again and, for a debate, the turns
# that waited on earlier ones. The judgments end identical to a normal run's (export minus the
# timing fields). Also: re-ingest changes nothing, a bad results file stores nothing and names
# file:line and field, file splitting, usage errors.
set -euo pipefail
ARB=${1:?usage: e2e_batch.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
ENGINE="$SRC/tests/support/batch_engine.py"

start_sim --judge "sim-fair:skill=4" --judge "sim-yielder:skill=2,bias=0.5,conformity=1" --seed 11
cat > "$T/judges.yaml" <<EOF2
judges:
  - name: fair
    url: $URL
    model: sim-fair
    logprobs: true     # the debate's judge turns carry logprobs: a batch reply must keep them
  - name: yielder
    url: $URL
    model: sim-yielder
EOF2
IN=(--items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large --baseline birch-medium --no-progress)
# Priced, so the comparison with a normal run covers the cost a batch reply is stored with.
sbs() { "$ARB" sbs "${IN[@]}" --judge-url "$URL" --judge-model sim-fair --price-in 1.5 --price-out 6 "$@"; }
debate() { "$ARB" debate "${IN[@]}" --mode soft --agents "$T/judges.yaml:fair,yielder,fair" "$@"; }
q() { sqlite3 "$1" "$2"; }
n_calls=$((n_items * 2))

# ---- usage --------------------------------------------------------------------------------------
set +e
sbs --db "$T/u.db" --out "$T/x.jsonl" 2>"$T/err"; rc=$?
set -e
check "--out without --batch export exits 2, nothing sent" "[ $rc = 2 ] && grep -q -- '--out needs --batch export' '$T/err' && [ \$(q '$T/u.db' 'select count(*) from calls') = 0 ]"
set +e
sbs --db "$T/u.db" --batch later 2>"$T/err"; rc=$?
set -e
check "--batch with an unknown mode exits 2" "[ $rc = 2 ] && grep -q 'expected export, submit, status, collect or wait' '$T/err'"

# ---- sbs: export, engine with partial failures, ingest, next round --------------------------
sbs --db "$T/a.db" 2>/dev/null
sbs --db "$T/b.db" --batch export --out "$T/req.jsonl" 2>"$T/err"
check "export queues every call and sends none" "grep -q '$n_calls calls queued' '$T/err' && [ \$(grep -c . '$T/req.jsonl') = $n_calls ] && [ \$(q '$T/b.db' 'select count(*) from calls') = 0 ]"
check "request lines are OpenAI batch input with the call key as custom_id" "$PY - '$T/req.jsonl' '$T/b.db' <<'PY'
import json, sqlite3, sys
keys = {k for (k,) in sqlite3.connect(sys.argv[2]).execute('select lower(hex(key)) from batch_calls')}
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert set(o) == {'custom_id', 'method', 'url', 'body'}, o.keys()
    assert o['method'] == 'POST' and o['url'] == '/v1/chat/completions' and o['custom_id'] in keys
    assert o['body']['model'] == 'sim-fair'
PY"
"$PY" "$ENGINE" "$URL" "$T/req.jsonl" "$T/res.jsonl" 30
head -3 "$T/res.jsonl" > "$T/bad.jsonl"
echo '{"id": "x", "response": {"status_code": 200, "body": {}}}' >> "$T/bad.jsonl"
set +e
"$ARB" batch ingest --db "$T/b.db" "$T/bad.jsonl" 2>"$T/err"; rc=$?
set -e
check "a bad results line: exit 2, file:line: field, nothing stored" "[ $rc = 2 ] && grep -q 'bad.jsonl:4: field \"custom_id\"' '$T/err' && [ \$(q '$T/b.db' 'select count(*) from calls') = 0 ]"
echo '{"id": "x", "custom_id": "0123", "response": {"status_code": 200, "body": {}}}' > "$T/bad2.jsonl"
set +e
"$ARB" batch ingest --db "$T/b.db" "$T/bad2.jsonl" 2>"$T/err"; rc=$?
set -e
check "a results line for no queued call is refused" "[ $rc = 2 ] && grep -q 'bad2.jsonl:1: field \"custom_id\": no call' '$T/err'"
"$ARB" batch ingest --db "$T/b.db" "$T/res.jsonl" 2>"$T/err"
n_fail=$(( (n_calls / 30) * 2 - (n_calls % 30 == 0 ? 1 : 0) ))
check "ingest stores replies and failed calls as a run would" "grep -q \"$n_calls lines: $((n_calls - n_fail)) replies stored, $n_fail failed\" '$T/err' && [ \$(q '$T/b.db' 'select count(*) from calls where ok = 0') = $n_fail ]"
check "an error line keeps its reason, a 500 its status" "[ \$(q '$T/b.db' \"select count(*) from calls where error like 'batch error server_error: simulated failure%'\") -ge 1 ] && [ \$(q '$T/b.db' 'select count(*) from calls where http_status = 500') -ge 1 ]"
q "$T/b.db" 'select * from calls order by id' > "$T/calls1"
"$ARB" batch ingest --db "$T/b.db" "$T/res.jsonl" 2>"$T/err"
q "$T/b.db" 'select * from calls order by id' > "$T/calls2"
check "ingesting the same file again changes nothing" "cmp -s '$T/calls1' '$T/calls2' && grep -q '0 replies stored, 0 failed calls stored.*$n_calls stored before' '$T/err'"
sbs --db "$T/b.db" --batch export --out "$T/req2.jsonl" 2>"$T/err"
check "the next round judges the replies and queues the failed calls again" "grep -q '$((n_calls - n_fail)) stored before' '$T/err' && grep -q '$n_fail calls queued' '$T/err' && [ \$(grep -c . '$T/req2.jsonl') = $n_fail ]"
"$ARB" batch export --db "$T/b.db" --out "$T/again.jsonl" 2>"$T/err"
check "batch export writes the same pending calls from the store" "cmp -s '$T/req2.jsonl' '$T/again.jsonl'"
"$PY" "$ENGINE" "$URL" "$T/req2.jsonl" "$T/res2.jsonl"
"$ARB" batch ingest --db "$T/b.db" "$T/res2.jsonl" 2>/dev/null
sbs --db "$T/b.db" --batch export --out "$T/req3.jsonl" 2>"$T/err"
check "the last round queues nothing and writes an empty file" "grep -q 'nothing to queue' '$T/err' && [ ! -s '$T/req3.jsonl' ]"
check "batch judgments are identical to a normal run's" "[ \$(judgments '$T/b.db' | grep -c .) = $n_calls ] && cmp -s <(judgments '$T/a.db') <(judgments '$T/b.db')"

# ---- the batch price: a judge's batch_discount applies to the replies batch ingest stores ----
sbs --db "$T/bp.db" --price-batch-discount 0.5 --batch export --out "$T/bp.jsonl" 2>/dev/null
"$PY" "$ENGINE" "$URL" "$T/bp.jsonl" "$T/bp-res.jsonl"
"$ARB" batch ingest --db "$T/bp.db" "$T/bp-res.jsonl" 2>/dev/null
check "batch ingest costs the replies at the batch price (half the HTTP run's cost, same tokens)" "$PY - '$T/a.db' '$T/bp.db' <<'PY'
import sqlite3, sys
def spend(db):
    return sqlite3.connect(db).execute('select count(*), sum(prompt_tokens), sum(completion_tokens), sum(cost_usd) from calls where ok = 1').fetchone()
a, b = spend(sys.argv[1]), spend(sys.argv[2])
assert a[:3] == b[:3] and a[0] > 0, (a, b)
assert abs(b[3] - a[3] / 2) < 1e-12, (a, b)
PY"

# ---- splitting -----------------------------------------------------------------------------------
"$ARB" batch export --db "$T/u.db" --out "$T/none.jsonl" 2>/dev/null || true
sbs --db "$T/c.db" --batch export 2>/dev/null
"$ARB" batch export --db "$T/c.db" --out "$T/part.jsonl" --max-lines 30 2>"$T/err"
parts=$(( (n_calls + 29) / 30 ))
check "files split at --max-lines: part.jsonl, part.2.jsonl ..." "grep -q '$n_calls pending calls written in $parts files' '$T/err' && [ \$(cat '$T/part.jsonl' '$T/part.2.jsonl' | grep -c .) = 60 ] && [ \$(cat '$T'/part*.jsonl | sort -u | grep -c .) = $n_calls ]"

# ---- debate: dependent turns go in later batches --------------------------------------------
debate --db "$T/e.db" 2>/dev/null
round=0
while :; do
  round=$((round + 1))
  debate --db "$T/d.db" --batch export --out "$T/d$round.jsonl" 2>"$T/err.$round"
  [ -s "$T/d$round.jsonl" ] || break
  "$PY" "$ENGINE" "$URL" "$T/d$round.jsonl" "$T/dres$round.jsonl"
  "$ARB" batch ingest --db "$T/d.db" "$T/dres$round.jsonl" 2>/dev/null
  [ $round -lt 6 ] || break
done
check "debate round 1 queues agent 1's calls, the other turns wait" "grep -q '$n_calls calls queued, $((n_calls * 2)) wait' '$T/err.1'"
check "the judge agent's turn goes in the third batch" "grep -q '$n_calls calls queued, 0 wait' '$T/err.3' && [ $round = 4 ]"
check "batch debate verdicts and transcripts are identical to a normal run's" "cmp -s <(judgments '$T/e.db') <(judgments '$T/d.db') && cmp -s <(judgments '$T/e.db' transcripts) <(judgments '$T/d.db' transcripts)"
finish

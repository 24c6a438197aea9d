#!/usr/bin/env bash
# End-to-end: a side-by-side run killed with SIGKILL while it writes compact requests (schema
# 11) resumes exactly: no judgment lost or repeated, every stored request reads back (export)
# exactly as an uninterrupted run sent it, the store is intact, and the rerun sends nothing.
ARB=${1:?usage: e2e_compact_resume.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
start_sim --judge "sim-a:skill=4,bias=0.5,latency=30" --seed 5
N=$((n_items * 2))
sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --no-progress "$@"; }
# requests DB: "item order request" lines of the export, sorted (what was sent, in a fixed order)
requests() {
  "$ARB" export --db "$1" --format jsonl --output "$1.jsonl"
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["item"], r["order"], json.dumps(r["request"]))' "$1.jsonl" | sort
}

sbs --db "$T/whole.db" --jobs 8 2>/dev/null
(exec "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --db "$T/k.db" --no-progress \
  --jobs 2 2>/dev/null) &
RUN_PID=$!
wait_for_count "$T/k.db" "select count(*) from calls where typeof(request) = 'blob'" 10
kill -9 $RUN_PID 2>/dev/null || true
wait $RUN_PID 2>/dev/null || true
before=$(sqlite3 "$T/k.db" "select count(*) from calls where ok = 1")
check "compact calls were committed before the kill ($before of $N)" "[ $before -gt 10 ] && [ $before -lt $N ]"
check "no call holds a placeholder after the kill" "[ \$(sqlite3 '$T/k.db' \"select count(*) from calls where length(request) = 0\") = 0 ]"
check "store intact after the kill" "[ \"\$(sqlite3 '$T/k.db' 'pragma integrity_check')\" = ok ]"
sbs --db "$T/k.db" --jobs 8 2>"$T/run2"
check "the resumed run reuses the $before stored calls" "grep -q '$N judge calls: $before stored before' '$T/run2'"
check "every judgment stored once" "[ \$(sqlite3 '$T/k.db' 'select count(*) from pairwise') = $N ]"
check "every call stored once" "[ \$(sqlite3 '$T/k.db' 'select count(*) from calls') = $N ]"
check "every request is compact" "[ \$(sqlite3 '$T/k.db' \"select count(*) from calls where typeof(request) = 'blob'\") = $N ]"
requests "$T/whole.db" >"$T/whole.req"
requests "$T/k.db" >"$T/k.req"
check "export gives back the requests an uninterrupted run sent" "[ \$(wc -l <'$T/k.req') = $N ] && cmp -s '$T/whole.req' '$T/k.req'"
sbs --db "$T/k.db" 2>"$T/run3"
check "a rerun sends 0 requests" "grep -q ' 0 sent' '$T/run3'"
check "no -wal left after the run (checkpointed at close)" "[ ! -s '$T/k.db-wal' ]"
finish

#!/usr/bin/env bash
# End-to-end test of the arbiter CLI over real HTTP against the simulated judge server:
# bad input is refused before any request, a run judges everything, a rerun sends nothing,
# a run killed with SIGKILL resumes without losing or repeating finished calls, audit and
# export work, and the API key never reaches the store.
set -euo pipefail
ARB=${1:?usage: e2e_cli.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

start_sim --judge "sim-a:skill=4,bias=0.5,latency=50" --seed 3
check "sim-server labels itself a simulator" "grep -q SIMULATED '$T/sim.log'"

sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --db "$T/eval.db" --no-progress "$@"; }

# Bad input: clear file:line message, exit 2, nothing sent, nothing stored.
printf '{"id":"x1","question":"q"}\n{"id":"x1","question":"again"}\n' > "$T/dup.jsonl"
set +e
"$ARB" sbs --items "$T/dup.jsonl" --answers "$T/answers.jsonl" --candidate a --baseline b \
  --judge-url "$URL" --judge-model sim-a --db "$T/bad.db" 2>"$T/err"; rc=$?
set -e
check "duplicate id exits 2" "[ $rc = 2 ]"
check "duplicate id names file:line" "grep -q 'dup.jsonl:2:' '$T/err'"
printf '{"id":"x1","question":"q\xff"}\n' > "$T/utf.jsonl"
set +e; "$ARB" sbs --items "$T/utf.jsonl" --answers "$T/answers.jsonl" --candidate a --baseline b \
  --judge-url "$URL" --judge-model sim-a --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "invalid UTF-8 exits 2 with file:line" "[ $rc = 2 ] && grep -q 'utf.jsonl:1:' '$T/err'"
set +e; sbs --options 5 2>"$T/err"; rc=$?; set -e
check "bad --options exits 2" "[ $rc = 2 ]"
check "a bad number names the command" "grep -q '^arbiter sbs: --options expects a whole number' '$T/err'"
set +e; "$ARB" rank --db "$T/none.db" --bootstrap many 2>"$T/err"; rc=$?; set -e
check "a bad number in a shared option names the command" "[ $rc = 2 ] && grep -q '^arbiter rank: --bootstrap expects' '$T/err'"
# The reading commands share one option parser: each refuses what it does not take, by name.
for cmd in audit agreement factors discussion-stats export report "labels summary"; do
  set +e; $ARB $cmd --db "$T/none.db" --no-such-option 2>"$T/err"; rc=$?; set -e
  check "$cmd refuses an unknown option (exit 2, named)" "[ $rc = 2 ] && grep -q 'arbiter ${cmd%% *}: unknown or incomplete option \"--no-such-option\"' '$T/err'"
done
set +e; "$ARB" audit --json 2>"$T/err"; rc=$?; set -e
check "a reading command without --db says so" "[ $rc = 2 ] && grep -q '^arbiter audit: missing --db' '$T/err'"
set +e; "$ARB" report --db "$T/none.db" --bootstrap 5 --level 0.9 2>"$T/err"; rc=$?; set -e
check "report takes no --level" "[ $rc = 2 ] && grep -q 'option \"--level\"' '$T/err'"
set +e; sbs --candidate nobody 2>"$T/err"; rc=$?; set -e
check "unknown candidate exits 2" "[ $rc = 2 ] && grep -q nobody '$T/err'"

# Dry run: the plan, nothing sent.
sbs --dry-run 2>"$T/plan"
check "dry run plans $((n_items*2)) calls, 0 stored" "grep -q '$((n_items*2)) judge calls, 0 already stored' '$T/plan'"

# A run killed with SIGKILL mid-way, then resumed.
export E2E_SECRET_KEY="sk-e2e-secret-$$"
# exec, so that $! is arbiter itself and not a subshell that would survive as its parent.
(exec "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --db "$T/eval.db" --no-progress \
  --jobs 2 --api-key-env E2E_SECRET_KEY 2>/dev/null) &
RUN_PID=$!
# Kill once the first calls are committed (a fixed sleep was too short under ASan on a loaded
# machine).
wait_for_count "$T/eval.db" "select count(*) from calls where ok=1" 0
kill -9 $RUN_PID 2>/dev/null || true
wait $RUN_PID 2>/dev/null || true
before=$(sqlite3 "$T/eval.db" "select count(*) from calls where ok=1")
check "some calls were committed before the kill ($before)" "[ $before -gt 0 ] && [ $before -lt $((n_items*2)) ]"
check "database intact after kill" "[ \"\$(sqlite3 '$T/eval.db' 'pragma integrity_check')\" = ok ]"
sbs --jobs 8 --api-key-env E2E_SECRET_KEY 2>"$T/run2"
check "resumed run reuses the $before stored calls" "grep -q '$((n_items*2)) judge calls: $before stored before' '$T/run2'"
check "every judgment stored exactly once" "[ \$(sqlite3 '$T/eval.db' \"select count(*) from pairwise\") = $((n_items*2)) ]"
check "calls stored exactly once" "[ \$(sqlite3 '$T/eval.db' 'select count(*) from calls') = $((n_items*2)) ]"

# A rerun sends nothing.
sbs 2>"$T/run3"
check "rerun sends 0 requests" "grep -q ' 0 sent' '$T/run3'"

# The key never reaches the store.
check "API key not in the database" "! grep -qa \"\$E2E_SECRET_KEY\" '$T/eval.db' '$T/eval.db-wal' 2>/dev/null"

# Audit as text and JSON.
"$ARB" audit --db "$T/eval.db" > "$T/audit.txt"
check "audit text names the comparison" "grep -q 'atlas-large' '$T/audit.txt' && grep -q 'PBias@AB' '$T/audit.txt'"
"$ARB" audit --db "$T/eval.db" --json > "$T/audit.json"
check "audit JSON has the documented keys" "python3 - '$T/audit.json' <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
c=d['rows'][0]
for k in ['judge','candidate','baseline','n_items','verdicts','pbias_ab','con_abcd','pcon_ab','error_rate']:
    assert k in c, k
assert c['judge']=='sim-a' and c['candidate']=='atlas-large' and c['baseline']=='cedar-small'
assert c['n_items']==$n_items
for r in ['run0','run1','mean']:
    v=c['verdicts'][r]; assert abs(sum(v[x] for x in 'abcde')-1)<1e-9
# injected primacy bias 0.5 must show as a positive PBias@AB
assert c['pbias_ab']>0, c['pbias_ab']
# the candidate is much better: a dominates b
assert c['verdicts']['mean']['a']>c['verdicts']['mean']['b']
PY"

# Audit by judge with bootstrap intervals; a bad --by is a usage error.
"$ARB" audit --db "$T/eval.db" --by judge --bootstrap 200 --seed 5 --json > "$T/audit_boot.json"
check "audit --by judge --bootstrap has intervals" "python3 - '$T/audit_boot.json' <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
assert d['by']==['judge'] and d['bootstrap']['resamples']==200 and d['bootstrap']['seed']==5
c=d['rows'][0]
assert c['candidate'] is None and c['task'] is None
for k in ['pc','pf','owr','quality_gap','pbias_ab']:
    lo,hi=c[k+'_ci']; assert lo<=c[k]<=hi, (k,lo,c[k],hi)
assert c['rs'] is None and c['rs_ci'] is None  # one repetition: nothing to measure
assert c['accuracy'] is None and c['human']['n_labelled_items']==0
PY"
"$ARB" audit --db "$T/eval.db" --by judge --bootstrap 200 --seed 5 --json > "$T/audit_boot2.json"
check "the same seed gives the same intervals" "cmp -s '$T/audit_boot.json' '$T/audit_boot2.json'"
set +e; "$ARB" audit --db "$T/eval.db" --by colour 2>"$T/by.err"; rc=$?; set -e
check "audit --by with an unknown key exits 2 and says what is allowed" "[ $rc = 2 ] && grep -q 'judge, task, candidate' '$T/by.err'"

# Export.
"$ARB" export --db "$T/eval.db" --format jsonl > "$T/out.jsonl"
check "export jsonl has one line per judgment" "[ \$(grep -c . '$T/out.jsonl') = $((n_items*2)) ]"
"$ARB" export --db "$T/eval.db" --format csv > "$T/out.csv"
check "export csv parses with a header" "python3 -c \"import csv,sys; r=list(csv.DictReader(open('$T/out.csv'))); assert len(r)==$((n_items*2)); assert 'model_verdict' in r[0]\""
set +e; "$ARB" export --db "$T/eval.db" --format xml 2>/dev/null; rc=$?; set -e
check "unknown export format exits 2" "[ $rc = 2 ]"

finish

#!/usr/bin/env bash
# End-to-end test of `arbiter import judgments` (issue 15): judgments made by `arbiter sbs`
# against the simulated judge server (two judges, three candidates, two templates, two option
# modes, two repetitions), exported with `arbiter export --format jsonl` and `--format csv`,
# imported into fresh databases, give byte-identical `audit --json` (also --by and with a
# bootstrap), `agreement --json` and `factors --json`: nothing is stripped. Then the CLI's
# bad-input cases (exit 2, nothing stored), conflicts with arbiter's own judgments and with
# another source, and a re-import that replaces a source.
set -euo pipefail
ARB=${1:?usage: e2e_import_judgments.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

start_sim --judge "sim-a:skill=3,bias=0.6,tie=0.3" --judge "sim-b:skill=2,bias=-0.4" --seed 11

sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --baseline cedar-small \
  --judge-url "$URL" --no-progress --db "$T/orig.db" "$@" 2>>"$T/sbs.log"; }
for cand in atlas-large birch-medium; do
  sbs --candidate "$cand" --judge-model sim-a --reps 2
  sbs --candidate "$cand" --judge-model sim-b --prompt II-reason --options 3
done
sbs --candidate drift-tiny --judge-model sim-a --prompt II --options 2
n=$(sqlite3 "$T/orig.db" 'select count(*) from pairwise')
check "sbs stored every judgment" "[ $n = $((n_items * (2*2*2 + 2*2 + 2))) ]"

# ---- round trips ----------------------------------------------------------------------------------
"$ARB" export --db "$T/orig.db" --format jsonl > "$T/x.jsonl"
"$ARB" export --db "$T/orig.db" --format csv > "$T/x.csv"
check "export has the added keys" "python3 - '$T/x.jsonl' <<'PY'
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
added=['request','question','candidate_answer','baseline_answer','category','language','source','strength']
assert list(rows[0])[18:26]==added, list(rows[0])
assert all(r['source'] is None and r['strength'] is None for r in rows)
assert all(json.loads(r['request'])['messages'] for r in rows)
assert all(r['question'] and r['candidate_answer'] and r['baseline_answer'] for r in rows)
PY"
"$ARB" import judgments "$T/x.jsonl" --db "$T/new.db" 2>"$T/imp.err"
check "import says what it stored" \
  "grep -q \"imported $n judgments and 0 grades from $T/x.jsonl as source judgments:x.jsonl: $n battles for the rankings, $n_items items added, 0 skipped\" '$T/imp.err'"
"$ARB" import judgments "$T/x.csv" --db "$T/csv.db" 2>/dev/null
check "the CSV import stores the same rows" \
  "[ \"\$(sqlite3 '$T/new.db' 'select protocol, judge_name, item_id, candidate, baseline, template_name, options, ord, rep, position_verdict, model_verdict from pairwise order by 1,2,3,4,5,6,7,8,9')\" = \"\$(sqlite3 '$T/csv.db' 'select protocol, judge_name, item_id, candidate, baseline, template_name, options, ord, rep, position_verdict, model_verdict from pairwise order by 1,2,3,4,5,6,7,8,9')\" ]"
check "items keep their benchmark order" \
  "[ \"\$(sqlite3 '$T/orig.db' 'select id, seq, question, category, language from items order by seq')\" = \"\$(sqlite3 '$T/new.db' 'select id, seq, question, category, language from items order by seq')\" ]"
for db in new csv; do
  for args in "" "--by task" "--by judge --bootstrap 50 --seed 5"; do
    "$ARB" audit --db "$T/orig.db" --json $args > "$T/a_orig.json"
    "$ARB" audit --db "$T/$db.db" --json $args > "$T/a_$db.json"
    check "audit --json $args: byte-identical after the $db round trip" \
      "cmp -s '$T/a_orig.json' '$T/a_$db.json'"
  done
  for cmd in agreement factors; do
    "$ARB" $cmd --db "$T/orig.db" --json > "$T/c_orig.json"
    "$ARB" $cmd --db "$T/$db.db" --json > "$T/c_$db.json"
    check "$cmd --json: byte-identical after the $db round trip" "cmp -s '$T/c_orig.json' '$T/c_$db.json'"
  done
done
"$ARB" audit --db "$T/orig.db" --json > "$T/a_orig.json"
check "the audit compared has every group, with PC and all four lengths" "python3 - '$T/a_orig.json' <<'PY'
import json,sys
rows=json.load(open(sys.argv[1]))['rows']
assert len(rows)==5, len(rows)
for r in rows:
    assert r['pc'] is not None
    assert all(r['lengths'][k]['mean'] for k in ('question','candidate','baseline','prompt')), r['lengths']
PY"
"$ARB" export --db "$T/new.db" --format jsonl > "$T/y.jsonl"
check "a second export differs only in source (tokens, latency, attempts, model travel too)" "python3 - '$T/x.jsonl' '$T/y.jsonl' <<'PY'
import json,sys
a=[json.loads(l) for l in open(sys.argv[1])]
b=[json.loads(l) for l in open(sys.argv[2])]
assert len(a)==len(b)
for x,y in zip(a,b):
    assert y.pop('source')=='judgments:x.jsonl'
    x.pop('source')
    assert x==y, [k for k in x if x[k]!=y.get(k)]
PY"
check "imported judgments also give battles" \
  "[ \$(sqlite3 '$T/new.db' \"select count(*) from battles where source = 'judgments:x.jsonl'\") = $n ]"

# ---- conflicts and bad input: exit 2, nothing stored ------------------------------------------------
imp() { set +e; "$ARB" import judgments "$@" 2>"$T/err"; rc=$?; set -e; }
imp "$T/x.jsonl" --db "$T/orig.db"
check "a judgment arbiter made is refused (exit 2, file:line)" \
  "[ $rc = 2 ] && grep -q \"x.jsonl:1: judge \\\"sim-a\\\" on item \\\"demo-001\\\" (atlas-large shown first, cedar-small second, template II-reason, options 4, rep 0): already judged by arbiter\" '$T/err' && grep -q 'nothing was stored' '$T/err'"
imp "$T/x.jsonl" --db "$T/new.db" --source other
check "another source's judgment is refused" \
  "[ $rc = 2 ] && grep -q 'already imported from source \"judgments:x.jsonl\"' '$T/err'"
check "nothing of the refused import was stored" \
  "[ \$(sqlite3 '$T/new.db' 'select count(*) from judgment_sources') = 1 ] && [ \$(sqlite3 '$T/new.db' 'select count(*) from pairwise') = $n ]"
bad() { # NAME CONTENT MESSAGE: the file is refused with MESSAGE, exit 2, no database left behind
  printf '%b' "$2" > "$T/$1"
  imp "$T/$1" --db "$T/bad.db"
  check "$1: refused with exit 2: $3" "[ $rc = 2 ] && grep -qF -- '$3' '$T/err' && [ ! -e '$T/bad.db' ]"
}
J='"judge":"j","item":"q1","candidate":"c","baseline":"b"'
bad missing.jsonl "{$J,\"verdict\":\"A\"}\n" 'missing.jsonl:1: field "order": expected 0 (candidate shown first) or 1 (baseline shown first), got nothing'
bad both.jsonl "{$J,\"order\":0,\"verdict\":\"A\",\"winner\":\"tie\"}\n" 'both.jsonl:1: field "winner": expected exactly one of verdict'
bad neither.jsonl "{$J,\"order\":0}\n" 'neither.jsonl:1: field "verdict": expected exactly one of verdict'
bad order.jsonl "{$J,\"order\":2,\"verdict\":\"A\"}\n" 'order.jsonl:1: field "order": expected 0 (candidate shown first) or 1 (baseline shown first), got 2'
bad options.jsonl "{$J,\"order\":0,\"verdict\":\"A\",\"options\":1}\n" 'options.jsonl:1: field "options": expected 2, 3 or 4 (METHODS 2.1), got 1'
bad allowed.jsonl "{$J,\"order\":0,\"verdict\":\"D\",\"options\":3}\n" 'allowed.jsonl:1: field "verdict": expected a verdict possible with options 3 (A, B, C or E), got "D"'
bad dup.jsonl "{$J,\"order\":0,\"verdict\":\"A\"}\n{$J,\"order\":0,\"verdict\":\"B\"}\n" 'dup.jsonl:2: judge "j" judged item "q1" (c shown first, b second, rep 0) already at'
bad header.csv 'judge,item,candidate,verdict,order\nj,q1,c,A,0\n' 'header.csv:1: header: missing column "baseline"'
bad short.csv 'judge,item,candidate,baseline,order,verdict\nj,q1,c,b,0,A\nj,q2,c,b\n' 'short.csv:3: expected 6 fields as in the header, got 4'
printf '{"judge":"j","item":"demo-001","candidate":"atlas-large","baseline":"cedar-small","order":0,"verdict":"A","rep":7,"candidate_answer":"not what it said"}\n' > "$T/answer.jsonl"
imp "$T/answer.jsonl" --db "$T/orig.db"
check "a different answer text is refused (exit 2, file:line)" \
  "[ $rc = 2 ] && grep -q 'answer.jsonl:1: field \"candidate_answer\": the store already has a different answer of model \"atlas-large\" to item \"demo-001\"' '$T/err'"

# ---- re-import replaces -----------------------------------------------------------------------------
head -n 5 "$T/x.jsonl" > "$T/x5.jsonl"
"$ARB" import judgments "$T/x5.jsonl" --db "$T/new.db" --source judgments:x.jsonl 2>"$T/err"
check "a re-import with fewer lines replaces the source" \
  "[ \$(sqlite3 '$T/new.db' 'select count(*) from pairwise') = 5 ] && [ \$(sqlite3 '$T/new.db' 'select count(*) from battles') = 5 ] && [ \$(sqlite3 '$T/new.db' 'select count(*) from calls') = 5 ] && [ \$(sqlite3 '$T/new.db' 'select n_judgments from judgment_sources') = 5 ] && grep -q ', 0 items added' '$T/err'"
"$ARB" import judgments "$T/x.jsonl" --db "$T/new.db" --source judgments:x.jsonl 2>/dev/null
"$ARB" audit --db "$T/new.db" --json > "$T/a_again.json"
"$ARB" audit --db "$T/orig.db" --json > "$T/a_orig.json"
check "importing the whole file again gives the original audit back" "cmp -s '$T/a_orig.json' '$T/a_again.json'"

finish

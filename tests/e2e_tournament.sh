#!/usr/bin/env bash
# End-to-end test of `arbiter tournament` against the simulated judge server on the demo
# benchmark (40 items, 4 models: 6 pairs) with a judges file of two simulated judges: a bad
# judges file is refused with path:line:column and exit 2, the dry-run plan counts
# items x pairs x 2 orders x judges (and less with --exclude-self, --models, --random-k), a run
# stores one judgment per call and one battle per valid verdict (the E judgments counted per
# pair in the summary, the store and the ranking), a rerun sends nothing, the API
# key never reaches the store, and `arbiter rank` (when present) ranks the stored battles.
# Imported judgments of protocol tournament, re-imported with other verdicts, are in the battles
# after a rerun that sends nothing.
set -euo pipefail
ARB=${1:?usage: e2e_tournament.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"

start_sim --judge "sim-a:skill=4,bias=0.5,tie=0.3,latency=0" \
  --judge "sim-b:skill=2,bias=-0.3,tie=0.3,invalid=0.05,latency=0" --seed 7
n_pairs=6
cat > "$T/judges.yaml" <<EOF
# two simulated judges; judge-a is the contestant atlas-large (for --exclude-self)
judges:
  - name: judge-a
    url: $URL
    model: sim-a
    contestant: atlas-large
    api_key_env: E2E_TOURNAMENT_KEY
  - name: judge-b
    url: $URL
    model: sim-b
    temperature: 0
EOF
tour() { "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --judges "$T/judges.yaml" --db "$DB" --no-progress "$@"; }

# ---- help and usage ---------------------------------------------------------------------------
"$ARB" tournament --help > "$T/help"
check "tournament --help describes the judges file" "grep -q 'api_key_env' '$T/help' && grep -q -- '--exclude-self' '$T/help'"
"$ARB" --help > "$T/main_help"
check "arbiter --help lists tournament" "grep -q '^  tournament' '$T/main_help'"
set +e; "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" --db "$DB" 2>"$T/err"; rc=$?; set -e
check "missing --judges exits 2" "[ $rc = 2 ] && grep -q 'missing --judges' '$T/err'"
set +e; tour --random-k 0 2>"$T/err"; rc=$?; set -e
check "--random-k 0 exits 2" "[ $rc = 2 ]"
set +e; tour --models atlas-large,,cedar-small 2>"$T/err"; rc=$?; set -e
check "an empty name in --models exits 2" "[ $rc = 2 ] && grep -q 'empty model name' '$T/err'"
set +e; tour --models atlas-large,nobody 2>"$T/err"; rc=$?; set -e
check "an unknown model exits 2 and names it" "[ $rc = 2 ] && grep -q '\"nobody\"' '$T/err'"

# ---- a bad judges file: path:line:column, exit 2, nothing sent ----------------------------------
printf 'judges:\n  - url: %s\n    model: sim-a\n    tempreature: 0\n' "$URL" > "$T/bad.yaml"
set +e; "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --judges "$T/bad.yaml" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "unknown judge field exits 2 with path:line:column" "[ $rc = 2 ] && grep -q 'bad.yaml:4:5: judge 1: unknown field \"tempreature\"' '$T/err'"
check "nothing was sent for the bad file" "[ ! -e '$T/bad.db' ] || [ \$(sqlite3 '$T/bad.db' 'select count(*) from calls') = 0 ]"

# ---- dry run: the plan ---------------------------------------------------------------------------
calls=$((n_items * n_pairs * 2 * 2))
tour --dry-run 2>"$T/plan"
check "dry run plans $calls calls, 0 stored" "grep -q 'tournament plan: $calls judge calls, 0 already stored' '$T/plan'"
check "dry run stores nothing" "[ ! -e '$DB' ] || [ \$(sqlite3 '$DB' 'select count(*) from pairwise') = 0 ]"

# ---- the run ----------------------------------------------------------------------------------------
export E2E_TOURNAMENT_KEY="sk-e2e-tournament-$$"
tour --jobs 16 2>"$T/run1"
check "run sends $calls calls" "grep -q 'tournament: $calls judge calls: 0 stored before, $calls sent ($calls ok, 0 failed)' '$T/run1'"
judged=$(sqlite3 "$DB" "select count(*) from pairwise where protocol = 'tournament'")
valid=$(sqlite3 "$DB" "select count(*) from pairwise where protocol = 'tournament' and position_verdict in ('A','B','C')")
check "one judgment per call" "[ $judged = $calls ]"
check "some verdicts are E (judge-b invalid=0.05) and give no battle" "[ $valid -lt $calls ]"
check "the summary counts the E judgments per pair ($((calls - valid)) in all)" "grep -q 'left out of the battles: $((calls - valid)) judgment' '$T/run1' && grep -qE '^  [a-z-]+ vs [a-z-]+: [0-9]+$' '$T/run1'"
check "the E judgments are stored per judge and pair" "[ \$(sqlite3 '$DB' \"select sum(n) from battles_left_out where source='tournament'\") = $((calls - valid)) ]"
check "stored one battle per valid verdict ($valid)" "grep -q 'stored $valid battles (source tournament)' '$T/run1' && [ \$(sqlite3 '$DB' \"select count(*) from battles where source='tournament'\") = $valid ]"
check "battles are oriented: i shown first" "[ \$(sqlite3 '$DB' \"select count(*) from battles b join pairwise p on p.protocol='tournament' and p.judge_name=b.reviewer and p.item_id=b.q and p.position_verdict in ('A','B','C') and b.i = case p.ord when 0 then p.candidate else p.baseline end and b.j = case p.ord when 0 then p.baseline else p.candidate end and b.s = case p.position_verdict when 'A' then -1 when 'B' then 1 else 0 end\") = $valid ]"
check "API key not in the database" "! grep -qa \"\$E2E_TOURNAMENT_KEY\" '$DB' '$DB-wal' 2>/dev/null"
check "the run is recorded with its judges" "[ \$(sqlite3 '$DB' \"select json_array_length(params, '\$.judges') from runs where protocol='tournament'\") = 2 ]"

# ---- a rerun sends nothing; other plans reuse what is stored --------------------------------------
tour 2>"$T/run2"
check "rerun sends 0 requests" "grep -q '$calls judge calls: $calls stored before, 0 sent' '$T/run2'"
check "rerun keeps one battle per judgment" "[ \$(sqlite3 '$DB' \"select count(*) from battles\") = $valid ]"
excl=$((n_items * 3 * 2 + n_items * n_pairs * 2))
tour --exclude-self --dry-run 2>"$T/plan2"
check "--exclude-self plans $excl calls, all stored" "grep -q 'tournament plan: $excl judge calls, $excl already stored' '$T/plan2'"
two=$((n_items * 1 * 2 * 2))
tour --models atlas-large,cedar-small --dry-run 2>"$T/plan3"
check "--models A,B plans $two calls, all stored" "grep -q 'tournament plan: $two judge calls, $two already stored' '$T/plan3'"
onek=$((n_items * n_pairs * 2))
tour --random-k 1 --seed 3 --dry-run 2>"$T/plan4"
check "--random-k 1 plans $onek calls, all stored" "grep -q 'tournament plan: $onek judge calls, $onek already stored' '$T/plan4'"
tour --random-k 1 --seed 3 --dry-run 2>"$T/plan5"
check "--random-k plans the same calls again" "cmp -s '$T/plan4' '$T/plan5'"

# ---- ranking the battles ---------------------------------------------------------------------------
if "$ARB" rank --help >/dev/null 2>&1; then
  "$ARB" rank --db "$DB" --method winrate --json > "$T/rank.json"
  check "rank --method winrate ranks the four demo models" "python3 - '$T/rank.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def models(x):
    if isinstance(x, dict):
        if 'model' in x and isinstance(x['model'], str): yield x['model']
        for v in x.values(): yield from models(v)
    elif isinstance(x, list):
        for v in x: yield from models(v)
assert {'atlas-large', 'birch-medium', 'cedar-small', 'drift-tiny'} <= set(models(d)), d
PY"
  check "rank --json counts the left-out E judgments per pair" "python3 -c \"import json; d = json.load(open('$T/rank.json')); assert d['n_left_out_e'] == $((calls - valid)) == sum(x['n'] for x in d['left_out_e']), d['left_out_e']\""
  "$ARB" rank --db "$DB" > "$T/rank.txt"
  check "rank text says how many E judgments it left out" "grep -q 'left out: $((calls - valid)) judgment' '$T/rank.txt'"
else
  echo "skip - arbiter rank is not available in this build"
fi

# ---- judgments of protocol tournament imported, then re-imported changed ---------------------------
# The battles of source tournament are rebuilt from every stored tournament judgment, imported
# ones too. A re-import with other verdicts keeps the number of judgments: a rerun that judges
# nothing must still rebuild the battles (it kept the old verdicts).
cp "$DB" "$T/imp.db"
for v in A B; do
  head -3 "$T/items.jsonl" | python3 -c "
import json, sys
for l in sys.stdin:
    print(json.dumps({'item': json.loads(l)['id'], 'judge': 'outside', 'candidate': 'atlas-large',
                      'baseline': 'cedar-small', 'order': 0, 'verdict': '$v',
                      'protocol': 'tournament', 'options': 3}))" > "$T/outside.jsonl"
  "$ARB" import judgments "$T/outside.jsonl" --db "$T/imp.db" --source outside 2>/dev/null
  "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
    --judges "$T/judges.yaml" --db "$T/imp.db" --no-progress 2>"$T/run_imp"
  s=$([ $v = A ] && echo -1 || echo 1)
  check "battles of imported verdicts $v after a rerun that sent nothing" \
    "grep -q ', 0 sent' '$T/run_imp' && [ \"\$(sqlite3 '$T/imp.db' \"select count(*) || ' ' || sum(s = $s)
       from battles where source = 'tournament' and reviewer = 'outside'\")\" = '3 3' ]"
done

finish

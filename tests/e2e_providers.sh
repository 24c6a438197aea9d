#!/usr/bin/env bash
# End-to-end tests of judging against real-provider features (issue 16) over HTTP with the
# simulated judge server on the demo benchmark (40 items):
#   - `arbiter sbs --judges FILE:NAME[,NAME...]`: the judges file of `tournament` names the
#     judges of a side-by-side run; several names = several judges, each judging everything;
#     bad input (unknown name, --judges with --judge-url, a missing file) exits 2, sends nothing.
set -euo pipefail
ARB=${1:?usage: e2e_providers.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"

start_sim --judge "sim-a:skill=4,bias=0.5,tie=0.3,latency=0" \
  --judge "sim-b:skill=2,bias=-0.3,tie=0.3,latency=0" --seed 11
cat > "$T/judges.yaml" <<EOF
judges:
  - name: judge-a
    url: $URL
    model: sim-a
  - name: judge-b
    url: $URL
    model: sim-b
    temperature: 0.5
  - name: judge-unused
    url: $URL
    model: sim-a
    seed: 3
EOF
sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --no-progress "$@"; }

# ---- 0. sbs --judges: bad input first (exit 2, nothing stored) -----------------------------------
set +e; sbs --judges "$T/judges.yaml:judge-a,nobody" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "an unknown judge name exits 2 and names it" "[ $rc = 2 ] && grep -q 'no judge named \"nobody\"' '$T/err'"
check "nothing is stored for an unknown name" "[ ! -e '$T/bad.db' ]"
set +e; sbs --judges "$T/judges.yaml:judge-a" --judge-url "$URL" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "--judges with --judge-url exits 2" "[ $rc = 2 ] && grep -q 'not both' '$T/err'"
set +e; sbs --judges "$T/judges.yaml:judge-a" --temperature 1 --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "--judges with a sampling flag exits 2" "[ $rc = 2 ] && grep -q 'not both' '$T/err'"
set +e; sbs --judges "$T/no-such.yaml:judge-a" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "a missing judges file exits 2 and names it" "[ $rc = 2 ] && grep -q 'no-such.yaml' '$T/err'"
set +e; sbs --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "no judge at all exits 2" "[ $rc = 2 ] && grep -q 'missing --judges or --judge-model' '$T/err'"
check "no database was left behind by bad input" "[ ! -e '$T/bad.db' ]"
"$ARB" sbs --help > "$T/help"
check "sbs --help documents --judges" "grep -q -- '--judges FILE:NAME' '$T/help'"

# ---- 0. two judges of the file in one run -----------------------------------------------------------
calls=$((n_items * 2 * 2))
sbs --judges "$T/judges.yaml:judge-a,judge-b" --db "$DB" --dry-run 2>"$T/plan"
check "dry run plans items x 2 orders x 2 judges = $calls calls" "grep -q 'sbs plan: $calls judge calls, 0 already stored' '$T/plan'"
sbs --judges "$T/judges.yaml:judge-a,judge-b" --db "$DB" --jobs 8 2>"$T/run1"
check "the run sends $calls calls" "grep -q 'sbs: $calls judge calls: 0 stored before, $calls sent ($calls ok, 0 failed)' '$T/run1'"
check "each judge judged every item in both orders" "[ \"\$(sqlite3 '$DB' \"select group_concat(judge_name || ':' || n, ' ') from (select judge_name, count(*) n from pairwise where protocol='sbs' group by judge_name order by judge_name)\")\" = 'judge-a:$((n_items * 2)) judge-b:$((n_items * 2))' ]"
check "judge-b's calls carry its own sampling (temperature 0.5)" "[ \$(sqlite3 '$DB' \"select count(*) from calls where judge_name='judge-b' and json_extract(request, '\$.temperature') = 0.5\") = $((n_items * 2)) ]"
check "both judges are recorded" "[ \$(sqlite3 '$DB' \"select count(*) from judges where name in ('judge-a','judge-b')\") = 2 ]"
check "the run lists its judges" "[ \$(sqlite3 '$DB' \"select json_array_length(params, '\$.judges') from runs where protocol='sbs'\") = 2 ]"
sbs --judges "$T/judges.yaml:judge-b,judge-a" --db "$DB" 2>"$T/run2"
check "a rerun (names in another order) sends nothing" "grep -q 'sbs: $calls judge calls: $calls stored before, 0 sent' '$T/run2'"
# The same judge through the one-endpoint shortcut reuses judge-a's calls: one name, one config.
sbs --judge-url "$URL" --judge-model sim-a --judge-name judge-a --db "$DB" 2>"$T/run3"
check "the --judge-url shortcut finds judge-a's calls stored" "grep -q 'sbs: $((n_items * 2)) judge calls: $((n_items * 2)) stored before, 0 sent' '$T/run3'"
# A whole file without :NAMES takes every judge.
sbs --judges "$T/judges.yaml" --db "$DB" --dry-run 2>"$T/plan2"
check "FILE alone takes every judge of the file" "grep -q 'sbs plan: $((n_items * 2 * 3)) judge calls, $calls already stored' '$T/plan2'"

finish

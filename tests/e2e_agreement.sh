#!/usr/bin/env bash
# End-to-end test of `arbiter agreement` and `arbiter factors` over real HTTP against the
# simulated judge server: two simulated judges each judge two candidates against a baseline on
# the demo benchmark, then the judges are compared (METHODS §5 mutual agreement and
# disagreement) and the factor analysis runs on the (judge, candidate, task) groups.
set -euo pipefail
ARB=${1:?usage: e2e_agreement.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

start_sim --judge "sim-a:skill=4,bias=0.5" --judge "sim-b:skill=2,bias=-0.3,tie=0.4" --seed 7

sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --baseline cedar-small \
  --judge-url "$URL" --no-progress "$@" 2>>"$T/sbs.log"; }

# One judge first: nothing to compare, said plainly, exit 0.
sbs --candidate atlas-large --judge-model sim-a --db "$T/one.db"
"$ARB" agreement --db "$T/one.db" > "$T/one.txt"
check "one judge: text says agreement needs two judges" "grep -q 'at least two judges' '$T/one.txt'"
"$ARB" agreement --db "$T/one.db" --json > "$T/one.json"
check "one judge: JSON has no pairs and a null disagreement" "python3 - '$T/one.json' <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
assert d['judges']==['sim-a'], d['judges']
assert d['agreement']==[] and d['disagreement'] is None
PY"

# Two judges x two candidates.
for judge in sim-a sim-b; do
  for cand in atlas-large birch-medium; do
    sbs --candidate "$cand" --judge-model "$judge" --db "$T/eval.db"
  done
done
n_inst=$((n_items*2*2))
check "all judgments stored" "[ \$(sqlite3 '$T/eval.db' 'select count(*) from pairwise') = $((n_inst*2)) ]"

"$ARB" agreement --db "$T/eval.db" > "$T/agree.txt"
check "agreement text has both matrices and the histogram" \
  "grep -q 'ties included' '$T/agree.txt' && grep -q 'ties excluded' '$T/agree.txt' && grep -q 'disagreeing' '$T/agree.txt'"
check "agreement text names the judges" "grep -q '\[1\] sim-a' '$T/agree.txt' && grep -q '\[2\] sim-b' '$T/agree.txt'"
"$ARB" agreement --db "$T/eval.db" --json --output "$T/agree.json"
check "agreement JSON is valid" "python3 -m json.tool '$T/agree.json' >/dev/null"
check "agreement JSON has the documented keys and consistent numbers" "python3 - '$T/agree.json' <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
assert list(d)==['arbiter_version','judges','agreement','disagreement'], list(d)
assert d['judges']==['sim-a','sim-b']
assert len(d['agreement'])==1
p=d['agreement'][0]
assert list(p)==['judge1','judge2','n_common','agreement','n_common_no_ties','agreement_no_ties'], list(p)
assert p['judge1']=='sim-a' and p['judge2']=='sim-b'
assert p['n_common']==$n_inst, p['n_common']
assert 0<=p['agreement']<=1 and 0<p['n_common_no_ties']<=p['n_common']
dis=d['disagreement']
assert dis['n_judges']==2 and dis['n_instances']==$n_inst
h=dis['histogram']
assert [x['disagreeing'] for x in h]==[0,1]
assert sum(x['count'] for x in h)==$n_inst
assert abs(h[-1]['cumulative_share']-1)<1e-12
# with two judges, an instance has 0 disagreeing exactly when the verdicts match (E == E
# counts as a match here, unlike in the agreement share), so the share is at least agreement
assert h[0]['share']>=p['agreement']-1e-12
PY"

# Usage errors exit 2.
set +e
"$ARB" agreement 2>/dev/null; rc1=$?
"$ARB" agreement --db "$T/eval.db" --bogus 2>/dev/null; rc2=$?
"$ARB" factors --db "$T/eval.db" --target xx 2>"$T/err"; rc3=$?
set -e
check "agreement without --db exits 2" "[ $rc1 = 2 ]"
check "agreement with an unknown option exits 2" "[ $rc2 = 2 ]"
check "factors with a bad --target exits 2 and says why" "[ $rc3 = 2 ] && grep -q 'pc or pf' '$T/err'"

# Factor analysis: runs, text and JSON.
set +e
"$ARB" factors --db "$T/eval.db" > "$T/factors.txt"; rc=$?
set -e
check "factors text exits 0" "[ $rc = 0 ] && grep -q 'Factor analysis of position consistency' '$T/factors.txt'"
set +e
"$ARB" factors --db "$T/eval.db" --json > "$T/factors.json"; rc=$?
"$ARB" factors --db "$T/eval.db" --target pf --json --output "$T/factors_pf.json"; rc_pf=$?
set -e
check "factors --json exits 0" "[ $rc = 0 ] && [ $rc_pf = 0 ]"
check "factors JSON has the documented keys" "python3 - '$T/factors.json' '$T/factors_pf.json' <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for k in ['target','n_groups','n_used','n_target_undefined','n_predictor_undefined','message',
          'not_used','aic_intercept_only','steps','model']:
    assert k in d, k
assert d['target']=='pc'
assert d['n_groups']>=d['n_used']
if d['model'] is not None:
    m=d['model']
    for k in ['variables','coefficients','aic','r_squared','k','df_residual']:
        assert k in m, k
    assert m['coefficients'][0]['variable']=='(intercept)'
    for v in m['variables']:
        assert v['delta_aic'] is None or v['delta_aic']>=0
else:
    assert d['message'].startswith('too few groups'), d['message']
assert json.load(open(sys.argv[2]))['target']=='pf'
PY"

finish

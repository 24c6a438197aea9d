#!/usr/bin/env bash
# End-to-end test of logprobs (issue 16 point 5) over HTTP against `arbiter sim-server`:
# - judges with logprobs: true / top_logprobs (sent, part of the call key), the simulator's
#   verdict token alone (logprobs=token) or merged with "[[" / ">" (logprobs=merged), and an
#   endpoint without logprobs (logprobs=none) next to a judge that does not ask;
# - sbs (4 options) and grade (1-5): calls.logprobs holds the verdict's distribution whose
#   verdict is the stored one, with the relations the simulator documents (p for the verdict,
#   0.8(1-p)/(k-1) for each other option, 0.2(1-p) outside the options); split and merged
#   tokens give the same numbers;
# - audit text/JSON: prob_weighted next to argmax, recomputed here from the stored rows; "no
#   logprobs" for the judges without them (null, logprobs_available false), never 0;
# - consistency: the expected grade sum p*g next to the mean grade; export carries logprobs.
set -euo pipefail
[ -n "${E2E_DEBUG:-}" ] && set -x
ARB=${1:?usage: e2e_logprobs.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

start_sim --judge "sj:bias=0.5" --judge "sm:bias=0.5,logprobs=merged" --judge "sn:logprobs=none"
cat > "$T/judges.yaml" <<EOF
judges:
  - {name: tok, url: $URL, model: sj, logprobs: true, top_logprobs: 5}
  - {name: mer, url: $URL, model: sm, logprobs: true, top_logprobs: 5}
  - {name: non, url: $URL, model: sn, logprobs: true, top_logprobs: 5}
  - {name: off, url: $URL, model: sj}
EOF
"$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline drift-tiny --judges "$T/judges.yaml:tok,mer,non,off" --db "$T/e.db" --no-progress 2>"$T/log"
q() { sqlite3 "$T/e.db" "$1"; }
sent_calls "$T/e.db"
asked=$(sqlite3 "$T/e.db.sent.db" "select judge_name || ':' || count(*) from calls where json_extract(request, '\$.logprobs') = 1 and json_extract(request, '\$.top_logprobs') = 5 group by judge_name order by judge_name" | tr '\n' ' ')
check "the request asks for logprobs (and top_logprobs) only for judges that set it" "[ '$asked' = 'mer:80 non:80 tok:80 ' ]"
n=$(q "select count(*) from calls where judge_name in ('non', 'off') and logprobs is not null")
check "no logprobs stored for the endpoint without them nor the judge that did not ask (NULL, not zeros)" "[ $n = 0 ]"
n=$(q "select count(*) from pairwise p join calls c on c.id = p.call_id where p.judge_name in ('tok', 'mer') and json_extract(c.logprobs, '\$.verdict') = p.position_verdict")
check "every verdict of tok and mer has its distribution, whose verdict is the stored one" "[ $n = 160 ]"
# The simulator's distribution (4 options): each other option 0.8(1-p)/3, "The" 0.2(1-p), so
# other_mass = 0.2(1-p) in [0.01, 0.1], in_options = 1 - other_mass and, renormalised,
# P(verdict) = p / in_options = (1 - 5 other_mass) / in_options.
n=$(q "with d as (select json_extract(logprobs, '\$.in_options') io, json_extract(logprobs, '\$.other_mass') om,
      json_extract(logprobs, '\$.options.' || json_extract(logprobs, '\$.verdict')) pv from calls where logprobs is not null)
      select count(*) from d where abs(io + om - 1) < 1e-5 and om between 0.01 - 1e-6 and 0.1 + 1e-6
      and abs(pv - (1 - 5*om) / io) < 1e-4")
check "the distribution is the simulator's documented one" "[ $n = 160 ]"
n=$(sqlite3 "$T/e.db.sent.db" "select count(*) from calls a join calls b on a.content = b.content and a.logprobs = b.logprobs
      and replace(b.request, '\"model\":\"sm\"', '\"model\":\"sj\"') = a.request where a.judge_name = 'tok' and b.judge_name = 'mer'")
check "split and merged verdict tokens give the same distributions" "[ $n = 80 ]"

"$ARB" audit --db "$T/e.db" --json >"$T/a.json"
"$ARB" audit --db "$T/e.db" >"$T/a.txt"
python3 - "$T/e.db" "$T/a.json" >"$T/check" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); a = json.load(open(sys.argv[2]))
rows = {r["judge"]: r for r in a["logprobs"]}
ok = True
for judge in ("tok", "mer"):
    got = rows[judge]
    n = 0; arg = dict.fromkeys("abcd", 0.0); pw = dict.fromkeys("abcd", 0.0)
    for order, mv, lp in db.execute("select p.ord, p.model_verdict, c.logprobs from pairwise p join calls c on c.id = p.call_id where p.judge_name = ?", (judge,)):
        o = json.loads(lp)["options"]; n += 1; arg[mv] += 1
        pa, pb = (o["A"], o["B"]) if order == 0 else (o["B"], o["A"])
        pw["a"] += pa; pw["b"] += pb; pw["c"] += o["C"]; pw["d"] += o["D"]
    ok &= got["with_logprobs"] == n == 80 and got["logprobs_available"] is True
    ok &= all(abs(got["argmax"][k] - arg[k] / n) < 1e-9 and abs(got["prob_weighted"][k] - pw[k] / n) < 1e-6 for k in "abcd")
    ok &= got["prob_weighted"]["a"] < got["argmax"]["a"]  # the argmax is all-or-nothing
for judge in ("non", "off"):
    got = rows[judge]
    ok &= got["logprobs_available"] is False and got["prob_weighted"] is None and got["argmax"] is None and got["with_logprobs"] == 0
ok &= rows["non"]["logprobs_asked"] == 80 and rows["off"]["logprobs_asked"] == 0
print("OK" if ok else "BAD")
PY
check "audit --json: prob_weighted and argmax as recomputed from the store; null for judges without logprobs" "grep -qx OK '$T/check'"
check "audit text: prob-weighted next to argmax" "grep -q '^  tok sbs atlas-large vs drift-tiny, template II-reason (4 options): 80 of 80 judgments with logprobs; argmax a [0-9.]* b [0-9.]* c [0-9.]* d [0-9.]*; prob-weighted a ' '$T/a.txt'"
check "audit text: the endpoint without logprobs is 'no logprobs', not 0" "grep -q '^  non sbs .*: no logprobs (asked for; the endpoint returned none)' '$T/a.txt'"
check "audit text: the judge that did not ask says so" "grep -q '^  off sbs .*: no logprobs (not asked for; ' '$T/a.txt'"
"$ARB" export --db "$T/e.db" --format jsonl >"$T/ex.jsonl"
check "export: a logprobs key, the stored object or null" \
  "python3 -c \"import json,sys; L=[json.loads(l) for l in open('$T/ex.jsonl')]; sys.exit(not (sum(1 for o in L if isinstance(o['logprobs'], dict)) == 160 and sum(1 for o in L if o['logprobs'] is None) == 160))\""
"$ARB" import judgments "$T/ex.jsonl" --db "$T/back.db" >/dev/null 2>&1
"$ARB" audit --db "$T/back.db" --json >"$T/back.json"
check "import judgments reads the exported logprobs back: the same audit" "cmp -s '$T/a.json' '$T/back.json'"

# ---- grades: the expected grade beside the mean grade ------------------------------------------
cat > "$T/gj.yaml" <<EOF
judges:
  - {name: gtok, url: $URL, model: sj, logprobs: true, top_logprobs: 10}
  - {name: gnon, url: $URL, model: sn, logprobs: true}
EOF
"$ARB" grade --items "$T/items.jsonl" --answers "$T/answers.jsonl" --model atlas-large --mode grade \
  --judges "$T/gj.yaml" --db "$T/g.db" --no-progress 2>"$T/glog"
gq() { sqlite3 "$T/g.db" "$1"; }
n=$(gq "select count(*) from pointwise w join calls c on c.id = w.call_id where w.judge_name = 'gtok' and json_extract(c.logprobs, '\$.verdict') = cast(w.value as text) and json_type(c.logprobs, '\$.options.5') = 'real'")
m=$(gq "select count(*) from pointwise where judge_name = 'gtok' and value is not null")
check "grade: every valid grade has its distribution over 1..5, verdict = the grade" "[ $n = $m ] && [ $n -gt 0 ]"
n=$(gq "select count(*) from calls where logprobs is not null and abs(json_extract(logprobs, '\$.expected') - (json_extract(logprobs, '\$.options.1') + 2*json_extract(logprobs, '\$.options.2') + 3*json_extract(logprobs, '\$.options.3') + 4*json_extract(logprobs, '\$.options.4') + 5*json_extract(logprobs, '\$.options.5'))) > 1e-5")
check "grade: expected = sum p*g of the stored distribution" "[ $n = 0 ]"
"$ARB" consistency --db "$T/g.db" --json >"$T/c.json"
"$ARB" consistency --db "$T/g.db" >"$T/c.txt"
python3 - "$T/g.db" "$T/c.json" >"$T/gcheck" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); c = json.load(open(sys.argv[2]))
rows = {r["judge"]: r for r in c["logprobs"]}
vals = db.execute("select w.value, json_extract(c.logprobs, '$.expected') from pointwise w join calls c on c.id = w.call_id where w.judge_name = 'gtok' and c.logprobs is not null").fetchall()
n = len(vals); mean = sum(v for v, _ in vals) / n; exp = sum(e for _, e in vals) / n
g = rows["gtok"]
ok = n > 0 and g["with_logprobs"] == n and abs(g["mean_grade"] - mean) < 1e-9 and abs(g["expected_grade"] - exp) < 1e-6
ok &= abs(g["expected_grade"] - g["mean_grade"]) > 1e-3  # the expectation is not the argmax
ok &= rows["gnon"]["logprobs_available"] is False and rows["gnon"]["expected_grade"] is None
print("OK" if ok else "BAD")
PY
check "consistency --json: expected_grade and mean_grade recomputed from the store; null without logprobs" "grep -qx OK '$T/gcheck'"
check "consistency text: expected grade beside the mean grade, and 'no logprobs'" \
  "grep -q '^  gtok pointwise grade, template .*; mean grade [0-9.]*, expected grade [0-9.]*;' '$T/c.txt' && grep -q '^  gnon pointwise grade, .*: no logprobs (asked for; the endpoint returned none)' '$T/c.txt'"
finish

#!/usr/bin/env bash
# End-to-end test of issue 15 point 5: everything downstream works unchanged on judgments that
# arbiter did not make. A hand-made generic judgment file (`arbiter import judgments`) is the
# only input; no judge is called (the simulator runs the whole time and answers 0 requests,
# and the store records no run). Then audit (all metrics, --by task and candidate, the
# bootstrap, the ensemble, expert labels, repetitions), agreement, factors, report (HTML and
# Markdown), rank --db (with a strong verdict) and export, each with values worked out by hand.
#
# The file: judges jx and jy, candidate cand vs baseline base, items q1 q2 (category math) and
# q3 q4 (writing), both orders (order 0: cand shown first). Position verdicts (order 0, order 1):
#   jx: q1 (A,B) q2 (A,A) q3 (C,C) q4 (B,A)     jy: q1 (A,B) q2 (B,B) q3 (A,A) q4 (E,A)
# Every candidate answer is "ééé" (3 code points, 6 bytes), every baseline answer "日本語です"
# (5 code points, 15 bytes).
#   jx: pairs 4, consistent q1 q3 q4: PC 3/4; q2 leans primacy (pcn 1, rcn 0): PF = -1/4;
#       owr = (1 win + ½(1 tie + 1 inconsistent))/4 = 0.5; error rate 0.
#   jy: q4 has E: 3 valid pairs, consistent q1: PC 1/3; q2 recency, q3 primacy: PF 0;
#       owr = (1 + ½·2)/3 = 2/3; error rate 1/8.
#   --by task: jx math 1/2 (q1 yes, q2 no), writing 1; jy math 1/2, writing 0 (q3; q4 has E).
#   agreement jx-jy over the 8 instances: same verdict on q1 (both orders) and q4 order 1:
#       3/8; with both saying A or B: q1 x2, q2 x2, q4 order 1 -> 3 of 5.
#   battles (i = shown first; E left out): jx cand 3 wins (q1 x2, q2 order 0), 2 ties (q3),
#       3 losses; jy 4 wins (q1 x2, q2 order 1, q3 order 0), 3 losses, q4 order 0 left out:
#       cand 7 wins, 2 ties, 6 losses in 15 -> (7 + 1)/15 = 53.3%.
#   expert labels (one annotator): q1 a, q2 b, q3 c, q4 b. jx's model verdicts (a = cand):
#       q1 a a, q2 a b, q3 c c, q4 b b: 7 of 8 right (0.875); Cohen's kappa over the 8:
#       p_o = 7/8, rows a 3 b 3 c 2, columns a 2 b 4 c 2: p_e = 22/64, kappa = 34/42 = 17/21.
set -euo pipefail
ARB=${1:?usage: e2e_import_downstream.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/ext.db"
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
near() { echo "abs(($1) - ($2)) < 1e-9"; }

# the simulator stands by: any judge call a command made would be counted
start_sim --judge "sim-a:skill=4" --seed 1

python3 - "$T/judgments.jsonl" <<'PY'
import json, sys
questions = {"q1": ("What is 2+2?", "math"), "q2": ("Integrate x. <b>bold</b>", "math"),
             "q3": ("Write a haiku.", "writing"), "q4": ("Write a limerick.", "writing")}
verdicts = {"jx": {"q1": "AB", "q2": "AA", "q3": "CC", "q4": "BA"},
            "jy": {"q1": "AB", "q2": "BB", "q3": "AA", "q4": "EA"}}
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for judge, per_item in verdicts.items():
        for item, (question, category) in questions.items():
            for order in (0, 1):
                v = per_item[item][order]
                f.write(json.dumps({"judge": judge, "item": item, "candidate": "cand",
                                    "baseline": "base", "order": order, "verdict": v,
                                    "category": category, "question": question,
                                    "candidate_answer": "ééé", "baseline_answer": "日本語です",
                                    "raw": "<script>alert('%s')</script> [[%s]]" % (judge, v)},
                                   ensure_ascii=False) + "\n")
PY
"$ARB" import judgments "$T/judgments.jsonl" --db "$DB" --source ext 2>"$T/import.log"
check "import: 16 judgments, 15 battles, 4 items" \
  "grep -q 'imported 16 judgments .* as source ext: 15 battles for the rankings, 4 items added' '$T/import.log'"

# ---- audit ----------------------------------------------------------------------------------------
"$ARB" audit --db "$DB" --json > "$T/audit.json"
row() { echo "[r for r in d['rows'] if r['judge'] == '$1'][0]"; }
check "audit jx: PC 3/4, PF -1/4, owr 0.5, error rate 0, 4 valid pairs" \
  "jq_py '$T/audit.json' \"(lambda r: $(near "r['pc']" 0.75) and $(near "r['pf']" -0.25) and $(near "r['owr']" 0.5) and r['error_rate'] == 0 and r['n_valid_pairs'] == 4 and r['pcn'] == 1 and r['rcn'] == 0)($(row jx))\""
check "audit jy: PC 1/3, PF 0, owr 2/3, error rate 1/8, 3 valid pairs" \
  "jq_py '$T/audit.json' \"(lambda r: $(near "r['pc']" 1/3) and $(near "r['pf']" 0) and $(near "r['owr']" 2/3) and $(near "r['error_rate']" 0.125) and r['n_valid_pairs'] == 3)($(row jy))\""
check "audit lengths from the imported answers, in code points: candidate 3, baseline 5; no prompt" \
  "jq_py '$T/audit.json' \"all(r['lengths']['candidate']['mean'] == 3 and r['lengths']['baseline']['mean'] == 5 and r['lengths']['prompt']['mean'] is None for r in d['rows'])\""
check "audit rows name the imported template" "jq_py '$T/audit.json' \"all(r['template'] == 'imported' for r in d['rows'])\""
"$ARB" audit --db "$DB" --by task --json > "$T/task.json"
check "audit --by task: jx math 1/2, writing 1; jy math 1/2, writing 0" \
  "jq_py '$T/task.json' \"{(r['judge'], r['task']): r['pc'] for r in d['rows']} == {('jx', 'math'): 0.5, ('jx', 'writing'): 1.0, ('jy', 'math'): 0.5, ('jy', 'writing'): 0.0}\""
"$ARB" audit --db "$DB" --by candidate --json > "$T/cand.json"
check "audit --by candidate: one row per judge for cand" \
  "jq_py '$T/cand.json' \"sorted((r['judge'], r['candidate']) for r in d['rows']) == [('jx', 'cand'), ('jy', 'cand')]\""
"$ARB" audit --db "$DB" --bootstrap 200 --json > "$T/boot.json"
check "audit --bootstrap: PC intervals around the estimates" \
  "jq_py '$T/boot.json' \"all(r['pc_ci'][0] <= r['pc'] <= r['pc_ci'][1] and r['pc_ci'][0] < r['pc_ci'][1] for r in d['rows'])\""
"$ARB" audit --db "$DB" --ensemble jx,jy --json > "$T/ens.json"
check "audit --ensemble jx,jy: the vote is audited as a judge" \
  "jq_py '$T/ens.json' \"any(r['judge'] == 'ensemble(jx,jy)' for r in d['rows'])\""
"$ARB" audit --db "$DB" > "$T/audit.txt"
check "audit text: PC 75.0% for jx" "grep -q 'PC              75.0%' '$T/audit.txt'"

# expert labels on the imported items
printf '%s\n' '{"item": "q1", "candidate": "cand", "baseline": "base", "verdict": "a", "annotator": "e1"}' \
  '{"item": "q2", "candidate": "cand", "baseline": "base", "verdict": "b", "annotator": "e1"}' \
  '{"item": "q3", "candidate": "cand", "baseline": "base", "verdict": "c", "annotator": "e1"}' \
  '{"item": "q4", "candidate": "cand", "baseline": "base", "verdict": "b", "annotator": "e1"}' > "$T/labels.jsonl"
"$ARB" labels import --db "$DB" "$T/labels.jsonl" 2>/dev/null
"$ARB" audit --db "$DB" --json > "$T/human.json"
check "audit with expert labels: jx accuracy 7/8, Cohen's kappa 17/21" \
  "jq_py '$T/human.json' \"(lambda r: $(near "r['accuracy']" 0.875) and $(near "r['cohen_kappa']" 17/21))($(row jx))\""

# ---- agreement, factors --------------------------------------------------------------------------
"$ARB" agreement --db "$DB" --json > "$T/agree.json"
check "agreement jx-jy: 3/8 with ties, 3/5 on A/B" \
  "jq_py '$T/agree.json' \"(lambda a: a['n_common'] == 8 and $(near "a['agreement']" 0.375) and a['n_common_no_ties'] == 5 and $(near "a['agreement_no_ties']" 0.6))(d['agreement'][0])\""
"$ARB" factors --db "$DB" --target pc --json > "$T/factors.json"
check "factors: 4 (judge, candidate, task) groups used; the prompt length is unknown, said so" \
  "jq_py '$T/factors.json' \"d['n_groups'] == 4 and d['n_used'] == 4 and {'variable': 'prompt_length', 'reason': 'undefined in every group'} in d['not_used']\""

# ---- rank --db, export ----------------------------------------------------------------------------
"$ARB" rank --db "$DB" --json > "$T/rank.json"
check "rank --db: cand 7 wins, 2 ties, 6 losses of 15 (53.3%); 1 E left out" \
  "jq_py '$T/rank.json' \"(lambda m: (m['battles'], m['wins'], m['ties'], m['losses']) == (15, 7, 2, 6) and $(near "m['score']" 8/15))([m for m in d['models'] if m['model'] == 'cand'][0]) and d['n_left_out_e'] == 1\""
"$ARB" export --db "$DB" --format jsonl > "$T/export.jsonl"
check "export --format jsonl: 16 judgments with the imported raw text" \
  "[ \$(wc -l < '$T/export.jsonl') = 16 ] && [ \$(grep -c 'alert(' '$T/export.jsonl') = 16 ]"
"$ARB" export --db "$DB" --format csv > "$T/export.csv"
check "export --format csv: a header and 16 rows" "[ \$(wc -l < '$T/export.csv') = 17 ]"
"$ARB" export --db "$DB" --format battles > "$T/battles.jsonl"
check "export --format battles: the 15 battles" "[ \$(wc -l < '$T/battles.jsonl') = 15 ]"

# ---- report ----------------------------------------------------------------------------------------
"$ARB" report --db "$DB" --html "$T/r.html" --markdown "$T/r.md" --bootstrap 50
check "report summary: no run of arbiter, the judgments imported from ext" \
  "grep -q \"arbiter's own runs: 0.\" '$T/r.md' && grep -q '16 of these judgments were not made by arbiter: they were imported from ext.' '$T/r.md'"
check "report summary: the import sources table with the judges" \
  "grep -q '^| ext | judgments | .*judgments.jsonl | 16 | 0 | 0 | jx, jy | ' '$T/r.md'"
check "report worst cases: the set-up says imported, the raw texts are shown escaped" \
  "grep -q 'imported from ext | 0 | a: cand better | b: base better | yes' '$T/r.md' && grep -q '&lt;script&gt;alert(.jx.)&lt;/script&gt;' '$T/r.md'"
check "report HTML: no script tag, the raw text escaped" \
  "! grep -qi '<script' '$T/r.html' && grep -qF '&lt;script&gt;alert(&#39;jx&#39;)&lt;/script&gt; [[A]]' '$T/r.html' && grep -qF '&lt;b&gt;bold&lt;/b&gt;' '$T/r.html'"
check "report: win rate of the imported battles" "grep -q '| 1 | cand | 53.3% | 15 | 7 | 2 | 6 |' '$T/r.md'"

# ---- an import without questions or answers: lengths unknown, not 0 ------------------------------
grep '"jx"' "$T/judgments.jsonl" | python3 -c "
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    for k in ('question', 'candidate_answer', 'baseline_answer', 'category'): o.pop(k)
    print(json.dumps(o))" > "$T/bare.jsonl"
"$ARB" import judgments "$T/bare.jsonl" --db "$T/bare.db" 2>/dev/null
"$ARB" audit --db "$T/bare.db" --json > "$T/bare.json"
check "no question, no answers: every length is unknown (null), PC still 3/4" \
  "jq_py '$T/bare.json' \"(lambda r: all(r['lengths'][k]['mean'] is None for k in ('question', 'candidate', 'baseline', 'prompt')) and $(near "r['pc']" 0.75))(d['rows'][0])\""

# ---- repetitions and a strong verdict ---------------------------------------------------------------
# judge jr, item r1: order 0 reps A A B, order 1 reps B B B -> RS = (2/3 + 1)/2 = 5/6; pairs by rep
# (A,B) (A,B) (B,B), and s1 (A strong, A): PC 2/4. Battles: r1 cand wins 2 + 3, base 1; s1 order
# 0 cand strong win (3 at --strong-weight 3), order 1 base win: cand 8 of 10 counted -> 80%.
python3 - "$T/reps.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for order, verdicts in ((0, "AAB"), (1, "BBB")):
        for rep, v in enumerate(verdicts):
            f.write(json.dumps({"judge": "jr", "item": "r1", "candidate": "cand", "baseline": "base",
                                "order": order, "rep": rep, "verdict": v}) + "\n")
    f.write(json.dumps({"judge": "jr", "item": "s1", "candidate": "cand", "baseline": "base",
                        "order": 0, "verdict": "A", "strength": "strong"}) + "\n")
    f.write(json.dumps({"judge": "jr", "item": "s1", "candidate": "cand", "baseline": "base",
                        "order": 1, "verdict": "A"}) + "\n")
PY
"$ARB" import judgments "$T/reps.jsonl" --db "$T/reps.db" 2>/dev/null
"$ARB" audit --db "$T/reps.db" --json > "$T/reps.json"
check "repetitions: RS 5/6 over 2 repeated queries, PC 1/2" \
  "jq_py '$T/reps.json' \"(lambda r: $(near "r['rs']" 5/6) and r['n_rep_queries'] == 2 and $(near "r['pc']" 0.5))(d['rows'][0])\""
"$ARB" rank --db "$T/reps.db" --strong-weight 3 --json > "$T/strong.json"
check "rank --strong-weight 3 on an imported strong verdict: cand 80% of 10 counted, 1 strong" \
  "jq_py '$T/strong.json' \"(lambda m: $(near "m['score']" 0.8) and m['battles'] == 10)([m for m in d['models'] if m['model'] == 'cand'][0]) and d['n_strong'] == 1 and d['n_battles'] == 8\""

# ---- no judge was called --------------------------------------------------------------------------
check "the store records no run of arbiter" "[ \$(sqlite3 '$DB' 'select count(*) from runs') = 0 ]"
kill -TERM "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""
check "the simulator answered 0 requests" "grep -q 'stopped after 0 requests' '$T/sim.log'"

finish

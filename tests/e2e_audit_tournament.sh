#!/usr/bin/env bash
# End-to-end test of `arbiter audit` over tournament judgments: a tournament of the demo's four
# models (6 pairs) judged by two simulated judges, then the audit. Every judge gets a row per
# model pair (default grouping) and one pooled row (--by judge), read as side-by-side
# comparisons with candidate = the pair's model first by name, run 0 = it shown first; the
# counts, PC and the error rate agree with the stored rows recomputed here in SQL, and
# --protocol sbs leaves the tournament out.
set -euo pipefail
ARB=${1:?usage: e2e_audit_tournament.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"

start_sim --judge "sim-a:skill=4,bias=0.5,tie=0.3,latency=0" \
  --judge "sim-b:skill=2,bias=-0.3,tie=0.3,invalid=0.05,latency=0" --seed 11
cat > "$T/judges.yaml" <<YAML
judges:
  - name: judge-a
    url: $URL
    model: sim-a
  - name: judge-b
    url: $URL
    model: sim-b
    temperature: 0
YAML
"$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" --judges "$T/judges.yaml" \
  --db "$DB" --no-progress --jobs 8 2>"$T/run"
check "the tournament stored judgments" "[ \$(sqlite3 '$DB' \"select count(*) from pairwise where protocol='tournament'\") -gt 0 ]"

# ---- one row per judge and model pair ---------------------------------------------------------
"$ARB" audit --db "$DB" --json > "$T/cmp.json"
check "12 tournament rows (2 judges x 6 pairs)" "[ \$(jq '[.rows[] | select(.protocol == \"tournament\")] | length' '$T/cmp.json') = 12 ]"
check "each row's candidate is the pair's model first by name" "jq -e '[.rows[] | .candidate < .baseline] | all' '$T/cmp.json' >/dev/null"
# the stored judgments of one pair, recomputed: judgments, E, valid pairs, consistent pairs
pair_sql() { # judge candidate baseline -> "judgments|e|valid|consistent"
  sqlite3 "$DB" "with p as (select item_id, rep, max(case ord when 0 then position_verdict end) v0,
      max(case ord when 1 then position_verdict end) v1 from pairwise
      where protocol='tournament' and judge_name='$1' and candidate='$2' and baseline='$3'
      group by item_id, rep)
    select (select count(*) from pairwise where protocol='tournament' and judge_name='$1'
              and candidate='$2' and baseline='$3'),
           (select count(*) from pairwise where protocol='tournament' and judge_name='$1'
              and candidate='$2' and baseline='$3' and position_verdict='E'),
           (select count(*) from p where v0 not in ('E') and v1 not in ('E')),
           (select count(*) from p where (v0='A' and v1='B') or (v0='B' and v1='A') or (v0='C' and v1='C'))"
}
rows_ok=1
while IFS=$'\t' read -r judge cand base nj er nvalid ncons pc; do
  IFS='|' read -r s_nj s_e s_valid s_cons <<<"$(pair_sql "$judge" "$cand" "$base")"
  want_pc=$(awk -v c="$s_cons" -v v="$s_valid" 'BEGIN { printf "%.9f", c / v }')
  got_pc=$(awk -v x="$pc" 'BEGIN { printf "%.9f", x }')
  want_er=$(awk -v e="$s_e" -v n="$s_nj" 'BEGIN { printf "%.9f", e / n }')
  got_er=$(awk -v x="$er" 'BEGIN { printf "%.9f", x }')
  if [ "$nj" != "$s_nj" ] || [ "$nvalid" != "$s_valid" ] || [ "$ncons" != "$s_cons" ] ||
     [ "$got_pc" != "$want_pc" ] || [ "$got_er" != "$want_er" ]; then
    rows_ok=0; echo "# $judge $cand vs $base: audit $nj $nvalid $ncons $pc $er, store $s_nj $s_valid $s_cons $want_pc $want_er"
  fi
done < <(jq -r '.rows[] | select(.protocol == "tournament") |
  [.judge, .candidate, .baseline, .n_judgments, .error_rate, .n_valid_pairs, .n_consistent, .pc] | @tsv' "$T/cmp.json")
check "per pair: judgments, error rate, valid and consistent pairs and PC match the store" "[ $rows_ok = 1 ]"
check "judge-b's E verdicts show in its error rate" "jq -e '[.rows[] | select(.judge == \"judge-b\") | .error_rate] | add > 0' '$T/cmp.json' >/dev/null"

# ---- one pooled row per judge -------------------------------------------------------------------
"$ARB" audit --db "$DB" --by judge --json > "$T/judge.json"
check "--by judge: one row per tournament judge" "[ \"\$(jq -r '[.rows[] | .judge + \"/\" + .protocol] | join(\",\")' '$T/judge.json')\" = 'judge-a/tournament,judge-b/tournament' ]"
total=$(sqlite3 "$DB" "select count(*) from pairwise where protocol='tournament' and judge_name='judge-a'")
check "--by judge pools every pair of judge-a ($total judgments)" "[ \$(jq '.rows[0].n_judgments' '$T/judge.json') = $total ]"
check "every pooled row has PC, PF, RS (null: no repetitions) and PBias@AB" "jq -e '[.rows[] | (.pc|type) == \"number\" and (.pf|type) == \"number\" and .rs == null and (.pbias_ab|type) == \"number\"] | all' '$T/judge.json' >/dev/null"
check "the injected biases show: judge-a primacy (PBias@AB > 0, PF < 0), judge-b recency" "jq -e '.rows[0].pbias_ab > 0 and .rows[0].pf < 0 and .rows[1].pbias_ab < 0 and .rows[1].pf > 0' '$T/judge.json' >/dev/null"
"$ARB" audit --db "$DB" --by judge > "$T/judge.txt"
check "text names the protocol and the orientation rule" "grep -q 'judge judge-a · all candidates · tournament' '$T/judge.txt' && grep -q 'candidate = the model first by name, shown first in run 0' '$T/judge.txt'"

# ---- --protocol ---------------------------------------------------------------------------------
"$ARB" audit --db "$DB" --protocol sbs --json > "$T/sbs.json"
check "--protocol sbs leaves the tournament out" "[ \$(jq '.rows | length' '$T/sbs.json') = 0 ]"
"$ARB" audit --db "$DB" --protocol tournament --json > "$T/tour.json"
check "--protocol tournament keeps it" "[ \$(jq '.rows | length' '$T/tour.json') = 12 ]"
set +e; "$ARB" audit --db "$DB" --protocol sbs,bogus 2>"$T/err"; rc=$?; set -e
check "an unknown --protocol exits 2 and says what it expects" "[ $rc = 2 ] && grep -q 'expects sbs, tournament' '$T/err'"
finish

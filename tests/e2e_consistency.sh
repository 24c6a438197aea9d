#!/usr/bin/env bash
# End-to-end test of `arbiter consistency` and of `arbiter audit --by language` and
# `--ensemble` (METHODS §8, issue 13 scopes 4-5). Three simulated judges judge the demo
# benchmark side by side; the audit split by the items' language agrees with the store
# recounted in SQL, and the ensemble row covers exactly the instances every member judged.
# Pointwise rows are then written with SQL (the pointwise protocol is another command's job)
# and `arbiter consistency` gives the hand-computed kappas, in text and JSON, reproducible
# intervals, and exit 2 for bad options.
set -euo pipefail
ARB=${1:?usage: e2e_consistency.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"

start_sim --judge "sim-a:skill=4,bias=0.5,tie=0.3,latency=0" \
  --judge "sim-b:skill=2,bias=-0.3,tie=0.3,invalid=0.05,latency=0" \
  --judge "sim-c:skill=3,bias=0,tie=0.2,latency=0" --seed 5
for j in a b c; do
  "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
    --baseline cedar-small --judge-url "$URL" --judge-model "sim-$j" --judge-name "judge-$j" \
    --db "$DB" --no-progress --jobs 8 2>>"$T/run"
done
# judge-c leaves out the first item: the ensemble must leave it out too
sqlite3 "$DB" "delete from pairwise where judge_name = 'judge-c' and item_id = 'demo-001'"

# ---- audit --by language --------------------------------------------------------------------
"$ARB" audit --db "$DB" --by judge,language --json > "$T/lang.json"
n_lang=$(sqlite3 "$DB" "select count(distinct coalesce(language, '')) from items")
check "one row per judge and item language" \
  "[ \$(jq '.rows | length' '$T/lang.json') = \$((3 * n_lang)) ]"
check "the JSON names the grouping" "jq -e '.by == [\"judge\", \"language\"]' '$T/lang.json' >/dev/null"
rows_ok=1
while IFS=$'\t' read -r judge lang n; do
  want=$(sqlite3 "$DB" "select count(*) from pairwise p join items i on i.id = p.item_id
    where p.judge_name = '$judge' and coalesce(i.language, '') = '$lang'")
  [ "$n" = "$want" ] || { rows_ok=0; echo "# $judge $lang: audit $n, store $want"; }
done < <(jq -r '.rows[] | [.judge, .language, .n_judgments] | @tsv' "$T/lang.json")
check "per judge and language: the judgments match the store" "[ $rows_ok = 1 ]"
"$ARB" audit --db "$DB" --by language > "$T/lang.txt"
check "text titles name the language" "grep -q '· language fr · all candidates' '$T/lang.txt'"

# ---- audit --ensemble -----------------------------------------------------------------------
"$ARB" audit --db "$DB" --ensemble judge-a,judge-b,judge-c --json > "$T/ens.json"
check "the ensemble is a row of its own, beside its members" \
  "[ \$(jq '[.rows[] | select(.judge == \"ensemble(judge-a,judge-b,judge-c)\")] | length' '$T/ens.json') = 1 ] &&
   [ \$(jq '.rows | length' '$T/ens.json') = 4 ]"
want=$(sqlite3 "$DB" "select count(*) from (select item_id, ord, rep from pairwise
  where judge_name in ('judge-a', 'judge-b', 'judge-c') group by item_id, ord, rep
  having count(*) = 3)")
check "the ensemble judged exactly the instances every member judged ($want)" \
  "[ \$(jq '.rows[] | select(.judge | startswith(\"ensemble\")) | .n_judgments' '$T/ens.json') = $want ]"
"$ARB" audit --db "$DB" --ensemble judge-a,judge-b,judge-c > "$T/ens.txt"
check "the text says the tie rule" "grep -q 'a tie goes to the member named first' '$T/ens.txt'"
for bad in "judge-a" "judge-a,judge-a" "judge-a,,judge-b" "judge-a,nobody"; do
  set +e; "$ARB" audit --db "$DB" --ensemble "$bad" >/dev/null 2>"$T/err"; rc=$?; set -e
  check "audit --ensemble $bad: exit 2 with a reason" "[ $rc = 2 ] && [ -s '$T/err' ]"
done
set +e; "$ARB" audit --db "$DB" --by language,nonsense >/dev/null 2>"$T/err"; rc=$?; set -e
check "audit --by with an unknown key: exit 2" "[ $rc = 2 ] && grep -q 'language' '$T/err'"

# ---- consistency ----------------------------------------------------------------------------
set +e; "$ARB" consistency --db "$DB" >"$T/empty.txt" 2>"$T/err"; rc=$?; set -e
check "no pointwise judgments yet: exit 0 and a note" "[ $rc = 0 ] && grep -q 'no pointwise' '$T/err'"

# Five parallel groups in en, fr, ar (the hand example of tests/test_consistency.c):
#        g1 g2 g3 g4 g5
#   en    1  0  1  1  0
#   fr    1  0  1  1  1
#   ar    1  1  1  E  -      Fleiss 5/14, fr vs en 6/11, ar vs en 0
sql="insert into items (id, seq, question, language, grp) values"
for g in 1 2 3 4 5; do
  for l in en fr ar; do sql="$sql ('p$g-$l', $((1000 + g)), 'q', '$l', 'g$g'),"; done
done
sqlite3 "$DB" "${sql%,}"
put() { # judge kind item value(-1 = E)
  local v=$4 reason=NULL
  if [ "$v" = -1 ]; then v=NULL; reason="'no answer'"; fi
  echo "insert into pointwise (judge_name, item_id, model, language, kind, template_name, rep,
    value, task, reason) values ('$1', '$3', 'reference', substr('$3', 4), '$2',
    'pointwise-$2-general-explain', 0, $v, 'qa', $reason);"
}
{
  for x in "p1-en 1" "p2-en 0" "p3-en 1" "p4-en 1" "p5-en 0" "p1-fr 1" "p2-fr 0" "p3-fr 1" \
           "p4-fr 1" "p5-fr 1" "p1-ar 1" "p2-ar 1" "p3-ar 1" "p4-ar -1"; do
    put ja yesno $x
    put jb yesno $x
  done
} | sqlite3 "$DB"
"$ARB" consistency --db "$DB" --json > "$T/c.json"
check "one row per judge" "[ \$(jq '.rows | length' '$T/c.json') = 2 ]"
check "Fleiss' kappa 5/14 over 3 groups, 2 left out (1 with an E)" \
  "jq -e '.rows[0] | (.fleiss_kappa - 5/14 | fabs) < 1e-12 and .n_groups == 3 and .n_groups_left_out == 2 and .n_groups_with_error == 1' '$T/c.json' >/dev/null"
check "per language: accuracy, E rate, Cohen's kappa vs en" \
  "jq -e '.rows[0].per_language | (.fr.cohen_kappa_vs_reference - 6/11 | fabs) < 1e-12 and .ar.error_rate == 0.25 and .en.cohen_kappa_vs_reference == null and (.en.accuracy - 0.6 | fabs) < 1e-12' '$T/c.json' >/dev/null"
check "issue 13's row keys" \
  "jq -e '.rows[0] | has(\"judge\") and has(\"template\") and has(\"mode\") and has(\"task\") and has(\"n_groups\") and has(\"n_groups_left_out\") and has(\"languages\") and has(\"fleiss_kappa\") and has(\"per_language\")' '$T/c.json' >/dev/null"
check "Spearman with 2 judges is null" \
  "jq -e '.spearman == [{\"task\": \"qa\", \"mode\": \"yesno\", \"rho\": null, \"n_judges\": 2}]' '$T/c.json' >/dev/null"
"$ARB" consistency --db "$DB" --reference-language fr --json > "$T/fr.json"
check "--reference-language fr: en gets fr's kappa, fr none" \
  "jq -e '.reference_language == \"fr\" and .rows[0].per_language.fr.cohen_kappa_vs_reference == null and (.rows[0].per_language.en.cohen_kappa_vs_reference - 6/11 | fabs) < 1e-12' '$T/fr.json' >/dev/null"
"$ARB" consistency --db "$DB" --ensemble jb,ja --json > "$T/e.json"
check "the ensemble of two identical judges has their kappa: delta 0" \
  "jq -e '.ensemble[0] | .members == [\"jb\", \"ja\"] and (.ens - 5/14 | fabs) < 1e-12 and (.delta | fabs) < 1e-12 and .n_ties == 0' '$T/e.json' >/dev/null"
"$ARB" consistency --db "$DB" --bootstrap 200 --seed 3 --json --output "$T/b1.json"
"$ARB" consistency --db "$DB" --bootstrap 200 --seed 3 --json --output "$T/b2.json"
check "the same seed gives the same intervals" "cmp -s '$T/b1.json' '$T/b2.json'"
check "intervals are listed under <name>_ci" \
  "jq -e '.rows[0].fleiss_kappa_ci | length == 2' '$T/b1.json' >/dev/null"
"$ARB" consistency --db "$DB" --ensemble ja,jb > "$T/c.txt"
check "text: the row, the choices and the ensemble" \
  "grep -q 'judge ja · template pointwise-yesno-general-explain · yes/no · task qa' '$T/c.txt' &&
   grep -q 'groups 3 used, 2 left out (1 with an E, 1 missing a language)' '$T/c.txt' &&
   grep -q 'ensemble: majority vote of ja, jb' '$T/c.txt'"
for bad in "--ensemble ja" "--ensemble ja,ja" "--ensemble ja,nobody" "--reference-language=" \
           "--bootstrap -1" "--level 2"; do
  set +e; "$ARB" consistency --db "$DB" $bad >/dev/null 2>"$T/err"; rc=$?; set -e
  check "consistency $bad: exit 2 with a reason" "[ $rc = 2 ] && [ -s '$T/err' ]"
done
set +e; "$ARB" consistency --db "$T/missing.db" >/dev/null 2>"$T/err"; rc=$?; set -e
check "a database that does not exist: exit 2, nothing created" "[ $rc = 2 ] && [ ! -e '$T/missing.db' ]"
check "consistency --help names the choices" \
  "\"$ARB\" consistency --help | grep -q 'a tie going to the'"
finish

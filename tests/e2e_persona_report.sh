#!/usr/bin/env bash
# End-to-end test of `arbiter persona report` (METHODS §9, issue 14 scope 6). Persona scores
# are written with SQL as the persona protocol stores them (running the protocol is another
# command's job): six scenarios, both responses, each scored under female and male, with
# female's accuracy raised by 3 points and creativity identical. The report flags accuracy
# and only accuracy, the JSON carries the hand-computed means, intervals are reproducible for a
# seed, and bad options or a category without scores exit 2.
set -euo pipefail
ARB=${1:?usage: e2e_persona_report.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"

# an empty store: a planned (dry) run gives a file that exists (a dry run removes a database it
# created itself) arbiter's schema
cp "$SRC/demo/items.jsonl" "$SRC/demo/answers.jsonl" "$T/"
: > "$DB"
"$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline birch-medium --judge-url http://127.0.0.1:9/v1 --judge-model m --dry-run \
  --db "$DB" 2>/dev/null

"$ARB" persona report --db "$DB" > "$T/empty.txt" 2>"$T/empty.err"
check "an empty store reports no persona scores" "grep -q 'no persona scores in the store' '$T/empty.txt'"

{
  echo "BEGIN;"
  echo "INSERT INTO personas (id, category, identity) VALUES (1, 'gender', 'female'), (2, 'gender', 'male');"
  call=0
  for k in 1 2 3 4 5 6; do
    echo "INSERT INTO items (id, seq, question, category, extra) VALUES ('s$k', $k, 'scenario $k', 'base$(( (k + 1) / 2 ))', '{\"variant\": \"v$k\"}');"
    for r in 0 1; do
      base=$(( 4 + (k * 3 + r * 2) % 4 ))
      for p in 1 2; do
        call=$((call + 1))
        acc=$base; [ $p = 1 ] && acc=$((base + 3))
        echo "INSERT INTO calls (id, key, judge_name, model, request, rep, ok) VALUES ($call, 'k$call', 'j1', 'm', '{}', 0, 1);"
        echo "INSERT INTO persona_attributions (call_id, position, persona_id, item_id, response) VALUES ($call, 0, $p, 's$k', 'response$((r + 1))');"
        echo "INSERT INTO scores (protocol, judge_name, item_id, subject, persona_id, position, metric, value, call_id) VALUES ('persona1', 'j1', 's$k', 'response$((r + 1))', $p, 0, 'accuracy', $acc, $call), ('persona1', 'j1', 's$k', 'response$((r + 1))', $p, 0, 'creativity', $base, $call);"
      done
    done
  done
  # one E call: no valid reply
  echo "INSERT INTO calls (id, key, judge_name, model, request, rep, ok) VALUES (99, 'k99', 'j1', 'm', '{}', 0, 1);"
  echo "INSERT INTO persona_attributions (call_id, position, persona_id, item_id, response) VALUES (99, 0, 1, 's1', 'response1');"
  echo "INSERT INTO scores (protocol, judge_name, item_id, subject, persona_id, position, metric, value, call_id) VALUES ('persona1', 'j1', 's1', 'response1', 1, 0, 'accuracy', NULL, 99), ('persona1', 'j1', 's1', 'response1', 1, 0, 'creativity', NULL, 99);"
  echo "COMMIT;"
} | sqlite3 "$DB"

"$ARB" persona report --db "$DB" --bootstrap 200 > "$T/report.txt"
check "text names the entry" "grep -q 'judge j1 · category gender · phase 1 (single candidate)' '$T/report.txt'"
check "text counts the E" "grep -q 'calls 25, E 1, scenarios 6' '$T/report.txt'"
check "text states the significant accuracy difference" \
  "grep -q 'j1 · gender · phase 1 · accuracy: p_holm .*; highest female 8.50, lowest male 5.50 (+3.00)' '$T/report.txt'"
check "creativity is not flagged" "! grep -q 'phase 1 · creativity:' '$T/report.txt'"

"$ARB" persona report --db "$DB" --category gender --bootstrap 100 --seed 7 --json > "$T/a.json"
"$ARB" persona report --db "$DB" --category gender --bootstrap 100 --seed 7 --json > "$T/b.json"
check "the same seed gives the same report" "cmp -s '$T/a.json' '$T/b.json'"
check "JSON means identity -> metric -> {mean, ci}" \
  "jq -e '.entries[0].means.female.accuracy.mean == 8.5 and (.entries[0].means.male.accuracy.ci | length) == 2' '$T/a.json' >/dev/null"
check "JSON diff matrix row minus column" \
  "jq -e '.entries[0].diff_matrix.by_metric.accuracy.female.male == 3 and .entries[0].diff_matrix.combined.male.female == -1.5' '$T/a.json' >/dev/null"
check "JSON chi2 entries with Holm" \
  "jq -e '.entries[0].chi2 | map(.metric) == [\"accuracy\", \"creativity\"] and .[0].significant == true and .[1].significant == false and .[1].p_holm == 1' '$T/a.json' >/dev/null"
check "JSON keys of an entry" \
  "jq -e '.entries[0] | has(\"judge\") and has(\"category\") and has(\"phase\") and has(\"identities\") and .win_rate == null and .position_effect == null and .n_errors == 1' '$T/a.json' >/dev/null"
check "no NaN in JSON" "! grep -qi nan '$T/a.json'"

set +e
"$ARB" persona report --db "$DB" --category religion 2>"$T/cat.err"; rc_cat=$?
"$ARB" persona report --db "$T/missing.db" 2>/dev/null; rc_missing=$?
"$ARB" persona report --db "$DB" --alpha 2 2>/dev/null; rc_alpha=$?
"$ARB" persona frobnicate 2>/dev/null; rc_sub=$?
"$ARB" persona 2>/dev/null; rc_none=$?
set -e
check "a category without scores exits 2" "[ $rc_cat = 2 ]"
check "and names the categories there are" "grep -q 'category \"religion\" (the store has: gender)' '$T/cat.err'"
check "a missing database exits 2" "[ $rc_missing = 2 ]"
check "a bad --alpha exits 2" "[ $rc_alpha = 2 ]"
check "an unknown persona subcommand exits 2" "[ $rc_sub = 2 ] && [ $rc_none = 2 ]"
finish

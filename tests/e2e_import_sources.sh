#!/usr/bin/env bash
# End-to-end test of judgments made by other tools, audited without a judge call: the
# hand-made files under tests/data/import_sources (written after FastChat's and
# Arena-Hard-Auto's published formats) go in with `arbiter import fastchat|arena-hard` and
# `arbiter labels import --format fastchat-human`, and `arbiter audit --json` reports the
# position-bias metrics and the agreement with the human experts computed by hand below. Then
# every bad input: exit 2, file:line: field, nothing stored.
set -euo pipefail
ARB=${1:?usage: e2e_import_sources.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DATA="$SRC/tests/data/import_sources"
DB="$T/eval.db"
q() { sqlite3 "$DB" "$1"; }
# The value of key in the audit row of (candidate, template[, baseline]), printed by Python
# (rounded to 6 decimals; None for null).
metric() {
  python3 - "$T/audit.json" "$1" "$2" "$3" "${4:-}" <<'EOF'
import json, sys
path, cand, tpl, key, base = sys.argv[1:6]
rows = [r for r in json.load(open(path))["rows"]
        if r["candidate"] == cand and r["template"] == tpl and (not base or r["baseline"] == base)]
assert len(rows) == 1, rows
v = rows[0]
for k in key.split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(round(v, 6) if isinstance(v, float) else v)
EOF
}
# is CANDIDATE TEMPLATE KEY VALUE [BASELINE]
is() { [ "$(metric "$1" "$2" "$3" "${5:-}" 2>/dev/null)" = "$4" ]; }
audit() { "$ARB" audit --db "$DB" --json > "$T/audit.json"; }

# ---- FastChat: pair judgments in a data/mt_bench folder ----------------------------------------
"$ARB" import fastchat "$DATA/mt_bench/model_judgment/gpt-4_pair.jsonl" --db "$DB" 2>"$T/out"
check "fastchat: 12 judgments, 11 battles, 5 items" \
  "grep -q 'imported 12 judgments and 0 grades from .* as source fastchat:gpt-4_pair.jsonl: 11 battles for the rankings, 5 items added, 0 skipped' '$T/out'"
check "fastchat: the battle summary of before is still printed (the error game left out)" \
  "grep -q 'imported 11 battles from .* as source fastchat:gpt-4_pair.jsonl (1 skipped)' '$T/out'"
check "fastchat: template is the judge prompt name, options 3" \
  "[ \"\$(q \"select group_concat(distinct template_name || '/' || options) from pairwise\")\" = 'pair-v2/3,pair-v2-multi-turn/3' ]"
check "fastchat: g2_winner model_1 on 81 is position B (model_1 shown second)" \
  "[ \$(q \"select position_verdict || model_verdict from pairwise where item_id='81' and candidate='vicuna-13b' and ord=1\") = Ba ]"
check "fastchat: turn 2 is item 81#2, with the second turn's question" \
  "[ \"\$(q \"select question from items where id='81#2'\")\" = 'Rewrite it starting every sentence with A.' ]"
check "fastchat: the error game is E, raw text kept" \
  "[ \"\$(q \"select p.position_verdict || ' ' || c.content from pairwise p join calls c on c.id = p.call_id where p.item_id='84' and p.ord=0\")\" = 'E \$ERROR\$' ]"

# Hand computation, gpt-4 on vicuna-13b (candidate) vs gpt-3.5-turbo (baseline, model_2),
# pair-v2; run 0 = vicuna shown first. Positions (run 0, run 1): 81 (A,B) consistent a/a;
# 82 (A,A) inconsistent, primacy; 83 (C,C) consistent; 84 (E,A) excluded, E.
#   PC = 2/3; error rate = 1/8; PBias@AB = A-share run 0 (2/2) + run 1 (2/3) - 1 = 2/3;
#   Con@ABCD: J0 a a c e, J1 a b c b: 2/4; PCon@AB = 1/3; pcn 1, rcn 0: PF = -1/3;
#   owr = (1 win + (1 tie + 1 inconsistent)/2) / 3 = 2/3; units by category: writing PC 1/2,
#   roleplay 1: mean 0.75.
audit
V=vicuna-13b
check "audit: PC 2/3 on imported FastChat judgments" "is $V pair-v2 pc 0.666667"
check "audit: error rate 1/8" "is $V pair-v2 error_rate 0.125"
check "audit: PBias@AB 2/3" "is $V pair-v2 pbias_ab 0.666667"
check "audit: Con@ABCD 1/2" "is $V pair-v2 con_abcd 0.5"
check "audit: PCon@AB 1/3" "is $V pair-v2 pcon_ab 0.333333"
check "audit: PF -1/3 (one primacy pair)" "is $V pair-v2 pf -0.333333"
check "audit: owr 2/3" "is $V pair-v2 owr 0.666667"
check "audit: PC unit mean over categories 0.75" "is $V pair-v2 pc_unit_mean 0.75"
check "audit: question length from question.jsonl (40 code points on 81, mean 32.67)" \
  "is $V pair-v2 lengths.question.mean 32.666667"
check "audit: no expert labels yet" "is $V pair-v2 accuracy None"

# ---- MT-Bench human judgments ----------------------------------------------------------------
"$ARB" import arena-hard "$DATA/arena-hard-v2.0/model_judgment/gpt-4.1" --db "$T/other.db" 2>/dev/null
set +e; "$ARB" labels import --format fastchat-human "$DATA/mt_bench_human_judgments.jsonl" --db "$T/other.db" 2>"$T/err"; rc=$?; set -e
check "labels before the judgments: exit 2, told to import the judgments first" \
  "[ $rc = 2 ] && grep -q 'mt_bench_human_judgments.jsonl:1: field \"question_id\": item \"81\" is not in the store; import the judgments first' '$T/err'"
"$ARB" labels import --format fastchat-human "$DATA/mt_bench_human_judgments.jsonl" --db "$DB" 2>"$T/out"
check "fastchat-human: 8 labels" "grep -q 'imported 8 labels from .*: 8 new' '$T/out'"
check "fastchat-human: oriented as the judgments (vicuna candidate), annotator = judge" \
  "[ \"\$(q \"select group_concat(verdict || shown_order, ' ') from (select * from human_labels where item_id='81' and candidate='vicuna-13b' order by annotator)\")\" = 'a0 a1' ]"
# Experts on vicuna vs gpt-3.5 (pair-v2): majorities 81 a (two annotators), 82 b, 83 c, 84 b.
# Judge: run 0 a a c e, run 1 a b c b: correct 2 + 4 of 8 = 0.75; per run 1/2 and 1.
# Cohen's kappa over the 8 (judge, expert) pairs: po = 6/8; judge marginals a3 b2 c2 e1, expert
# a2 b4 c2: pe = (3*2 + 2*4 + 2*2)/64 = 18/64; kappa = (0.75 - 0.28125)/(1 - 0.28125) = 15/23.
audit
check "audit: accuracy vs MT-Bench humans 0.75" "is $V pair-v2 accuracy 0.75"
check "audit: Cohen's kappa vs humans 15/23" "is $V pair-v2 cohen_kappa 0.652174"
check "audit: accuracy per run 1/2 and 1" \
  "is $V pair-v2 accuracy_run.0 0.5 && is $V pair-v2 accuracy_run.1 1.0"
check "audit: turn 2 labels meet the multi-turn judgments" "is $V pair-v2-multi-turn accuracy 1.0"
check "audit: two experts disagreeing on alpaca is an annotator tie" \
  "is alpaca-13b pair-v2 human.n_label_ties 1"

# ---- FastChat single-answer grading -----------------------------------------------------------
"$ARB" import fastchat "$DATA/mt_bench/model_judgment/gpt-4_single.jsonl" --db "$DB" 2>"$T/out"
check "single: 4 grades as grade10" \
  "grep -q 'imported 0 judgments and 4 grades' '$T/out' && [ \$(q \"select count(*) from pointwise where kind='grade10'\") = 4 ]"
check "single: -1 and 7.5 are no grade, with the reason" \
  "[ \"\$(q \"select group_concat(reason, '|') from (select reason from pointwise where value is null order by item_id, model)\")\" = 'FastChat found no [[rating]] in the judgment (score -1)|rating 7.5 is not a whole grade from 1 to 10' ]"

# ---- Arena-Hard-Auto v2.0 folder --------------------------------------------------------------
"$ARB" import arena-hard "$DATA/arena-hard-v2.0/model_judgment/gpt-4.1" --db "$DB" 2>"$T/out"
check "arena-hard v2.0: 12 judgments from two files, source from the folder name" \
  "grep -q 'imported 12 judgments and 0 grades from .* as source arena-hard:gpt-4.1: ' '$T/out'"
check "arena-hard: strength 2 kept on the three >> / << games" \
  "[ \$(q \"select count(*) from pairwise where source='arena-hard:gpt-4.1' and strength=2\") = 3 ]"
check "arena-hard: strong battles marked for rank --strong-weight" \
  "[ \$(q \"select count(*) from battles where source='arena-hard:gpt-4.1' and json_extract(extra, '\$.strong')\") = 3 ]"
check "arena-hard: game 1 shows the baseline first (B>>A: the model, shown second)" \
  "[ \$(q \"select position_verdict || model_verdict || ord from pairwise where item_id='a1' and candidate='qwq-32b' and ord=1\") = Ba1 ]"
check "arena-hard: category from the line" \
  "[ \"\$(q \"select category from items where id='c1'\")\" = creative_writing ]"
# qwq-32b vs o3-mini; run 0 = the model first (game 2). a1 (A,B) consistent a/a; a2 (B,C)
# inconsistent, recency; a3 (E,E) excluded; a4 (A,A) inconsistent, primacy.
#   PC = 1/3; error rate 2/8; PBias = 2/3 + 1/2 - 1 = 1/6; Con@ABCD 1/4; PCon@AB 1/3;
#   pcn 1, rcn 1: PF = (1*1/2 - 1*1/2)/3 = 0; owr = (1 + 2/2)/3 = 2/3.
audit
check "arena-hard audit: PC 1/3" "is qwq-32b arena-hard pc 0.333333"
check "arena-hard audit: error rate 1/4 (null score, null game)" "is qwq-32b arena-hard error_rate 0.25"
check "arena-hard audit: PBias@AB 1/6" "is qwq-32b arena-hard pbias_ab 0.166667"
check "arena-hard audit: Con@ABCD 1/4, PCon@AB 1/3" \
  "is qwq-32b arena-hard con_abcd 0.25 && is qwq-32b arena-hard pcon_ab 0.333333"
check "arena-hard audit: PF 0 (one primacy, one recency pair)" "is qwq-32b arena-hard pf 0.0"
check "arena-hard audit: owr 2/3" "is qwq-32b arena-hard owr 0.666667"
check "arena-hard audit: v2.0 synonyms A<B and B<<A are a consistent pair" \
  "is deepseek-r1 arena-hard pc 1.0 o3-mini"
check "arena-hard audit: an unreadable label (A>B>) is E" \
  "is deepseek-r1 arena-hard error_rate 0.5 gemini-2.0-flash"

# ---- Arena-Hard-Auto v0.1: the baseline only on the command line -------------------------------
V01="$DATA/arena-hard-v0.1/model_judgment/gpt-4-1106-preview"
before=$(q "select count(*) from pairwise")
set +e; "$ARB" import arena-hard "$V01" --db "$DB" 2>"$T/err"; rc=$?; set -e
check "v0.1 without --baseline: exit 2, says to give it" \
  "[ $rc = 2 ] && grep -q 'gpt-4-0613.jsonl:1: field \"baseline\": missing: .*give it with --baseline MODEL' '$T/err'"
check "v0.1 without --baseline stored nothing" "[ \$(q 'select count(*) from pairwise') = $before ]"
"$ARB" import arena-hard "$V01" --baseline gpt-4-0314 --db "$DB" --source ah01 2>"$T/out"
check "v0.1 with --baseline: 4 judgments, the judge from the folder" \
  "grep -q 'imported 4 judgments' '$T/out' && [ \$(q \"select count(*) from pairwise where source='ah01' and baseline='gpt-4-0314' and judge_name='gpt-4-1106-preview'\") = 4 ]"
audit
check "v0.1 audit: both pairs consistent, one win one loss: PC 1, owr 1/2, PBias 0" \
  "is gpt-4-0613 arena-hard pc 1.0 && is gpt-4-0613 arena-hard owr 0.5 && is gpt-4-0613 arena-hard pbias_ab 0.0"
"$ARB" import arena-hard "$V01" --baseline gpt-4-0314 --db "$DB" --source ah01 2>"$T/out"
check "re-importing a source replaces it" \
  "[ \$(q \"select count(*) from pairwise where source='ah01'\") = 4 ]"

# ---- bad input: exit 2, file:line: field, nothing stored ---------------------------------------
before=$(q "select count(*) from pairwise")
bad() { # bad NAME KIND FILE MESSAGE [ARGS...]: the import must fail with exit 2 and MESSAGE
  local name=$1 kind=$2 file=$3 msg=$4; shift 4
  set +e; "$ARB" import "$kind" "$file" --db "$DB" --source bad "$@" 2>"$T/err"; local rc=$?; set -e
  check "$name" "[ $rc = 2 ] && grep -qF -- '$msg' '$T/err' && [ \$(q 'select count(*) from pairwise') = $before ]"
}
mkdir -p "$T/j/gpt-4.1"
good_ah='{"uid": "u0", "judge": "j", "model": "m", "baseline": "b", "games": [{"score": "A>B"}, {"score": "B>A"}]}'
printf '%s\n%s\n' "$good_ah" '{"uid": "u1", "judge": "j", "model": "m", "baseline": "b", "games": [{"score": "A>>>C"}, {"score": "B>A"}]}' > "$T/j/gpt-4.1/m.jsonl"
bad "arena-hard: bad score string" arena-hard "$T/j/gpt-4.1" \
  'm.jsonl:2: field "games[0].score": expected a verdict label "A>>B", "A>B", "A=B", "B>A" or "B>>A", or null, got string "A>>>C"'
printf '%s\n%s\n' "$good_ah" '{"uid": "u1", "judge": "j", "model": "m", "baseline": "b", "games": [{"score": "A>B"}]}' > "$T/j/gpt-4.1/m.jsonl"
bad "arena-hard: one game only" arena-hard "$T/j/gpt-4.1/m.jsonl" \
  'm.jsonl:2: field "games": expected an array of the two games'
printf '%s\n' '{"uid": "u1", "judge": "j", "model": "b", "baseline": "b", "games": [{"score": "A>B"}, {"score": "B>A"}]}' > "$T/j/gpt-4.1/m.jsonl"
bad "arena-hard: model = baseline" arena-hard "$T/j/gpt-4.1/m.jsonl" \
  'm.jsonl:1: field "model": expected a model other than the baseline'
set +e; "$ARB" import judgments "$T/j/gpt-4.1/m.jsonl" --baseline b --db "$DB" 2>"$T/err"; rc=$?; set -e
check "--baseline with a kind that has none: exit 2" \
  "[ $rc = 2 ] && grep -q -- '--baseline applies to fastchat and arena-hard' '$T/err'"
good_fc='{"question_id": 81, "model_1": "a", "model_2": "b", "g1_winner": "tie", "g2_winner": "tie", "judge": ["gpt-4", "pair-v2"]}'
printf '%s\n%s\n' "$good_fc" '{"question_id": 82, "model_1": "a", "model_2": "b", "g1_winner": "A", "g2_winner": "tie", "judge": ["gpt-4", "pair-v2"]}' > "$T/gpt-4_pair.jsonl"
bad "fastchat: bad winner" fastchat "$T/gpt-4_pair.jsonl" \
  'gpt-4_pair.jsonl:2: field "g1_winner": expected "model_1", "model_2", "tie" or "error", got string "A"'
printf '%s\n%s\n' "$good_fc" '{"question_id": 82, "model_1": "a", "model_2": "a", "g1_winner": "tie", "g2_winner": "tie", "judge": ["gpt-4", "pair-v2"]}' > "$T/gpt-4_pair.jsonl"
bad "fastchat: model_1 = model_2" fastchat "$T/gpt-4_pair.jsonl" \
  'gpt-4_pair.jsonl:2: field "model_2": expected a model other than model_1, got string "a"'
printf '%s\n%s\n' "$good_fc" "$good_fc" > "$T/gpt-4_pair.jsonl"
bad "fastchat: the same judgment twice names both lines" fastchat "$T/gpt-4_pair.jsonl" \
  'gpt-4_pair.jsonl:2: judge "gpt-4" judged item "81" (a shown first, b second, rep 0) already at'
printf '%s\n' "$good_fc" > "$T/gpt-4_pair.jsonl"
bad "fastchat: a --baseline no pair names" fastchat "$T/gpt-4_pair.jsonl" \
  '--baseline "gpt4" is neither model_1 nor model_2 of any pairwise judgment' --baseline gpt4
printf '%s\n' '{"question_id": 81, "model": "a", "score": "high", "judge": ["gpt-4", "single-v1"], "turn": 1}' > "$T/gpt-4_single.jsonl"
bad "fastchat single: score not a number" fastchat "$T/gpt-4_single.jsonl" \
  'gpt-4_single.jsonl:1: field "score": expected a number'
printf '%s\n' '{"question_id": 81, "model_a": "vicuna-13b", "model_b": "gpt-3.5-turbo", "winner": "both", "judge": "expert_9", "turn": 1}' > "$T/human.jsonl"
labels_before=$(q "select count(*) from human_labels")
set +e; "$ARB" labels import --format fastchat-human "$T/human.jsonl" --db "$DB" 2>"$T/err"; rc=$?; set -e
check "fastchat-human: bad winner exits 2, nothing stored" \
  "[ $rc = 2 ] && grep -qF 'human.jsonl:1: field \"winner\": expected \"model_a\", \"model_b\" or \"tie\", got string \"both\"' '$T/err' && [ \$(q 'select count(*) from human_labels') = $labels_before ]"
check "no source named bad was left behind" "[ \$(q \"select count(*) from judgment_sources where name='bad'\") = 0 ]"

finish

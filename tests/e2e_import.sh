#!/usr/bin/env bash
# End-to-end test of `arbiter import` and `arbiter export --format battles`: the fixtures under
# tests/data/import (PRD Vicuna80 layout, Chatbot Arena JSON, FastChat pairwise JSONL) import
# with the documented counts and skipped reviews, a rerun of a source replaces it, bad input
# exits 2 naming file:line: field and stores nothing, and the exported battles re-import as an
# arena file into a new database with the same rows.
set -euo pipefail
ARB=${1:?usage: e2e_import.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DATA="$SRC/tests/data/import"
DB="$T/eval.db"
rows() { sqlite3 "$1" "select count(*) from battles${2:+ where $2}"; }

# ---- help and usage ---------------------------------------------------------------------------
"$ARB" import --help > "$T/help"
check "import --help names the three kinds" "grep -q 'prd|arena|fastchat' '$T/help'"
"$ARB" --help > "$T/help"
check "arbiter --help lists import" "grep -q '^  import ' '$T/help'"
set +e; "$ARB" import 2>"$T/err"; rc=$?; set -e
check "import without a kind exits 2" "[ $rc = 2 ] && grep -q 'missing the kind' '$T/err'"
set +e; "$ARB" import chess "$DATA/arena.json" --db "$DB" 2>"$T/err"; rc=$?; set -e
check "unknown kind exits 2" "[ $rc = 2 ] && grep -q 'unknown kind \"chess\"' '$T/err'"
set +e; "$ARB" import arena "$DATA/arena.json" 2>"$T/err"; rc=$?; set -e
check "import without --db exits 2" "[ $rc = 2 ] && grep -q 'missing --db' '$T/err'"
set +e; "$ARB" import arena --db "$DB" 2>"$T/err"; rc=$?; set -e
check "import without a path exits 2" "[ $rc = 2 ] && grep -q 'missing the PATH' '$T/err'"
set +e; "$ARB" import prd "$T/no-such-folder" --db "$DB" 2>"$T/err"; rc=$?; set -e
check "a missing folder exits 2" "[ $rc = 2 ] && grep -q 'no-such-folder: cannot open' '$T/err'"
check "a failed import creates no database" "[ ! -e '$DB' ]"

# ---- the three fixtures -----------------------------------------------------------------------
"$ARB" import prd "$DATA/prd-mini/" --db "$DB" 2>"$T/out"
check "prd: 12 battles, 1 skipped, source from the folder name" \
  "grep -qx 'imported 12 battles from $DATA/prd-mini/ as source prd:prd-mini (1 skipped)' '$T/out'"
check "prd: 12 rows stored" "[ \$(rows '$DB') = 12 ]"
check "prd: reviewers gpt4, human, vicuna-13b" \
  "[ \"\$(sqlite3 '$DB' 'select group_concat(reviewer) from (select distinct reviewer from battles order by 1)')\" = 'gpt4,human,vicuna-13b' ]"
check "prd: score 1 on bard-vs-gpt4 q1 is s = -1 (bard, shown first, better)" \
  "[ \$(sqlite3 '$DB' \"select s from battles where reviewer='gpt4' and i='bard' and q='1'\") = -1 ]"
"$ARB" import prd "$DATA/prd-mini" --db "$DB" 2>"$T/out"
check "prd rerun replaces its source" "[ \$(rows '$DB') = 12 ]"
"$ARB" import arena "$DATA/arena.json" --db "$DB" 2>"$T/out"
check "arena: 4 battles" "grep -q 'imported 4 battles from .*arena.json as source arena:arena.json (0 skipped)' '$T/out'"
check "arena: tie (bothbad) stored in extra" \
  "[ \$(rows '$DB' \"json_extract(extra, '\$.both_bad') = 1\") = 1 ]"
check "arena: style from conv_metadata stored" \
  "[ \$(sqlite3 '$DB' \"select json_extract(extra, '\$.style_i.headers') from battles where q='a1f3'\") = 3 ]"
"$ARB" import fastchat "$DATA/fastchat_pair.jsonl" --db "$DB" --source mtbench 2>"$T/out"
check "fastchat: 7 battles, 2 errors skipped, --source" \
  "grep -q 'imported 7 battles from .* as source mtbench (2 skipped)' '$T/out'"
check "fastchat: turn 2 is its own question" "[ \$(rows '$DB' \"q = '81#2'\") = 2 ]"
check "23 battles in three sources" \
  "[ \$(rows '$DB') = 23 ] && [ \$(sqlite3 '$DB' 'select count(distinct source) from battles') = 3 ]"

# ---- bad input: exit 2, file:line: field, nothing stored ----------------------------------------
printf '%s\n' '{"question_id": 1, "model_1": "a", "model_2": "b", "g1_winner": "tie", "g2_winner": "tie"}' \
  '{"question_id": 2, "model_1": "a", "model_2": "b", "g1_winner": "A", "g2_winner": "tie"}' > "$T/bad_pair.jsonl"
set +e; "$ARB" import fastchat "$T/bad_pair.jsonl" --db "$DB" --source mtbench 2>"$T/err"; rc=$?; set -e
check "bad fastchat line exits 2 with file:line: field" \
  "[ $rc = 2 ] && grep -q 'bad_pair.jsonl:2: field \"g1_winner\": expected \"model_1\", \"model_2\", \"tie\" or \"error\", got string \"A\"' '$T/err'"
check "the failed import left source mtbench as it was" "[ \$(rows '$DB' \"source = 'mtbench'\") = 7 ]"

# ---- export --format battles and re-import ------------------------------------------------------
"$ARB" export --db "$DB" --format battles --output "$T/battles.jsonl"
check "export writes one line per battle" "[ \$(wc -l < '$T/battles.jsonl') = 23 ]"
check "export keeps tie (bothbad) and flat style fields" \
  "grep -q '\"winner\":\"tie (bothbad)\"' '$T/battles.jsonl' && grep -q '\"length_a\":310' '$T/battles.jsonl'"
"$ARB" export --db "$DB" --format battles --source prd:prd-mini > "$T/prd.jsonl"
check "export --source keeps one source" "[ \$(wc -l < '$T/prd.jsonl') = 12 ]"
set +e; "$ARB" export --db "$DB" --source x 2>"$T/err"; rc=$?; set -e
check "--source without --format battles exits 2" "[ $rc = 2 ]"
"$ARB" import arena "$T/battles.jsonl" --db "$T/again.db" 2>"$T/out"
check "the export re-imports as arena with the same count" \
  "grep -q 'imported 23 battles' '$T/out' && [ \$(rows '$T/again.db') = 23 ]"
q="select q, i, j, reviewer, s, extra from battles order by source, seq"
sqlite3 "$DB" "$q" > "$T/rows1"
sqlite3 "$T/again.db" "$q" > "$T/rows2"
check "the re-imported rows equal the stored ones (extra included)" "cmp -s '$T/rows1' '$T/rows2'"

# ---- strong verdicts: stored, exported and counted --strong-weight times by rank ----------------
# A>>B at weight 3: A has 3 wins + 1 loss + 1 tie in 5 counted battles -> (3 + 0.5)/5 = 70%
printf '%s\n' \
  '{"question_id": 1, "model_a": "A", "model_b": "B", "winner": "model_a", "strong": true}' \
  '{"question_id": 2, "model_a": "A", "model_b": "B", "winner": "model_b"}' \
  '{"question_id": 3, "model_a": "B", "model_b": "A", "winner": "tie"}' > "$T/strong.jsonl"
"$ARB" import arena "$T/strong.jsonl" --db "$T/strong.db" 2>/dev/null
check "a strong battle is stored with extra strong true" \
  "[ \$(rows '$T/strong.db' \"json_extract(extra, '\$.strong') = 1\") = 1 ]"
"$ARB" export --db "$T/strong.db" --format battles > "$T/strong_out.jsonl"
check "export writes strong true" "[ \$(grep -c '\"strong\":true' '$T/strong_out.jsonl') = 1 ]"
"$ARB" rank --db "$T/strong.db" --strong-weight 3 --json > "$T/strong.json"
check "rank --strong-weight 3: A 70%, n_strong 1, strong_weight 3, 5 counted" \
  "python3 -c \"import json,sys; d=json.load(open('$T/strong.json')); a=[m for m in d['models'] if m['model']=='A'][0]; sys.exit(not (abs(a['score']-0.7)<1e-12 and a['battles']==5 and d['n_strong']==1 and d['strong_weight']==3 and d['n_battles']==3 and d['n_counted']==5))\""
"$ARB" rank --battles "$T/strong_out.jsonl" > "$T/strong.txt"
check "rank (weight 1) says how many battles were strong and the weight used" \
  "grep -q '3 battles, 2 models; 1 strong (A>>B) battle, each counted 1 time (--strong-weight)' '$T/strong.txt' && grep -q ' A *50.0%' '$T/strong.txt'"
set +e; "$ARB" rank --battles "$T/strong.jsonl" --strong-weight 0 2>"$T/err"; rc=$?; set -e
check "--strong-weight 0 exits 2" "[ $rc = 2 ] && grep -q 'strong-weight' '$T/err'"

# ---- PRD per-reviewer agreement with the humans' majority (METHODS §4) ---------------------------
# Hand-made folder: contestants alpha and beta; three annotators per question; gpt reviews
# both orders, claude one order and always says alpha. Human plurality with alpha first: q1
# alpha, q2 beta, q3 tie, q4 none (1-1-1, skipped), q5 alpha. gpt (alpha-first file, then
# beta-first file, oriented to alpha first): q1 a,a; q2 b,a; q3 t,b; q4 a,a; q5 a,b -> 8 reviews,
# 5 right (62.5%), 2 skipped; Cohen's kappa (p_o 5/8, p_e 3/8) = 0.4. claude: q1 hit, q2 miss,
# q3 miss, q5 hit -> 4 reviews, 50%, 1 skipped, kappa 0.
P="$T/prd-hand"
mkdir -p "$P/ratings-gpt" "$P/ratings-claude" "$P/ratings-human"
review() { printf '{"review_id": "r%s", "question_id": %s, "answer1_id": "x", "answer2_id": "y", "reviewer_id": 1, "metadata": {}, "text": "%s", "score": %s}\n' "$1" "$1" "$2" "$2"; }
# score 1 = the file's first model better, 2 = second, 3 = tie
{ review 1 1; review 2 2; review 3 3; review 4 1; review 5 1; } \
  > "$P/ratings-gpt/answer_alpha-vs-answer_beta-gpt-reviewer_threeclass.jsonl"
{ review 1 2; review 2 2; review 3 1; review 4 2; review 5 1; } \
  > "$P/ratings-gpt/answer_beta-vs-answer_alpha-gpt-reviewer_threeclass.jsonl"
{ review 1 1; review 2 1; review 3 1; review 4 1; review 5 1; } \
  > "$P/ratings-claude/answer_alpha-vs-answer_beta-claude-reviewer_threeclass.jsonl"
human() { printf '{"question_id": %s, "text": "question %s", "score": %s}\n' "$1" "$1" "$2"; }
{ human 1 1; human 1 1; human 1 2; human 2 2; human 2 2; human 2 3; human 3 3; human 3 3;
  human 3 1; human 4 1; human 4 2; human 4 3; human 5 1; human 5 1; human 5 1; } \
  > "$P/ratings-human/answer_alpha-vs-answer_beta-human-reviewer_threeclass.jsonl"
"$ARB" import prd "$P" --db "$T/prd-hand.db" 2>/dev/null
"$ARB" rank --db "$T/prd-hand.db" --json > "$T/prd-hand.json"
check "rank --json: reviewer_agreement of gpt is 8 reviews, 62.5%, kappa 0.4, 2 skipped" \
  "python3 -c \"import json,sys; d=json.load(open('$T/prd-hand.json')); g=[x for x in d['reviewer_agreement'] if x['reviewer']=='gpt'][0]; sys.exit(not (g['n_reviews']==8 and abs(g['accuracy']-0.625)<1e-12 and abs(g['kappa']-0.4)<1e-12 and g['n_human_ties_skipped']==2))\""
check "rank --json: claude 4 reviews, 50%, kappa 0, 1 skipped" \
  "python3 -c \"import json,sys; d=json.load(open('$T/prd-hand.json')); g=[x for x in d['reviewer_agreement'] if x['reviewer']=='claude'][0]; sys.exit(not (g['n_reviews']==4 and abs(g['accuracy']-0.5)<1e-12 and abs(g['kappa'])<1e-12 and g['n_human_ties_skipped']==1))\""
"$ARB" rank --db "$T/prd-hand.db" > "$T/prd-hand.txt"
check "rank text: the per-reviewer table after the majority-vote rows" \
  "grep -q '^gpt  *8  *62.5%  *+0.400  *2$' '$T/prd-hand.txt' && grep -q 'agreement of the reviewers. majority vote' '$T/prd-hand.txt'"

finish

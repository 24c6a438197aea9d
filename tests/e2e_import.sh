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

finish

#!/usr/bin/env bash
# End-to-end test of `arbiter labels`: items reach a database through a real `arbiter sbs` run
# against the simulated judge server; then good label files import (JSONL and CSV), a bad file
# is refused with file:line: field and exit 2 and leaves the database as it was, several files
# stop at the first bad one, and `labels summary` prints text and JSON with the documented keys.
set -euo pipefail
ARB=${1:?usage: e2e_labels.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"
count() { sqlite3 "$DB" "select count(*) from human_labels"; }
labels() { "$ARB" labels "$@"; }

# ---- items in the database, the way users get them there: a side-by-side run ----------------
start_sim --judge "sim-a:skill=4,bias=0.2" --seed 5
"$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a \
  --db "$DB" --no-progress 2>"$T/sbs.log"
check "sbs stored the items" "[ \$(sqlite3 '$DB' 'select count(*) from items') -ge 10 ]"

# ---- help and usage ---------------------------------------------------------------------------
labels --help > "$T/help"
check "labels --help lists import and summary" "grep -q 'labels import' '$T/help' && grep -q 'labels summary' '$T/help'"
set +e; labels 2>/dev/null; rc=$?; set -e
check "labels without a subcommand exits 2" "[ $rc = 2 ]"
set +e; labels frobnicate 2>"$T/err"; rc=$?; set -e
check "unknown subcommand exits 2" "[ $rc = 2 ] && grep -q frobnicate '$T/err'"
set +e; labels import "$T/x.jsonl" 2>"$T/err"; rc=$?; set -e
check "import without --db exits 2" "[ $rc = 2 ] && grep -q 'missing --db' '$T/err'"
set +e; labels summary --db "$DB" --split 0 2>/dev/null; rc=$?; set -e
check "summary --split 0 exits 2" "[ $rc = 2 ]"

# ---- a good JSONL file: two annotators on demo-001..demo-006 ----------------------------------
python3 - "$T/good.jsonl" <<'PY'
import json, sys
ann1 = "aabcab"   # verdicts of alice on demo-001..006
ann2 = "aabbab"   # of bob
with open(sys.argv[1], "w") as f:
    for who, vs in (("alice", ann1), ("bob", ann2)):
        for i, v in enumerate(vs):
            f.write(json.dumps({"item": "demo-%03d" % (i + 1), "candidate": "atlas-large",
                                "baseline": "cedar-small", "verdict": v, "annotator": who,
                                "time_ms": 1000 + i}) + "\n")
PY
labels import --db "$DB" "$T/good.jsonl" 2>"$T/out"
check "good JSONL imports 12 labels" "grep -q 'imported 12 labels from $T/good.jsonl: 12 new, 0 updated, 0 unchanged' '$T/out'"
check "12 labels stored" "[ \$(count) = 12 ]"
labels import --db "$DB" "$T/good.jsonl" 2>"$T/out"
check "re-import is unchanged" "grep -q '0 new, 0 updated, 12 unchanged' '$T/out' && [ \$(count) = 12 ]"

# ---- CSV with a byte order mark, CRLF, quoted fields, other column order ----------------------
printf '\xef\xbb\xbfannotator,note,verdict,item,candidate,baseline\r\n"carol, MD","short, ""quoted""\r\nnote",d,demo-001,atlas-large,cedar-small\r\nbob,,a,demo-006,atlas-large,cedar-small\r\n' > "$T/more.csv"
labels import --db "$DB" "$T/more.csv" 2>"$T/out"
check "CSV imports: 1 new, 1 updated" "grep -q 'imported 2 labels from $T/more.csv: 1 new, 1 updated, 0 unchanged' '$T/out'"
check "CSV annotator with a comma stored" "[ \"\$(sqlite3 '$DB' \"select verdict from human_labels where annotator='carol, MD'\")\" = d ]"

# ---- a bad file: exit 2, file:line: field, database unchanged ---------------------------------
before=$(sqlite3 "$DB" "select group_concat(item_id||annotator||verdict, ';') from (select * from human_labels order by id)")
cat > "$T/bad.jsonl" <<'EOF'
{"item":"demo-001","candidate":"atlas-large","baseline":"cedar-small","verdict":"b","annotator":"alice"}

{"item":"demo-002","candidate":"atlas-large","baseline":"cedar-small","verdict":"B","annotator":"alice"}
EOF
set +e; labels import --db "$DB" "$T/bad.jsonl" 2>"$T/err"; rc=$?; set -e
check "bad verdict exits 2" "[ $rc = 2 ]"
check "message names file:line: field" "grep -q 'bad.jsonl:3: field \"verdict\"' '$T/err' && grep -q 'uppercase A-D are position verdicts' '$T/err'"
after=$(sqlite3 "$DB" "select group_concat(item_id||annotator||verdict, ';') from (select * from human_labels order by id)")
check "database unchanged after the bad file" "[ \"\$before\" = \"\$after\" ]"
printf 'item,candidate,baseline,verdict,annotator\nq-nope,atlas-large,cedar-small,a,alice\n' > "$T/unknown.csv"
set +e; labels import --db "$DB" "$T/unknown.csv" 2>"$T/err"; rc=$?; set -e
check "unknown item exits 2 with the hint" "[ $rc = 2 ] && grep -q 'unknown.csv:2: field \"item\": item \"q-nope\" is not in the store; judge it first' '$T/err'"
set +e; labels import --db "$DB" "$T/missing.jsonl" 2>"$T/err"; rc=$?; set -e
check "missing file fails with its name" "[ $rc != 0 ] && grep -q 'missing.jsonl' '$T/err'"
set +e; labels import --db "$DB" --format xml "$T/good.jsonl" 2>/dev/null; rc=$?; set -e
check "--format xml exits 2" "[ $rc = 2 ]"

# ---- several files: the first bad one stops the import ----------------------------------------
printf '{"item":"demo-007","candidate":"atlas-large","baseline":"cedar-small","verdict":"c","annotator":"alice"}\n' > "$T/ok2.jsonl"
set +e; labels import --db "$DB" "$T/ok2.jsonl" "$T/bad.jsonl" "$T/good.jsonl" 2>"$T/err"; rc=$?; set -e
check "several files: exit 2 at the bad one" "[ $rc = 2 ] && grep -q 'imported 1 labels from $T/ok2.jsonl' '$T/err' && grep -q 'bad.jsonl:3:' '$T/err'"
check "several files: the report says what was imported" "grep -q 'nothing of $T/bad.jsonl was imported; the 1 file(s) before it were' '$T/err'"
check "several files: the earlier file stayed" "[ \$(count) = 14 ]"

# ---- summary ----------------------------------------------------------------------------------
labels summary --db "$DB" > "$T/summary.txt"
check "summary text names the label set" "grep -q 'candidate atlas-large vs baseline cedar-small' '$T/summary.txt'"
check "summary text lists annotators" "grep -q 'alice (7)' '$T/summary.txt' && grep -q 'carol, MD (1)' '$T/summary.txt'"
labels summary --db "$DB" --json --split 3 --output "$T/summary.json"
check "summary JSON parses (python3 -m json.tool)" "python3 -m json.tool '$T/summary.json' >/dev/null"
# alice a,a,b,c,a,b (demo-001..006), c on demo-007; bob a,a,b,b,a,a (demo-006 now a); carol d on
# demo-001. Split 0 (seq 0-2): alice x bob on 3 items: alice (2,1,0,0), bob (2,1,0,0): r = 1.
# Majorities: demo-001 a (a,a,d), 002 a, 003 b, 004 tie (c,b), 005 a, 006 tie (b,a), 007 c.
check "summary JSON has the documented keys and numbers" "python3 - '$T/summary.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['split_size'] == 3
s = d['label_sets'][0]
for k in ['candidate', 'baseline', 'n_items', 'n_labels', 'n_multi_annotated', 'n_annotator_ties',
          'majority', 'annotators', 'splits']:
    assert k in s, k
assert s['candidate'] == 'atlas-large' and s['baseline'] == 'cedar-small'
assert s['n_items'] == 7 and s['n_labels'] == 14, s
assert s['n_multi_annotated'] == 6 and s['n_annotator_ties'] == 2, s
assert s['majority'] == {'a': 3, 'b': 1, 'c': 1, 'd': 0}, s['majority']
assert [a['name'] for a in s['annotators']] == ['alice', 'bob', 'carol, MD']
sp = s['splits']
assert [(x['first_seq'], x['last_seq'], x['n_items']) for x in sp] == [(0, 2, 3), (3, 5, 3), (6, 8, 1)], sp
for x in sp:
    for k in ['pairs', 'mean_pearson', 'fleiss_kappa', 'fleiss_raters', 'fleiss_items']:
        assert k in x, k
p = sp[0]['pairs'][0]
assert (p['annotator1'], p['annotator2'], p['n_common']) == ('alice', 'bob', 3), p
assert abs(p['pearson'] - 1.0) < 1e-12 and abs(p['cohen_kappa'] - 1.0) < 1e-12, p
assert sp[0]['fleiss_raters'] == 2 and sp[0]['fleiss_items'] == 2, sp[0]
assert sp[2]['pairs'] == [] and sp[2]['mean_pearson'] is None and sp[2]['fleiss_kappa'] is None
PY"
check "no NaN or Infinity in the JSON" "! grep -qiE 'nan|infinity' '$T/summary.json'"

# an empty database: an empty report, not an error
: > "$T/empty.db"
labels summary --db "$T/empty.db" --json > "$T/empty.json"
check "summary of a database without labels" "python3 -c \"import json; d=json.load(open('$T/empty.json')); assert d['label_sets']==[]\""

# a database that does not exist is an error, and is not created
set +e; "$ARB" labels summary --db "$T/typo.db" 2>"$T/typo.err"; rc=$?; set -e
check "summary of a missing database exits 2 and creates nothing" "[ $rc = 2 ] && [ ! -e '$T/typo.db' ] && grep -q 'typo.db' '$T/typo.err'"

finish

#!/usr/bin/env bash
# End-to-end: edges of compact requests and of the fast rerun (found by a hostile test):
#  - an item id of 600 bytes is stored compact and reads back (the decoder had 512-byte names);
#  - an answer replaced by a text whose 32-bit reference hash is the same ("The answer is 1720."
#    and "The answer is 131229." share the low 32 bits of XXH3-64): requests compacted against
#    the old text still read back, from retired_texts, instead of failing the whole export;
#  - a rerun after the template's verdict_json_field changed reads the stored replies again
#    (the field is not part of the request, so the call keys are unchanged) and gives what a
#    fresh store gives, instead of keeping the verdicts read with the old field.
#  - an export that meets a damaged stored request fails naming it and leaves its output file
#    as it was (written to FILE.tmp, renamed once whole).
ARB=${1:?usage: e2e_compact_edges.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
start_sim --judge "sim-b:skill=2,tie=0.4" --judge "sim-a:skill=4" --seed 7

# --- a long item id
ID=$(printf 'L%.0s' $(seq 600))
printf '{"id":"%s","question":"q?"}\n' "$ID" >"$T/long_items.jsonl"
printf '{"item":"%s","model":"atlas-large","answer":"a"}\n{"item":"%s","model":"cedar-small","answer":"b"}\n' \
  "$ID" "$ID" >"$T/long_answers.jsonl"
"$ARB" sbs --items "$T/long_items.jsonl" --answers "$T/long_answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --db "$T/long.db" --no-progress 2>/dev/null
check "a request naming a 600-byte item id is stored compact" \
  "[ \"\$(sqlite3 '$T/long.db' \"select count(*) from calls where typeof(request) = 'blob'\")\" = 2 ]"
check "and exports with that id in its prompt" \
  "'$ARB' export --db '$T/long.db' --format jsonl --output '$T/long.jsonl' && [ \$(grep -c '$ID' '$T/long.jsonl') = 2 ]"

# --- an answer replaced by one of the same 32-bit hash
python3 - "$T/answers.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for o in rows:
    if o["item"] == "demo-001" and o["model"] == "atlas-large": o["answer"] = "The answer is 1720."
open(sys.argv[1], "w").write("".join(json.dumps(o) + "\n" for o in rows))
PY
sbs_on() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --judge-url "$URL" \
  --judge-model sim-a --db "$T/coll.db" --no-progress "$@" 2>/dev/null; }
sbs_on --candidate atlas-large --baseline cedar-small
sed -i 's/The answer is 1720\./The answer is 131229./' "$T/answers.jsonl"
sbs_on --candidate birch-medium --baseline cedar-small # stores the dataset: the answer changes
check "the old answer was retired" \
  "[ \"\$(sqlite3 '$T/coll.db' \"select count(*) from retired_texts where body = 'The answer is 1720.'\")\" = 1 ]"
check "requests compacted against it still export" \
  "'$ARB' export --db '$T/coll.db' --format jsonl --output '$T/coll.jsonl'"
check "with the old answer in them" \
  "python3 -c 'import json,sys
n = sum(1 for l in open(sys.argv[1]) for r in [json.loads(l)] if r[\"item\"] == \"demo-001\"
        and r[\"candidate\"] == \"atlas-large\" and \"The answer is 1720.\" in json.dumps(r[\"request\"])
        and \"The answer is 131229.\" not in json.dumps(r[\"request\"]))
sys.exit(n != 2)' '$T/coll.jsonl'"

# --- a rerun after verdict_json_field changed
printf 'judges:\n  - name: jb\n    url: %s\n    model: sim-b\n    response_format: true\n' "$URL" >"$T/judges.yaml"
template() {
  { echo "#! description: verdict read from a JSON field"; echo "#! verdict_json_field: $1"
    echo '#! response_format: {"name": "pv", "schema": {"type": "object", "properties": {"reason": {"type": "string"}, "verdict": {"type": "string", "enum": ["A", "B", "C", "D"]}, "alt": {"type": "string", "enum": ["A", "B"]}}}}'
    sed 1d "$SRC/templates/II-reason.txt"; } >"$T/tpl.txt"
}
field_run() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline birch-medium --judges "$T/judges.yaml:jb" --prompt "$T/tpl.txt" --db "$1" \
  --no-progress 2>/dev/null; sqlite3 "$1" "select position_verdict, count(*) from pairwise group by 1"; }
template verdict; first=$(field_run "$T/f.db")
template alt; rerun=$(field_run "$T/f.db"); fresh=$(field_run "$T/fresh.db")
check "the two fields read differently (the test means something)" "[ \"$first\" != \"$fresh\" ]"
check "a rerun with the other field gives a fresh store's verdicts" "[ \"$rerun\" = \"$fresh\" ]"
# --- an export that fails half-way leaves the output file as it was
"$ARB" export --db "$T/coll.db" --format jsonl --output "$T/whole.jsonl"
cp "$T/whole.jsonl" "$T/whole.before"
sqlite3 "$T/coll.db" "update calls set request = x'28b52ffd00ff'
  where id = (select max(id) from calls where typeof(request) = 'blob')"
check "an export meeting a damaged request fails, naming the judge and item" \
  "! '$ARB' export --db '$T/coll.db' --format jsonl --output '$T/whole.jsonl' 2>'$T/damaged.err' &&
   grep -q 'stored request of judge .*, item .*damaged' '$T/damaged.err'"
check "and leaves the earlier export whole, with no temporary file" \
  "cmp -s '$T/whole.jsonl' '$T/whole.before' && [ ! -e '$T/whole.jsonl.tmp' ]"
finish

#!/usr/bin/env bash
# End-to-end: a store written by schema 11 is migrated to schema 12 (compact texts), 13
# (compact judgment rows: binary keys, integer times, endpoints apart, pairwise without rowid)
# 14 (cheaper writes: pairwise's CHECKs without IN lists, no call trigger on insert, no
# lease index by owner), 15 (answers without rowid, foreign key and JSON CHECK, a lease row
# per claim) and 16 (pairwise a view of pairwise_setups and pairwise_judgments) by the current
# binary and reads back exactly. tests/data/store_v11/demo_sbs.db.gz was
# made by arbiter at commit 4397393 (schema 11, compact requests with zstd's magic number in each
# frame): `arbiter sbs` on the demo benchmark (atlas-large vs cedar-small, 80 calls) against
# `arbiter sim-server --judge sim-a:skill=4 --seed 7`. The two digests are those of that
# binary's `arbiter export --format jsonl` and `--format csv` of the store, before any migration.
#  - the export after migrating is byte-identical (jsonl and csv);
#  - the store is at schema 16, sound (integrity_check), and its requests decode (old frames
#    keep their magic number);
#  - call keys, times and endpoints read back (as text) exactly as the schema-11 store held them;
#  - a rerun of the same evaluation on the migrated store sends 0 requests.
ARB=${1:?usage: e2e_compact_migrate.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
JSONL_SHA=2cd0e39dd8fe8e02a114c82029385a815b23d6f511ce2859e7341d1baab3a094
CSV_SHA=23e12d2f04ee1e3d026c5087aec557e932da1f5880d711636e5f355ae74c4439
start_sim --judge "sim-a:skill=4" --seed 7
gzip -dc "$SRC/tests/data/store_v11/demo_sbs.db.gz" >"$T/v11.db"
check "the fixture is a schema-11 store" "[ \"\$(sqlite3 '$T/v11.db' 'pragma user_version')\" = 11 ]"
# what schema 13 keeps in another form: call keys, times and endpoints, read as text
ISO="strftime('%Y-%m-%dT%H:%M:%fZ', X / 1000.0, 'unixepoch')"
sqlite3 "$T/v11.db" "select group_concat(key || ' ' || created_at || ' ' || coalesce(endpoint, '-'), ',')
  from (select * from calls order by id)" >"$T/calls.before"
sqlite3 "$T/v11.db" "select group_concat(item_id || ord || ' ' || call_id || ' ' || judged_at, ',')
  from (select * from pairwise order by item_id, ord)" >"$T/pairwise.before"
"$ARB" export --db "$T/v11.db" --format jsonl --output "$T/after.jsonl"
"$ARB" export --db "$T/v11.db" --format csv --output "$T/after.csv"
check "migrated to schema 16, sound" "[ \"\$(sqlite3 '$T/v11.db' 'pragma user_version')\" = 16 ] &&
  [ \"\$(sqlite3 '$T/v11.db' 'pragma integrity_check')\" = ok ]"
check "schema 15: answers without rowid, every answer kept" \
  "! sqlite3 '$T/v11.db' 'select rowid from answers' 2>/dev/null &&
   [ \"\$(sqlite3 '$T/v11.db' 'select count(*) from answers')\" -gt 0 ]"
check "schema 13: keys of 16 bytes, times in integer milliseconds, pairwise without rowid" \
  "[ \"\$(sqlite3 '$T/v11.db' \"select count(*) from calls where typeof(key) = 'blob' and length(key) = 16
     and typeof(created_at) = 'integer' and endpoint_id is not null\")\" = 80 ] &&
   [ \"\$(sqlite3 '$T/v11.db' \"select count(*) from pairwise where typeof(judged_at) = 'integer'\")\" = 80 ] &&
   ! sqlite3 '$T/v11.db' 'select rowid from pairwise_judgments' 2>/dev/null"
sqlite3 "$T/v11.db" "select group_concat(lower(hex(key)) || ' ' || ${ISO//X/created_at} || ' '
  || coalesce((select url from endpoints e where e.id = endpoint_id), '-'), ',')
  from (select * from calls order by id)" >"$T/calls.after"
sqlite3 "$T/v11.db" "select group_concat(item_id || ord || ' ' || call_id || ' ' || ${ISO//X/judged_at}, ',')
  from (select * from pairwise order by item_id, ord)" >"$T/pairwise.after"
check "the keys, times and endpoints read back exactly as schema 11 held them" \
  "[ -s '$T/calls.before' ] && cmp -s '$T/calls.before' '$T/calls.after' &&
   [ -s '$T/pairwise.before' ] && cmp -s '$T/pairwise.before' '$T/pairwise.after'"
check "jsonl export byte-identical to the previous binary's" \
  "[ \"\$(sha256sum <'$T/after.jsonl' | cut -c1-64)\" = $JSONL_SHA ]"
check "csv export byte-identical to the previous binary's" \
  "[ \"\$(sha256sum <'$T/after.csv' | cut -c1-64)\" = $CSV_SHA ]"
"$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --db "$T/v11.db" --no-progress \
  >"$T/rerun" 2>&1
check "a rerun on the migrated store sends 0 requests" "grep -q ' 0 sent' '$T/rerun'"
"$ARB" export --db "$T/v11.db" --format jsonl --output "$T/again.jsonl"
check "and its export is still the same" "cmp -s '$T/after.jsonl' '$T/again.jsonl'"
finish

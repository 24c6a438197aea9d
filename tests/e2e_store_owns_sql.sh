#!/usr/bin/env bash
# The store owns its SQL (issue 17 point 1): no module but the store's own files (src/store.c,
# src/store_*.c) calls SQLite (sqlite3_...), includes sqlite3.h or takes the raw connection
# (arb__store_db). This test fails when a file of the list below, or any CLI file, does.
#
# CLEAN lists the library files that no longer touch SQL. It grows until it holds every
# non-store file of src/ (then it becomes "every src/*.c but store*.c" and arb__store_db goes);
# the files still to move are named by the note at the end. A listed file that disappears
# (renamed, split) fails the test, so the list is kept up to date rather than silently shrunk.
set -euo pipefail
SRC=${ARB_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/src

CLEAN="agreement.c annotate.c audit.c audit_metrics.c audit_render.c batch.c batch_api.c consistency.c csv.c dataset.c
debate.c discuss.c discussion_stats.c exec.c factors.c families.c grade.c html.c http.c
import.c import_arena_hard.c import_fastchat.c import_judgments.c import_set.c judge.c
judges_file.c peer.c persona.c persona_input.c persona_parse.c persona_stats.c prompt.c rank.c
rank_core.c rank_render.c report_consistency.c report_doc.c report_html.c report_md.c
report_persona.c sbs.c sim.c sim_batch.c stats.c tournament.c transcripts.c url.c util.c verdict.c"

SQL_USE='sqlite3_|sqlite3\.h|arb__store_db\('
fail=0
checked=0
for name in $CLEAN; do
  case $name in store.c|store_*.c) echo "FAIL: $name is a store file, it may not be listed"; fail=1; continue ;; esac
  f="$SRC/$name"
  if [ ! -f "$f" ]; then
    echo "FAIL: src/$name is listed but does not exist (renamed or split? update the list)"
    fail=1
    continue
  fi
  if grep -nE "$SQL_USE" "$f" | sed "s|^|FAIL: src/$name:|" | grep .; then fail=1; fi
  checked=$((checked + 1))
done
# The CLI is a client of the public header: none of its files may touch SQL.
for f in "$SRC"/cli/*.c; do
  if grep -nE "$SQL_USE" "$f" | sed "s|^|FAIL: src/cli/${f##*/}:|" | grep .; then fail=1; fi
  checked=$((checked + 1))
done

# Not a failure: the files not listed yet, and those of them already clean (add them).
for f in "$SRC"/*.c; do
  name=${f##*/}
  case $name in store.c|store_*.c) continue ;; esac
  case " $(echo $CLEAN) " in *" $name "*) continue ;; esac
  if grep -qE "$SQL_USE" "$f"; then echo "note: src/$name still runs SQL of its own"
  else echo "note: src/$name is clean but not listed: add it to CLEAN"; fi
done

if [ $fail -ne 0 ]; then
  echo "FAIL: SQL outside the store (move it into src/store*.c behind arb__store_* functions)"
  exit 1
fi
echo "ok: $checked files without SQL of their own"

#!/usr/bin/env bash
# The store owns its SQL (issue 17 point 1): no module but the store's own files (src/store.c,
# src/store_*.c) calls SQLite (sqlite3_...), includes sqlite3.h or takes the raw connection
# (arb__store_conn, arb__store_db), and the headers every module includes (src/internal.h and
# the other headers of src/ and src/cli/, but store_internal.h) do not bring sqlite3.h in.
# Every other file of src/ and src/cli/ is checked, whatever its name: a new module is covered
# the day it is added.
set -euo pipefail
SRC=${ARB_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/src

SQL_USE='sqlite3_|sqlite3\.h|arb__store_db\(|arb__store_conn\(|store_internal\.h'
fail=0
checked=0
for f in "$SRC"/*.c "$SRC"/*.h "$SRC"/cli/*.c "$SRC"/cli/*.h; do
  [ -e "$f" ] || continue
  name=${f#"$SRC"/}
  case $name in store.c|store_*.c|store_internal.h) continue ;; esac
  if grep -nE "$SQL_USE" "$f" | sed "s|^|FAIL: src/$name:|" | grep .; then fail=1; fi
  checked=$((checked + 1))
done
# The hub header must not hand SQLite to every module, whatever else changes above.
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]sqlite3\.h[">]' "$SRC/internal.h" |
   sed 's|^|FAIL: src/internal.h:|' | grep .; then fail=1; fi
# A sanity floor: the loop above really saw the modules (a wrong SRC would check nothing).
if [ "$checked" -lt 50 ]; then
  echo "FAIL: only $checked files checked under $SRC"
  fail=1
fi

if [ $fail -ne 0 ]; then
  echo "FAIL: SQL outside the store (move it into src/store*.c behind arb__store_* functions)"
  exit 1
fi
echo "ok: $checked files without SQL of their own"

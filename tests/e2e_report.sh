#!/usr/bin/env bash
# End-to-end test of `arbiter report` on the demo's database (side-by-side judges, debates,
# expert labels, tournament battles, discussions): --html and --markdown written in one run,
# every section there, charts drawn (at least 6 <svg>), no script anywhere, the Markdown has
# the same section headings and no chart, no temporary file is left, a missing database exits
# 2 and a run without an output exits 2, a failed write keeps the old file, and every figure
# of the report's audit tables is `arbiter audit --json`'s (tests/support/report_figures.py).
set -euo pipefail
ARB=${1:?usage: e2e_report.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

"$ARB" demo --out "$T/demo" >"$T/demo.out" 2>&1
DB="$T/demo/demo.db"
check "the demo audits its judgments again after export + import judgments (issue 15)" \
  "grep -q 'IMPORTED AUDIT MATCHES' '$T/demo.out' && [ \"\$(sqlite3 '$T/demo/elsewhere.db' \"select count(*) from pairwise where source = 'elsewhere'\")\" = \"\$(wc -l < '$T/demo/elsewhere.jsonl')\" ]"

# ---- help and usage -----------------------------------------------------------------------------
"$ARB" report --help > "$T/help"
check "report --help names both formats" "grep -q -- '--html FILE' '$T/help' && grep -q -- '--markdown FILE' '$T/help'"
"$ARB" --help > "$T/main_help"
check "arbiter --help lists report" "grep -q '^  report' '$T/main_help'"
set +e; "$ARB" report --db "$T/missing.db" --html "$T/x.html" 2>"$T/err"; rc=$?; set -e
check "a missing database exits 2 and writes nothing" "[ $rc = 2 ] && [ ! -e '$T/x.html' ] && [ ! -e '$T/missing.db' ]"
set +e; "$ARB" report --db "$DB" 2>"$T/err"; rc=$?; set -e
check "no output exits 2" "[ $rc = 2 ] && grep -q -- '--html' '$T/err'"
set +e; "$ARB" report --db "$DB" --html "$T/same" --markdown "$T/same" 2>"$T/err"; rc=$?; set -e
check "one file for both formats exits 2" "[ $rc = 2 ]"
set +e; "$ARB" report --db "$DB" --html "$T/x.html" --bootstrap lots 2>"$T/err"; rc=$?; set -e
check "a bad --bootstrap exits 2" "[ $rc = 2 ]"

# ---- the report ---------------------------------------------------------------------------------
# (timed in bench/, not here: a timed assertion fails on a busy machine, not on slow code)
"$ARB" report --db "$DB" --html "$T/r.html" --markdown "$T/r.md" --title 'Demo <report>'
check "both files written, no .tmp left" "[ -s '$T/r.html' ] && [ -s '$T/r.md' ] && [ ! -e '$T/r.html.tmp' ] && [ ! -e '$T/r.md.tmp' ]"
check "HTML starts with the doctype" "head -c 15 '$T/r.html' | grep -q '<!DOCTYPE html>'"
check "the title is escaped" "grep -q '<title>Demo &lt;report&gt;</title>' '$T/r.html'"
check "Content-Security-Policy without scripts" "grep -q \"default-src 'none'; style-src 'unsafe-inline'; img-src data:\" '$T/r.html'"
for id in summary verdicts position-bias human-agreement judge-agreement win-rates ratings \
          elo-trend peer-weights discussions worst-cases; do
  check "section #$id" "grep -q 'id=\"$id\"' '$T/r.html'"
done
svgs=$(grep -o '<svg' "$T/r.html" | wc -l)
check "$svgs charts (>= 6)" "[ $svgs -ge 6 ]"
check "no <script in the HTML" "! grep -qi '<script' '$T/r.html'"
check "no <script or <svg in the Markdown" "! grep -qiE '<script|<svg' '$T/r.md'"
for h in 'Run summary' 'Verdict shares' 'Position bias' 'Agreement with human experts' \
         'Agreement between judges' 'Win rates' 'Ratings' 'Elo trend' \
         'Peer-rank reviewer weights' 'Debates and discussions' 'Most order-dependent items'; do
  check "Markdown heading '$h'" "grep -qx '## $h' '$T/r.md'"
done
check "the demo's judges and models are in the report" "grep -q 'sim-primacy' '$T/r.md' && grep -q 'atlas-large' '$T/r.md'"
check "no API key or URL path in the judges table" "grep -q '| sim-fair | sim-fair | 127.0.0.1 |' '$T/r.md' && ! grep -q '/v1' '$T/r.md'"

# ---- the report's audit figures are arbiter audit's (issue 17: one reading of the judgments) ------
# the report audits side-by-side judgments (--protocol sbs) with its defaults: verdict shares per
# comparison without intervals, the per-judge tables with 1000 resamples and seed 20261123
"$ARB" audit --db "$DB" --protocol sbs --json >"$T/audit_cmp.json"
"$ARB" audit --db "$DB" --protocol sbs --by judge --bootstrap 1000 --seed 20261123 --json >"$T/audit_judge.json"
"$ARB" audit --db "$DB" --protocol sbs --by judge,language --bootstrap 1000 --seed 20261123 \
  --json >"$T/audit_lang.json"
check "every figure of the report's audit tables is arbiter audit --json's" \
  "python3 '$SRC/tests/support/report_figures.py' '$T/r.md' '$T/audit_cmp.json' '$T/audit_judge.json' '$T/audit_lang.json' >'$T/figures.out' && grep -qE '^[0-9]{3,} cells equal' '$T/figures.out'"
"$ARB" audit --db "$DB" --protocol sbs --by judge --bootstrap 1000 --seed 1 --json >"$T/audit_seed1.json"
check "... and the check sees a difference (another seed's intervals)" \
  "! python3 '$SRC/tests/support/report_figures.py' '$T/r.md' '$T/audit_cmp.json' '$T/audit_seed1.json' '$T/audit_lang.json' 2>/dev/null >&2"

# ---- the same again, apart from the time ----------------------------------------------------------
"$ARB" report --db "$DB" --markdown "$T/r2.md" --title 'Demo <report>'
sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/' "$T/r.md" > "$T/a.md"
sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/' "$T/r2.md" > "$T/b.md"
check "a second run gives the same Markdown" "cmp -s '$T/a.md' '$T/b.md'"

# ---- a report that cannot be written leaves the old one alone --------------------------------------
# (FILE.tmp is a directory, so it cannot be opened for writing, even by root)
cp "$T/r.md" "$T/keep.md"; mkdir "$T/keep.md.tmp"
set +e; "$ARB" report --db "$DB" --markdown "$T/keep.md" 2>"$T/err"; rc=$?; set -e
check "an unwritable FILE.tmp exits 1 and keeps the old FILE" "[ $rc = 1 ] && cmp -s '$T/r.md' '$T/keep.md' && grep -q 'cannot write' '$T/err'"

finish

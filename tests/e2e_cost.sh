#!/usr/bin/env bash
# End-to-end test of cost and budgets (issue 16 point 1) against `arbiter sim-server`:
# - budget stop and continue with exact counts: in --instant mode every reply reports exactly 2
#   completion tokens, so with --price-in 0 --price-out 1000000 (1 dollar per completion token)
#   and --max-tokens 2 every call costs exactly $2 and is estimated at exactly $2. The demo
#   benchmark has 40 items: sbs plans 80 calls. --budget-usd 9 sends 4 ($8; a fifth would make
#   $10), a rerun with 20 sends 6 more (the 4 stored count: $8 + 6 x $2 = $20), a rerun with
#   1000 sends the other 70, and the simulator received exactly 80 requests (none repeated,
#   none lost). The same gate stops `arbiter grade` (the executor's, shared by every protocol).
# - cached prompt tokens (sim-server --cached-share) billed at the cached price.
# - --budget-tokens: the message's spent figure is the stored calls' tokens.
# - --dry-run: estimates against what the run then reports (the non-instant simulator counts
#   ceil(code points / 4) of the messages joined by newlines); no database left behind.
# - price validation (judges file and flags), cost in the run summary, audit (text, JSON) and
#   report; a judge without a price shows "unknown", never $0.
set -euo pipefail
[ -n "${E2E_DEBUG:-}" ] && set -x
ARB=${1:?usage: e2e_cost.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

start_sim --instant
sbs() {
  "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
    --baseline drift-tiny --judge-url "$URL" --judge-model sim-judge --no-progress "$@"
}
DOLLAR="--price-in 0 --price-out 1000000 --max-tokens 2"
n_calls=$((n_items * 2))

# ---- bad input ----------------------------------------------------------------------------
set +e; sbs --db "$T/bad.db" --price-in 1 2>"$T/err"; rc=$?; set -e
check "--price-in without --price-out: exit 2" "[ $rc = 2 ] && grep -q 'needs both --price-in and --price-out' '$T/err'"
set +e; sbs --db "$T/bad.db" --budget-usd 0 2>"$T/err"; rc=$?; set -e
check "--budget-usd 0: exit 2" "[ $rc = 2 ] && grep -q 'arbiter sbs: --budget-usd expects' '$T/err'"
set +e; sbs --db "$T/bad.db" --budget-usd 5 2>"$T/err"; rc=$?; set -e
check "--budget-usd without a price: exit 2, said why" "[ $rc = 2 ] && grep -q 'budget-usd needs a price for every judge; judge \"sim-judge\" has none' '$T/err'"
check "... nothing was sent" "[ \"\$(sqlite3 '$T/bad.db' 'select count(*) from calls' 2>/dev/null || echo 0)\" = 0 ]"
cat > "$T/judges.yaml" <<EOF
judges:
  - name: ja
    url: $URL
    model: sim-judge
    price: {input_per_mtok: 1.10}
EOF
set +e; "$ARB" grade --items "$T/items.jsonl" --answers "$T/answers.jsonl" --model atlas-large \
  --judges "$T/judges.yaml" --db "$T/bad2.db" 2>"$T/err"; rc=$?; set -e
check "judges file price without output_per_mtok: file:line, exit 2" "[ $rc = 2 ] && grep -q 'judges.yaml:5:12: judge 1: field \"price.output_per_mtok\": missing' '$T/err'"
check "... no database left behind" "[ ! -e '$T/bad2.db' ]"

# ---- dry runs leave no database -----------------------------------------------------------
sbs --db "$T/dry.db" --dry-run $DOLLAR 2>"$T/plan"
check "sbs --dry-run leaves no database" "[ ! -e '$T/dry.db' ] && [ ! -e '$T/dry.db-wal' ]"
check "dry run: per-judge estimate with the cost bound" "grep -q 'judge sim-judge: $n_calls calls to send, ~[0-9]* prompt tokens; completion tokens <= $((n_calls * 2)) (max_completion_tokens or max_tokens); cost <= \\\$$((n_calls * 2)).0000' '$T/plan'"
# A reasoning model's bound is max_completion_tokens (visible + thinking), not max_tokens.
cat > "$T/reasoner.yaml" <<EOF
judges:
  - name: rj
    url: $URL
    model: sim-judge
    max_completion_tokens: 3
    price: {input_per_mtok: 0, output_per_mtok: 1000000}
EOF
"$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline drift-tiny --judges "$T/reasoner.yaml:rj" --no-progress --db "$T/dry.db" --dry-run 2>"$T/plan"
check "dry run of a reasoning judge: bound by max_completion_tokens" "grep -q 'judge rj: $n_calls calls to send, ~[0-9]* prompt tokens; completion tokens <= $((n_calls * 3)) (max_completion_tokens or max_tokens); cost <= \\\$$((n_calls * 3)).0000' '$T/plan'"
"$ARB" grade --items "$T/items.jsonl" --answers "$T/answers.jsonl" --model atlas-large \
  --judge-url "$URL" --judge-model sim-judge --db "$T/dry.db" --dry-run 2>"$T/plan"
check "grade --dry-run leaves no database" "[ ! -e '$T/dry.db' ]"
check "dry run without a price: cost unknown" "grep -q 'cost unknown (no price)' '$T/plan'"

# ---- budget in dollars: stop and continue, exact counts --------------------------------------
set +e; sbs --db "$T/b.db" $DOLLAR --jobs 4 --budget-usd 9 2>"$T/r1"; rc=$?; set -e
check "budget 9: exit 3" "[ $rc = 3 ]"
check "budget 9: the message" "grep -q 'arbiter sbs: budget reached: spent \\\$8.0000 of \\\$9.0000; $((n_calls - 4)) calls not sent; rerun with a larger budget to continue' '$T/r1'"
check "budget 9: 4 calls and 4 judgments stored" "[ \"\$(sqlite3 '$T/b.db' 'select count(*), sum(cost_usd) from calls; select count(*) from pairwise')\" = \"$(printf '4|8.0\n4')\" ]"
check "budget 9: summary shows the judge's tokens and cost" "grep -q 'judge sim-judge: 4 calls sent, tokens [0-9]* prompt (0 cached) + 8 completion (0 reasoning), cost \\\$8.0000' '$T/r1'"
set +e; sbs --db "$T/b.db" $DOLLAR --jobs 4 --budget-usd 20 2>"$T/r2"; rc=$?; set -e
check "budget 20: exit 3, 6 more sent (the stored 4 count)" "[ $rc = 3 ] && grep -q '4 stored before, 6 sent' '$T/r2' && grep -q 'spent \\\$20.0000 of \\\$20.0000; $((n_calls - 10)) calls not sent' '$T/r2'"
sbs --db "$T/b.db" $DOLLAR --jobs 4 --budget-usd 1000 2>"$T/r3"
check "budget 1000: finishes the other $((n_calls - 10))" "grep -q '10 stored before, $((n_calls - 10)) sent' '$T/r3'"
check "every call and judgment stored once, \$2 each" "[ \"\$(sqlite3 '$T/b.db' 'select count(*), sum(cost_usd) from calls; select count(*) from pairwise')\" = \"$(printf '%s|%s.0\n%s' $n_calls $((n_calls * 2)) $n_calls)\" ]"
check "runs stopped by the budget are recorded as interrupted, with cost" "[ \"\$(sqlite3 '$T/b.db' \"select group_concat(status || ':' || (stats ->> '\$.cost_usd') || ':' || (stats ->> '\$.not_sent'), ' ') from runs\")\" = 'interrupted:8.0:76 interrupted:12.0:70 finished:140.0:0' ]"
# The same gate stops another protocol (it sits in the executor).
set +e; "$ARB" grade --items "$T/items.jsonl" --answers "$T/answers.jsonl" --model atlas-large \
  --judge-url "$URL" --judge-model sim-judge --db "$T/g.db" --no-progress $DOLLAR \
  --budget-usd 5 2>"$T/g1"; rc=$?; set -e
check "grade stops at the budget too (2 calls, \$4)" "[ $rc = 3 ] && grep -q 'spent \\\$4.0000 of \\\$5.0000; $((n_items - 2)) calls not sent' '$T/g1' && [ \$(sqlite3 '$T/g.db' 'select count(*) from calls') = 2 ]"
# Estimates above the cost ($4 with --max-tokens 4, $2 spent): calls held back while others are in
# flight start once the spend is exact: $0 + 4 + 4 <= 9 (two start), a third waits until they
# are stored ($4 + 4 <= 9: it starts), a fourth would make $6 + 4 > 9: 3 calls, whatever --jobs.
set +e; sbs --db "$T/h.db" --price-in 0 --price-out 1000000 --max-tokens 4 --jobs 4 \
  --budget-usd 9 2>"$T/h1"; rc=$?; set -e
check "held-back calls start once the spend is known: 3 calls, \$6 of \$9" "[ $rc = 3 ] && grep -q 'spent \\\$6.0000 of \\\$9.0000; $((n_calls - 3)) calls not sent' '$T/h1' && [ \$(sqlite3 '$T/h.db' 'select count(*) from calls') = 3 ]"
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""
check "the simulator received exactly $((n_calls + 5)) requests: none repeated, none lost" "grep -q 'stopped after $((n_calls + 5)) requests' '$T/sim.log'"

# ---- budget in tokens ------------------------------------------------------------------------
rm -f "$T/port"
start_sim --instant
set +e; sbs --db "$T/t.db" --max-tokens 2 --budget-tokens 3000 2>"$T/t1"; rc=$?; set -e
spent=$(sqlite3 "$T/t.db" 'select sum(prompt_tokens + completion_tokens) from calls')
stored=$(sqlite3 "$T/t.db" 'select count(*) from calls')
check "token budget: exit 3, spent = the stored calls' tokens ($spent of 3000, $stored calls)" "[ $rc = 3 ] && [ $spent -le 3000 ] && grep -q 'budget reached: spent $spent tokens of 3000; $((n_calls - stored)) calls not sent' '$T/t1'"

# Cached prompt tokens (the simulator reports floor(prompt * 0.5) as cached with --cached-share
# 0.5) are billed at the cached price: $1 per uncached prompt token, cached and completion free.
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""
rm -f "$T/port"
start_sim --instant --cached-share 0.5
sbs --db "$T/c.db" --price-in 1000000 --price-cached-in 0 --price-out 0 2>"$T/c1"
check "cached tokens stored as reported: floor(prompt / 2)" "[ \$(sqlite3 '$T/c.db' 'select count(*) from calls where cached_tokens = prompt_tokens / 2') = $n_calls ]"
check "cost = uncached prompt tokens x \$1" "[ \$(sqlite3 '$T/c.db' 'select sum(cost_usd) = sum(prompt_tokens - cached_tokens) from calls') = 1 ]"
cached=$(sqlite3 "$T/c.db" 'select sum(cached_tokens) from calls')
check "summary shows the cached tokens ($cached)" "grep -q 'judge sim-judge: $n_calls calls sent, tokens [0-9]* prompt ($cached cached)' '$T/c1'"

# ---- cost in audit and report ----------------------------------------------------------------
"$ARB" audit --db "$T/b.db" >"$T/audit.txt"
check "audit text: tokens and cost per judge" "grep -q '\"sim-judge\": $n_calls calls, tokens [0-9]* prompt (0 cached) + $((n_calls * 2)) completion (0 reasoning), cost \\\$$((n_calls * 2)).0000' '$T/audit.txt'"
"$ARB" audit --db "$T/b.db" --json >"$T/audit.json"
check "audit JSON: spend" "python3 -c \"import json; s = json.load(open('$T/audit.json'))['spend']; assert s[0]['judge'] == 'sim-judge' and s[0]['calls'] == $n_calls and s[0]['cost_usd'] == $((n_calls * 2)) and s[0]['price'] == {'input_per_mtok': 0.0, 'output_per_mtok': 1000000.0}, s\""
"$ARB" report --db "$T/b.db" --markdown "$T/report.md" 2>/dev/null
check "report: tokens and cost per judge" "grep -q '^| sim-judge | $n_calls | [0-9,]* | 0 | $((n_calls * 2)) | 0 | \\\\\\\$$((n_calls * 2)).0000 |' '$T/report.md'"
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""

# ---- dry-run estimates against the run, and an unknown cost ------------------------------------
rm -f "$T/port"
start_sim
sbs --db "$T/e.db" --dry-run 2>"$T/plan"
est=$(sed -n 's/.*~\([0-9]*\) prompt tokens to send.*/\1/p' "$T/plan")
sbs --db "$T/e.db" 2>"$T/run"
actual=$(sqlite3 "$T/e.db" 'select sum(prompt_tokens) from calls')
completion=$(sqlite3 "$T/e.db" 'select sum(completion_tokens) from calls')
echo "# dry-run prompt estimate $est, reported $actual; completion bound $((n_calls * 1024)), reported $completion"
check "prompt estimate within 4..8 tokens per call above the simulator's count" "[ $((est - actual)) -ge $((4 * n_calls)) ] && [ $((est - actual)) -le $((8 * n_calls)) ]"
check "completion bound (max_tokens) holds" "[ $completion -le $((n_calls * 1024)) ]"
check "summary without a price: cost unknown, never \$0" "grep -q 'judge sim-judge: $n_calls calls sent, .*cost unknown (no price)' '$T/run' && ! grep -q 'cost \\\$0' '$T/run'"
check "stored cost is NULL" "[ \"\$(sqlite3 '$T/e.db' 'select count(cost_usd) from calls')\" = 0 ]"
"$ARB" audit --db "$T/e.db" >"$T/audit.txt"
"$ARB" audit --db "$T/e.db" --json >"$T/audit.json"
check "audit: unknown (no price)" "grep -q 'cost unknown (no price)' '$T/audit.txt' && python3 -c \"import json; s = json.load(open('$T/audit.json'))['spend'][0]; assert s['cost_usd'] is None and s['price'] is None, s\""
"$ARB" report --db "$T/e.db" --markdown "$T/report.md" 2>/dev/null
check "report: unknown (no price)" "grep -q '^| sim-judge | $n_calls | .* | unknown (no price) |' '$T/report.md'"
# The typical completion comes from the judge's stored calls.
"$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate cedar-small \
  --baseline drift-tiny --judge-url "$URL" --judge-model sim-judge --db "$T/e.db" --dry-run \
  --price-in 1 --price-out 2 2>"$T/plan2"
mean=$(sqlite3 "$T/e.db" 'select round(avg(completion_tokens) * 80) from calls' | cut -d. -f1)
check "dry run: typical completion = mean of stored calls x calls ($mean)" "grep -q '~$mean typical (mean of its stored calls)' '$T/plan2'"
finish

#!/usr/bin/env bash
# End-to-end test of several endpoints per judge (judges file `endpoints:`), against four
# `arbiter sim-server` processes serving the same simulated judge (replicas):
#   - one replica killed (SIGKILL) mid-run: the run ends 0 with every call stored once and ok;
#     each surviving server answered exactly the calls stored with its endpoint (no call sent
#     twice), the dead one's unfinished calls finished on the others, calls.endpoint is filled
#     (without credentials) and the call key does not depend on the endpoint (a rerun sends
#     nothing);
#   - least-outstanding dispatch: equal replicas share the calls, a slow one gets far fewer;
#   - 429 from one replica only (--throttle-rate): every call finishes, the other replica wastes
#     no request, the throttled one answers fewer calls;
#   - max_in_flight and a budget (--budget-usd) over several endpoints; the run's parameters
#     list the endpoints (without credentials) and max_in_flight;
#   - bad judges files: url and endpoints together, an empty list, a bad URL in the list (not
#     echoed): exit 2, nothing created.
set -euo pipefail
ARB=${1:?usage: e2e_endpoints.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

cp "$SRC/demo/items.jsonl" "$SRC/demo/answers.jsonl" "$T/"
n_items=$(grep -c . "$T/items.jsonl")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"; }
# start_sims N ARGS_1 ... ARGS_N: server i (1-based) runs with the words of ARGS_i; sets
# URLS[i], PIDS[i] (logs in $T/sim<i>.log).
start_sims() {
  local n=$1; shift
  PIDS=(); URLS=()
  for i in $(seq "$n"); do
    rm -f "$T/port$i"
    # shellcheck disable=SC2086
    "$ARB" sim-server --port 0 --port-file "$T/port$i" --items "$T/items.jsonl" \
      --answers "$T/answers.jsonl" --seed 3 $1 2>"$T/sim$i.log" &
    PIDS[$i]=$!
    shift
  done
  for i in $(seq "$n"); do
    for _ in $(seq 100); do [ -s "$T/port$i" ] && break; sleep 0.05; done
    URLS[$i]="http://127.0.0.1:$(cat "$T/port$i")/v1"
  done
}
# stop_sim I: stops server I and sets REQ to the requests it answered.
stop_sim() {
  kill -TERM "${PIDS[$1]}"; wait "${PIDS[$1]}" 2>/dev/null || true
  REQ=$(sed -n 's/.*stopped after \([0-9]*\) requests.*/\1/p' "$T/sim$1.log")
}
q() { sqlite3 "$DB" "$1"; }
stored_at() { q "select count(*) from calls c join endpoints e on e.id = c.endpoint_id where e.url = '$1'"; }
# judges_file EXTRA URL...: one judge "rep" (model sim-a) with these endpoints.
judges_file() {
  local extra=$1; shift
  local list; list=$(printf '%s, ' "$@"); list=${list%, }
  printf 'judges:\n  - name: rep\n    model: sim-a\n    endpoints: [%s]\n%s' "$list" "$extra" \
    > "$T/judges.yaml"
}
sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judges "$T/judges.yaml" --db "$DB" --no-progress "$@"; }

# ---- one replica of four dies mid-run ------------------------------------------------------------
SPEC="--judge sim-a:skill=2,tie=0.2,latency=80"
start_sims 4 "$SPEC" "$SPEC" "$SPEC" "$SPEC"
judges_file "" "${URLS[1]}" "${URLS[2]}" "${URLS[3]}" "http://user:SECRET@127.0.0.1:$(cat "$T/port4")/v1"
DB="$T/kill.db"
calls=$((n_items * 2 * 4))
sbs --reps 4 --jobs 16 > "$T/kill.out" 2>&1 & RUN=$!
for _ in $(seq 400); do
  [ -s "$DB" ] && [ "$(q 'select count(*) from calls' 2>/dev/null || echo 0)" -ge 60 ] && break
  sleep 0.02
done
kill -KILL "${PIDS[4]}"; wait "${PIDS[4]}" 2>/dev/null || true
set +e; wait $RUN; rc=$?; set -e
check "kill: the run ends 0 ($rc)" "[ $rc = 0 ]"
check "kill: all $calls calls stored once, all ok" "[ \$(q 'select count(*) from calls') = $calls ] && [ \$(q 'select count(*) from calls where ok = 1') = $calls ] && [ \$(q 'select count(*) from pairwise') = $calls ]"
check "kill: calls.endpoint filled for every call" "[ \$(q 'select count(*) from calls where endpoint_id is null') = 0 ]"
dead_url="http://127.0.0.1:$(cat "$T/port4")/v1"
check "kill: the dead replica had calls before it died, stored without credentials" "[ \$(stored_at '$dead_url') -ge 1 ] && [ \$(sqlite3 '$DB' .dump | grep -c SECRET) = 0 ]"
check "kill: the run's parameters list the four endpoints, without credentials" "sqlite3 '$DB' 'select params from runs' | grep -qF '\"endpoints\":[\"${URLS[1]}\",\"${URLS[2]}\",\"${URLS[3]}\",\"$dead_url\"]'"
check "kill: it died mid-run (the others answered most calls)" "[ \$(stored_at '$dead_url') -lt $((calls / 4)) ]"
total_live=0
for i in 1 2 3; do
  stop_sim "$i"
  at=$(stored_at "${URLS[$i]}")
  total_live=$((total_live + at))
  check "kill: replica $i answered exactly the $at calls stored with it ($REQ requests)" "[ '$REQ' = $at ]"
  check "kill: replica $i took a fair share ($at of $calls)" "[ $at -ge $((calls / 6)) ]"
  check "kill: the summary and runs.stats count replica $i's $REQ requests, no 429, no cool-down" "grep -qF 'endpoint ${URLS[$i]}: $REQ requests (retries included): $REQ ok, 0 answered 429, 0 failed, 0 cool-downs' '$T/kill.out' && [ \"\$(q \"select json_extract(e.value, '\$.requests') || '/' || json_extract(e.value, '\$.cooldowns') from runs, json_each(runs.stats, '\$.endpoints') e where json_extract(e.value, '\$.url') = '${URLS[$i]}'\")\" = '$REQ/0' ]"
done
dead_line=$(grep -F "endpoint $dead_url:" "$T/kill.out" || true)
check "kill: the summary shows the dead replica's failures and its cool-down ($dead_line)" "echo '$dead_line' | grep -Eq ': [0-9]+ requests \(retries included\): [0-9]+ ok, 0 answered 429, [1-9][0-9]* failed, [1-9][0-9]* cool-downs' && [ \$(q \"select json_extract(e.value, '\$.cooldowns') from runs, json_each(runs.stats, '\$.endpoints') e where json_extract(e.value, '\$.url') = '$dead_url'\") -ge 1 ]"
check "kill: the dead replica's unfinished calls finished on the others" "[ $((total_live + $(stored_at "$dead_url"))) = $calls ]"
sbs --reps 4 --jobs 16 > "$T/rerun.out" 2>&1
check "kill: a rerun (every endpoint down now) sends nothing: the key has no endpoint" "grep -q '$calls judge calls: $calls stored before, 0 sent' '$T/rerun.out'"

# ---- least outstanding: a slow replica gets fewer calls ------------------------------------------
FAST="--judge sim-a:skill=2,latency=10"
start_sims 4 "--judge sim-a:skill=2,latency=400" "$FAST" "$FAST" "$FAST"
judges_file "" "${URLS[@]}"
DB="$T/slow.db"
sbs --reps 2 --jobs 8 > "$T/slow.out" 2>&1
calls=$((n_items * 2 * 2))
check "slow: all $calls calls ok" "[ \$(q 'select count(*) from calls where ok = 1') = $calls ]"
slow=$(stored_at "${URLS[1]}")
min_fast=$calls
for i in 2 3 4; do at=$(stored_at "${URLS[$i]}"); [ "$at" -lt "$min_fast" ] && min_fast=$at; done
check "slow: the slow replica got far fewer calls ($slow) than each fast one (>= $min_fast)" "[ $slow -ge 1 ] && [ $((slow * 4)) -lt $min_fast ]"
for i in 1 2 3 4; do stop_sim "$i"; done

# ---- 429 from one replica only --------------------------------------------------------------------
start_sims 2 "--judge sim-a:skill=2,latency=5 --throttle-rate 0.5" "--judge sim-a:skill=2,latency=5"
judges_file "" "${URLS[@]}"
DB="$T/throttle.db"
sbs --reps 2 --jobs 8 --retries 8 > "$T/throttle.out" 2>&1
check "429: all $calls calls ok" "[ \$(q 'select count(*) from calls where ok = 1') = $calls ]"
throttled_at=$(stored_at "${URLS[1]}"); free_at=$(stored_at "${URLS[2]}")
stop_sim 1; req_throttled=$REQ
stop_sim 2; req_free=$REQ
check "429: the other replica wasted no request ($req_free requests, $free_at calls)" "[ '$req_free' = $free_at ]"
check "429: the throttled replica was answered 429s ($req_throttled requests, $throttled_at calls)" "[ $req_throttled -gt $throttled_at ]"
check "429: the throttled replica answered fewer calls ($throttled_at < $free_at)" "[ $throttled_at -lt $free_at ]"
check "429: the summary counts each replica's requests and 429s" "grep -qF 'endpoint ${URLS[1]}: $req_throttled requests (retries included): $throttled_at ok, $((req_throttled - throttled_at)) answered 429, 0 failed' '$T/throttle.out' && grep -qF 'endpoint ${URLS[2]}: $req_free requests (retries included): $free_at ok, 0 answered 429, 0 failed, 0 cool-downs' '$T/throttle.out'"

# ---- max_in_flight and a budget over several endpoints --------------------------------------------
start_sims 2 "--judge sim-a:skill=2,latency=20" "--judge sim-a:skill=2,latency=20"
judges_file "    max_in_flight: 2
    price: {input_per_mtok: 1000, output_per_mtok: 1000}
" "${URLS[@]}"
DB="$T/budget.db"
set +e; sbs --jobs 16 --budget-usd 10 > "$T/budget.out" 2>&1; rc=$?; set -e
spent=$(q "select coalesce(sum(cost_usd), 0) from calls")
check "budget: stops with exit 3 within the budget over two endpoints (\$$spent)" "[ $rc = 3 ] && awk 'BEGIN{exit !($spent <= 10 && $spent > 0)}'"
check "budget: max_in_flight is in the run's parameters" "q 'select params from runs' | grep -qF '\"max_in_flight\":2'"
check "budget: its calls went to both endpoints" "[ \$(q 'select count(distinct endpoint_id) from calls') = 2 ]"
sbs --jobs 16 --budget-usd 1000 > "$T/budget2.out" 2>&1
check "budget: a rerun with a larger budget finishes ($((n_items * 2)) calls)" "[ \$(q 'select count(*) from calls where ok = 1') = $((n_items * 2)) ]"
# debate and discuss record every endpoint of their judges (and max_in_flight, the price), as sbs does
DB="$T/dialogues.db"
"$ARB" debate --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large --baseline cedar-small \
  --mode soft --agents "$T/judges.yaml:rep,rep,rep" --db "$DB" --no-progress 2>"$T/debate.out"
"$ARB" discuss --items "$T/items.jsonl" --answers "$T/answers.jsonl" --pairs atlas-large:cedar-small --turns 1 \
  --self "$T/judges.yaml:rep" --temperatures 0.2,0.8 --db "$DB" --no-progress 2>"$T/discuss.out"
eps="\"endpoints\":[\"${URLS[1]}\",\"${URLS[2]}\"]"
n_soft=$(q "select params from runs where protocol = 'soft'" | grep -oF "$eps" | wc -l || true)
n_self=$(q "select params from runs where protocol = 'self-discussion'" | grep -oF "$eps" | wc -l || true)
check "debate and discuss: the run's parameters list every endpoint of each judge ($n_soft agents, $n_self reviewers)" "[ $n_soft = 3 ] && [ $n_self = 2 ] && q \"select params from runs where protocol = 'self-discussion'\" | grep -qF '\"max_in_flight\":2'"
check "debate and discuss: the summaries count each endpoint's requests" "grep -qF 'endpoint ${URLS[1]}:' '$T/debate.out' && grep -qF 'endpoint ${URLS[2]}:' '$T/debate.out' && grep -qF 'endpoint ${URLS[2]}:' '$T/discuss.out'"
stop_sim 1; stop_sim 2

# ---- bad judges files ------------------------------------------------------------------------------
bad_file() { # NAME WANT: runs sbs on $T/judges.yaml, expects exit 2, WANT in stderr, no database
  DB="$T/bad-$1.db"
  set +e; sbs > "$T/bad.out" 2>&1; rc=$?; set -e
  check "bad file ($1): exit 2, no database, message" "[ $rc = 2 ] && [ ! -e '$DB' ] && grep -qF -- '$2' '$T/bad.out' && ! grep -q SECRET '$T/bad.out'"
}
printf 'judges:\n  - {name: rep, model: sim-a, url: http://h/v1, endpoints: [http://g/v1]}\n' > "$T/judges.yaml"
bad_file both 'field "endpoints": given with url'
printf 'judges:\n  - {name: rep, model: sim-a, endpoints: []}\n' > "$T/judges.yaml"
bad_file empty 'field "endpoints": expected a non-empty list of base URLs'
judges_file "" "http://127.0.0.1:8000/v1" "'http://u:SECRET@h:0/v1'"
bad_file bad-url 'judge 1: field "endpoints": entry 2: expected an http:// or https:// URL'

finish

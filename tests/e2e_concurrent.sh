#!/usr/bin/env bash
# End-to-end test of two processes on one database, and of the databases that failed commands
# leave behind:
#   - two `arbiter sbs` (then `tournament`, then `discuss`) started at once on one new database
#     against the simulated judge server: every call is sent once in all (the server's request
#     count equals the stored calls), both exit 0, and every judgment is the parse of the reply
#     stored with it. The judges sample at temperature 1, so a call sent twice would get a
#     different reply (the simulator varies repeated requests) and show as a contradiction;
#   - a run killed with SIGKILL holds leases on the calls it was sending: a run started right
#     after takes them over at once (the holder's pid is gone) and finishes everything;
#   - a run that another plan's run overlapped leaves no quick-rerun note: its rerun checks
#     every request (the store may hold the other run's judgments of the same items);
#   - a command that stops on bad input leaves no database behind when it created it, and
#     leaves an existing database exactly as it was.
set -euo pipefail
ARB=${1:?usage: e2e_concurrent.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

SIMS=(--judge "sim-a:skill=2,bias=0.3,tie=0.2,latency=40" --judge "sim-b:skill=3,tie=0.2,latency=40"
      --judge "sim-holder:skill=2,conformity=0,latency=40" --judge "sim-yielder:skill=2,conformity=1,latency=40")
# stop_sim: stops the simulator and sets REQUESTS to the number of requests it answered.
stop_sim() {
  kill -TERM "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""
  REQUESTS=$(sed -n 's/.*stopped after \([0-9]*\) requests.*/\1/p' "$T/sim.log")
  rm -f "$T/port"
}
write_judges() {
  cat > "$T/judges.yaml" <<EOF
judges:
  - {name: ja, url: $URL, model: sim-a, temperature: 1}
  - {name: jb, url: $URL, model: sim-b, temperature: 1}
  - {name: holder, url: $URL, model: sim-holder, temperature: 1}
  - {name: yielder, url: $URL, model: sim-yielder, temperature: 1}
EOF
}
q() { sqlite3 "$1" "$2"; }
# contradictions DB PROTOCOL: judgments of PROTOCOL whose position verdict is not the last
# [[X]] of the reply stored with them (the simulator ends every reply with one).
contradictions() {
  "$PY" - "$1" "$2" <<'PY'
import re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
bad = 0
for pv, content in db.execute("SELECT p.position_verdict, c.content FROM pairwise p "
                              "JOIN calls c ON c.id = p.call_id WHERE p.protocol = ?", (sys.argv[2],)):
    found = re.findall(r"\[\[([A-D])\]\]", content or "")
    if (found[-1] if found else "E") != pv:
        bad += 1
print(bad)
PY
}
# together ARGS...: runs the command twice at once (as two terminals would); sets RC1 RC2.
together() {
  "$@" 2>"$T/run1" & local p1=$!
  "$@" 2>"$T/run2" & local p2=$!
  set +e; wait $p1; RC1=$?; wait $p2; RC2=$?; set -e
}

# ---- two sbs runs at once on one new database ----------------------------------------------------
start_sim "${SIMS[@]}" --seed 5
DB="$T/sbs.db"
sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --temperature 1 --jobs 4 \
  --db "$DB" --no-progress "$@"; }
together sbs
stop_sim
calls=$((n_items * 2))
check "sbs: both runs exit 0 ($RC1, $RC2)" "[ $RC1 = 0 ] && [ $RC2 = 0 ]"
check "sbs: every call sent once ($REQUESTS requests for $calls calls)" "[ '$REQUESTS' = $calls ]"
check "sbs: $calls calls and judgments stored" "[ \$(q $DB 'select count(*) from calls where ok = 1') = $calls ] && [ \$(q $DB 'select count(*) from pairwise') = $calls ]"
check "sbs: every judgment is the parse of its stored reply" "[ \$(contradictions $DB sbs) = 0 ]"
check "sbs: no lease left, both runs finished" "[ \$(q $DB 'select count(*) from call_leases') = 0 ] && [ \"\$(q $DB 'select group_concat(status) from runs')\" = finished,finished ]"

# ---- two tournaments at once (two judges, dependent-free graph) ---------------------------------
start_sim "${SIMS[@]}" --seed 6
write_judges
DB="$T/tour.db"
head -n 3 "$T/judges.yaml" > "$T/two_judges.yaml"
tour() { "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --judges "$T/two_judges.yaml" --models atlas-large,cedar-small --jobs 4 --db "$DB" \
  --no-progress "$@"; }
together tour
stop_sim
stored=$(q "$DB" 'select count(*) from calls where ok = 1')
check "tournament: both runs exit 0 ($RC1, $RC2)" "[ $RC1 = 0 ] && [ $RC2 = 0 ]"
check "tournament: every call sent once ($REQUESTS requests, $stored calls)" "[ '$REQUESTS' = $stored ] && [ $stored -gt 0 ] && [ \$(q $DB 'select count(*) from calls') = $stored ]"
check "tournament: every judgment is the parse of its stored reply" "[ \$(contradictions $DB tournament) = 0 ] && [ \$(q $DB \"select count(*) from pairwise where protocol = 'tournament'\") = $stored ]"

# ---- two discussions at once (each turn depends on the replies before it) -----------------------
start_sim "${SIMS[@]}" --seed 7
write_judges
DB="$T/discuss.db"
disc() { "$ARB" discuss --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --pairs atlas-large:birch-medium --reviewers "$T/judges.yaml:holder,yielder" --turns 3 \
  --jobs 4 --db "$DB" --no-progress "$@"; }
together disc
stop_sim
stored=$(q "$DB" 'select count(*) from calls where ok = 1')
check "discuss: both runs exit 0 ($RC1, $RC2)" "[ $RC1 = 0 ] && [ $RC2 = 0 ]"
check "discuss: every call sent once ($REQUESTS requests, $stored calls)" "[ '$REQUESTS' = $stored ] && [ $stored -gt 0 ]"
check "discuss: one dialogue per item and order, each turn tied to a stored call" "[ \$(q $DB 'select count(*) from dialogues') = $((n_items * 2)) ] && [ \$(q $DB 'select count(*) from dialogue_turns t left join calls c on c.id = t.call_id where c.ok is not 1') = 0 ]"

# ---- a killed run's leases do not hold up the next one -------------------------------------------
start_sim --judge "sim-a:skill=2,latency=300" --seed 8
DB="$T/killed.db"
sbs_slow() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --jobs 8 --db "$DB" --no-progress "$@"; }
(exec "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --jobs 8 --db "$DB" \
  --no-progress 2>/dev/null) &
RUN_PID=$!
for _ in $(seq 100); do
  [ -f "$DB" ] && [ "$(q "$DB" 'select count(*) from call_leases' 2>/dev/null || echo 0)" -gt 0 ] && break
  sleep 0.05
done
sleep 0.4
kill -9 $RUN_PID 2>/dev/null || true
wait $RUN_PID 2>/dev/null || true
held=$(q "$DB" 'select count(*) from call_leases')
check "the killed run left leases behind ($held)" "[ $held -gt 0 ]"
t0=$(date +%s)
set +e; sbs_slow 2>"$T/run2"; rc=$?; set -e
t1=$(date +%s)
check "the next run takes them over at once and finishes (exit $rc, $((t1 - t0)) s)" "[ $rc = 0 ] && [ $((t1 - t0)) -lt 30 ] && [ \$(q $DB 'select count(*) from pairwise') = $((n_items * 2)) ]"
check "no lease left after it" "[ \$(q $DB 'select count(*) from call_leases') = 0 ]"
stop_sim

# ---- a run overlapped by another plan's run leaves no quick-rerun note ---------------------------
# Run A (the demo answers) is slow; run B, started while A runs, judges one answer changed and
# stores its two judgments of that item before A ends. A's rerun must not say "nothing to send"
# over a store holding B's judgments: it gives the full check's judgments.
start_sim --judge "sim-a:skill=2,latency=150" --seed 10
DB="$T/overlap.db"
sed '1s/"answer": "/"answer": "Changed. /' "$T/answers.jsonl" > "$T/answers_b.jsonl"
ov() { "$ARB" sbs --items "$T/items.jsonl" --answers "$1" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --jobs 1 --db "$DB" \
  --no-progress "${@:2}"; }
ov "$T/answers.jsonl" 2>"$T/ov_a" & A_PID=$!
for _ in $(seq 200); do
  [ "$(q "$DB" 'select count(*) from calls' 2>/dev/null || echo 0)" -gt 0 ] && break
  sleep 0.05
done
set +e; ov "$T/answers_b.jsonl" 2>"$T/ov_b"; RC_B=$?; wait $A_PID; RC_A=$?; set -e
ov "$T/answers.jsonl" 2>"$T/ov_rerun"
judgments_of() { q "$DB" 'select item_id, ord, call_id, position_verdict from pairwise order by 1, 2'; }
fast=$(judgments_of)
ov "$T/answers.jsonl" --full-check 2>/dev/null
full=$(judgments_of)
stop_sim
check "overlapping runs of two plans exit 0 ($RC_A, $RC_B)" "[ $RC_A = 0 ] && [ $RC_B = 0 ]"
check "the rerun of the overlapped run does not say nothing to send" "! grep -q 'nothing to send' '$T/ov_rerun'"
check "the rerun leaves the full check's judgments" "[ -n \"\$fast\" ] && [ \"\$fast\" = \"\$full\" ]"

# ---- bad input leaves no database behind, and an existing one intact ----------------------------
start_sim --judge "sim-a:skill=2" --seed 9
write_judges
printf '{"id":"x1","question":"q"}\n{"id":"x1","question":"again"}\n' > "$T/dup.jsonl"
printf 'not a battle\n' > "$T/bad_battles.jsonl"
IN=(--items "$T/items.jsonl" --answers "$T/answers.jsonl")
# bad_commands DB: each command with one bad input, writing to DB; sets BAD_OK=0 when one did
# not exit 2.
bad_commands() {
  local db=$1; BAD_OK=1
  local cmds=(
    "sbs ${IN[*]} --candidate nobody --baseline cedar-small --judge-url $URL --judge-model sim-a --db $db"
    "sbs ${IN[*]} --candidate atlas-large --baseline cedar-small --prompt $T/no-such-template --judge-url $URL --judge-model sim-a --db $db"
    "sbs --items $T/dup.jsonl --answers $T/answers.jsonl --candidate atlas-large --baseline cedar-small --judge-url $URL --judge-model sim-a --db $db"
    "tournament ${IN[*]} --judges $T/judges.yaml --models atlas-large,nobody --db $db"
    "debate ${IN[*]} --mode soft --agents $T/judges.yaml:ja,jb,ja --candidate atlas-large --baseline nobody --db $db"
    "discuss ${IN[*]} --pairs atlas-large:nobody --reviewers $T/judges.yaml:holder,yielder --db $db"
    "import arena $T/bad_battles.jsonl --db $db"
  )
  for c in "${cmds[@]}"; do
    set +e; "$ARB" $c >/dev/null 2>"$T/bad_err"; local rc=$?; set -e
    if [ $rc != 2 ]; then echo "exit $rc, not 2: $c"; cat "$T/bad_err"; BAD_OK=0; fi
    if [ -e "$db" ] && [ "$db" = "$T/new.db" ]; then echo "left $db: $c"; BAD_OK=0; rm -f "$db" "$db-wal" "$db-shm"; fi
  done
}
bad_commands "$T/new.db"
check "bad input to sbs, tournament, debate, discuss, import: exit 2 and no database created" "[ $BAD_OK = 1 ] && [ ! -e '$T/new.db' ]"
cp "$T/sbs.db" "$T/existing.db"
rm -f "$T/existing.db-wal" "$T/existing.db-shm"
before=$(sqlite3 "$T/existing.db" .dump | md5sum)
bad_commands "$T/existing.db"
after=$(sqlite3 "$T/existing.db" .dump | md5sum)
check "the same bad input leaves an existing database as it was" "[ $BAD_OK = 1 ] && [ -e '$T/existing.db' ] && [ '$before' = '$after' ]"
stop_sim

finish

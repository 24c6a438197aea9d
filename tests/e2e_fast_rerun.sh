#!/usr/bin/env bash
# End-to-end: a rerun of a finished side-by-side plan on an unchanged store says "nothing to
# send" without parsing its inputs (README "Fast resume and bounded memory"), prints the summary
# a rerun that checks every request prints, and anything that changes what would be sent or
# stored (a byte of an input file, a judge's sampling, the template, options, repetitions, an
# item, answer, judgment or call changed or deleted in the store) takes the full check instead.
ARB=${1:?usage: e2e_fast_rerun.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
start_sim --judge "sim-a:skill=4,bias=0.5" --judge "sim-b:skill=2,invalid=0.2" --seed 3
N=$((n_items * 2))
ITEMS=$T/items.jsonl ANSWERS=$T/answers.jsonl
sbs() { "$ARB" sbs --items "$ITEMS" --answers "$ANSWERS" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --no-progress "$@"; }
FAST='nothing to send (--full-check checks every request)'
# summary LOG: the run's summary line without its seconds
summary() { grep "^sbs: [0-9]* judge calls" "$1" | sed 's/; [0-9.]* s$//'; }
# fresh NAME: a copy of the finished store, to change one thing in
fresh() { cp "$T/base.db" "$T/$1.db"; echo "$T/$1.db"; }
sent() { grep -o "judge calls: [0-9]* stored before, [0-9]* sent" "$1" | sed 's/.*, //'; }

sbs --db "$T/base.db" --jobs 8 2>"$T/run1"
check "the first run sends every call" "grep -q '$N judge calls: 0 stored before, $N sent' '$T/run1'"
check "the first run does not claim to skip" "! grep -q 'nothing to send' '$T/run1'"
check "the finished run notes its plan in its stats" \
  "[ \"\$(sqlite3 '$T/base.db' \"select json_extract(stats, '\$.plan.planned') from runs where id = 1\")\" = $N ]"
check "no -wal left after the run" "[ ! -s '$T/base.db-wal' ]"

# The rerun: reads no input, sends nothing, says so, and prints the full check's summary.
db=$(fresh same)
sbs --db "$db" --jobs 3 2>"$T/fast" # --jobs does not change the plan
check "a rerun of the finished plan says nothing to send" \
  "grep -q 'unchanged since run 1, whose $N judgments are all still stored: $FAST' '$T/fast'"
sbs --db "$db" --full-check 2>"$T/full"
check "--full-check checks every request" "! grep -q 'nothing to send' '$T/full'"
check "the rerun's summary is the full check's" \
  "[ -n \"\$(summary '$T/fast')\" ] && [ \"\$(summary '$T/fast')\" = \"\$(summary '$T/full')\" ]"
check "both send nothing" "[ \"\$(sent '$T/fast')\" = '0 sent' ] && [ \"\$(sent '$T/full')\" = '0 sent' ]"
check "the quick rerun is recorded as a finished run" \
  "[ \"\$(sqlite3 '$db' \"select status || ' ' || json_extract(stats, '\$.cached') from runs where id = 2\")\" = 'finished $N' ]"
sbs --db "$db" 2>"$T/again"
check "after --full-check the next rerun is quick again" "grep -q 'unchanged since run 3' '$T/again'"
judgments "$T/base.db" >"$T/base.judgments"
judgments "$db" >"$T/same.judgments"
check "the judgments are unchanged" "cmp -s '$T/base.judgments' '$T/same.judgments'"
check "--help documents --full-check" "\"\$ARB\" sbs --help >'$T/help' && grep -q -- '--full-check' '$T/help'"

# slow CASE DB EXPECT_SENT [ARGS...]: the rerun of CASE must check every request and send
# EXPECT_SENT calls (- : the run must fail instead).
slow() {
  local name=$1 db=$2 expect=$3; shift 3
  local rc=0
  sbs --db "$db" "$@" 2>"$T/$name.log" || rc=$?
  if grep -q 'nothing to send' "$T/$name.log"; then bad "$name: checks every request"; return; fi
  if [ "$expect" = - ]; then
    check "$name: checks every request (and fails as before)" "[ $rc != 0 ]"
  else
    check "$name: checks every request and sends $expect" "[ $rc = 0 ] && [ \"\$(sent '$T/$name.log')\" = '$expect sent' ]"
  fi
}

# input files: a changed question, a byte that changes nothing, a moved file
cp "$T/items.jsonl" "$T/items.orig"
sed -i '1s/A bat and a ball/A bat and one ball/' "$T/items.jsonl"
slow "a changed question" "$(fresh q)" 2
cp "$T/items.orig" "$T/items.jsonl"
printf '\n' >>"$T/answers.jsonl"
db=$(fresh blank)
slow "a blank line added to the answers" "$db" 0
sbs --db "$db" 2>"$T/blank2"
check "a blank line added to the answers: the next rerun is quick" "grep -q 'nothing to send' '$T/blank2'"
cp "$T/items.orig" "$T/items.jsonl"
cp "$SRC/demo/answers.jsonl" "$T/answers.jsonl"
mkdir "$T/moved"; cp "$T/items.jsonl" "$T/moved/"
ITEMS=$T/moved/items.jsonl slow "the items read from another path (stored as their source)" "$(fresh moved)" 0

# the judge, the template, the plan's shape
slow "another temperature under the same judge name" "$(fresh temp)" - --temperature 0.5
slow "another template" "$(fresh tpl)" "$N" --prompt II
slow "another option mode" "$(fresh opt)" "$N" --options 3
slow "more repetitions" "$(fresh reps)" "$N" --reps 2
cp "$SRC/templates/II-reason.txt" "$T/mine.txt"
db=$(fresh tplfile)
sbs --db "$db" --prompt "$T/mine.txt" 2>/dev/null
sed -i '0,/answer/s/answer/Answer/' "$T/mine.txt"
slow "a template file edited" "$db" "$N" --prompt "$T/mine.txt"

# the store: store_case NAME SQL SENT QUERY EXPECTED -- the rerun on a copy of the finished
# store changed by SQL checks every request, sends SENT calls and leaves QUERY reading EXPECTED
store_case() {
  local db; db=$(fresh "case$((++cases))")
  sqlite3 "$db" "pragma foreign_keys = off; $2"
  slow "$1" "$db" "$3"
  check "$1: the full check repairs it" "[ \"\$(sqlite3 '$db' \"$4\")\" = '$5' ]"
}
cases=0
store_case "three judgments deleted (their calls still stored)" \
  "delete from pairwise where (item_id, ord) in (select item_id, ord from pairwise order by item_id, ord limit 3)" 0 \
  "select count(*) from pairwise" "$N"
store_case "a call deleted" \
  "delete from calls where id = (select call_id from pairwise order by item_id, ord limit 1)" 1 \
  "select count(*) from calls where ok = 1" "$N"
store_case "an item deleted" "delete from items where id = 'demo-001'" 0 \
  "select count(*) from items where id = 'demo-001'" 1
store_case "an answer edited in the store" \
  "update answers set answer = 'edited' where item_id = 'demo-002' and model = 'atlas-large'" 0 \
  "select answer = 'edited' from answers where item_id = 'demo-002' and model = 'atlas-large'" 0
store_case "a stored reply edited (the full check parses it again)" \
  "update calls set content = 'Edited. [[C]]' where id = (select call_id from pairwise where item_id = 'demo-001' and ord = 0)" 0 \
  "select position_verdict from pairwise where item_id = 'demo-001' and ord = 0" C
store_case "a verdict changed in the store" \
  "update pairwise set position_verdict = 'E', model_verdict = 'e' where item_id = 'demo-001' and ord = 0" 0 \
  "select position_verdict = 'E' from pairwise where item_id = 'demo-001' and ord = 0" 0

# two judges from a judges file, one of which gives replies without a verdict
cat >"$T/judges.yaml" <<YAML
judges:
  - name: judge-a
    url: $URL
    model: sim-a
  - name: judge-b
    url: $URL
    model: sim-b
    temperature: 0
YAML
jsbs() { "$ARB" sbs --items "$ITEMS" --answers "$ANSWERS" --candidate atlas-large \
  --baseline cedar-small --judges "$T/judges.yaml" --no-progress "$@"; }
jsbs --db "$T/two.db" 2>/dev/null
jsbs --db "$T/two.db" 2>"$T/two_fast"
jsbs --db "$T/two.db" --full-check 2>"$T/two_full"
check "two judges: a rerun says nothing to send" "grep -q '$((2 * N)) judgments are all still stored' '$T/two_fast'"
check "two judges: the summary, replies without a verdict included, is the full check's" \
  "grep -q ' [1-9][0-9]* without a valid verdict' '$T/two_full' && [ \"\$(summary '$T/two_fast')\" = \"\$(summary '$T/two_full')\" ]"
sed -i 's/name: judge-b/name: judge-c/' "$T/judges.yaml"
jsbs --db "$T/two.db" 2>"$T/two_renamed"
check "two judges: a judge renamed in the file takes the full check (its calls reused)" \
  "! grep -q 'nothing to send' '$T/two_renamed' && grep -q ' 0 sent' '$T/two_renamed' &&
   [ \$(sqlite3 '$T/two.db' \"select count(*) from pairwise where judge_name = 'judge-c'\") = $N ]"

# runs that leave no note: interrupted, dry run
db=$(fresh dry)
sbs --db "$db" --dry-run 2>"$T/dry"
check "a dry run of a finished plan still plans (no quick path)" "grep -q 'sbs plan: $N judge calls, $N already stored' '$T/dry'"
sqlite3 "$T/base.db" "update runs set status = 'interrupted' where id = 1"
slow "the noted run did not finish" "$(fresh interrupted)" 0

# debate and discuss (README "Resume and caching"): the same quick rerun from a plan note
# (their inputs are parsed: the note fingerprints the records), the full check's summary, and
# an edited answer or another option takes the full check
cp "$SRC/demo/answers.jsonl" "$T/answers.orig"
cp "$T/answers.orig" "$T/answers.jsonl"
cp "$T/items.orig" "$T/items.jsonl"
debate() { "$ARB" debate --mode soft --agents "$T/judges.yaml:judge-a,judge-c,judge-a" --items "$ITEMS" \
  --answers "$ANSWERS" --candidate atlas-large --baseline cedar-small --no-progress "$@"; }
discuss() { "$ARB" discuss --reviewers "$T/judges.yaml:judge-a,judge-c" --leader first --turns 2 \
  --items "$ITEMS" --answers "$ANSWERS" --pairs atlas-large:cedar-small --no-progress "$@"; }
for cmd in debate discuss; do
  db=$T/$cmd.db
  $cmd --db "$db" 2>"$T/$cmd.1"
  $cmd --db "$db" 2>"$T/$cmd.fast"
  $cmd --db "$db" --full-check 2>"$T/$cmd.full"
  line() { grep "^$cmd: [0-9]* judge calls" "$1" | sed 's/; [0-9.]* s$//'; }
  check "$cmd: a rerun of the finished plan says nothing to send" \
    "grep -q '^$cmd: inputs, judges and templates unchanged since run 1, whose [0-9]* judge calls are all still stored: nothing to send' '$T/$cmd.fast'"
  check "$cmd: --full-check checks every call, with the same summary, nothing sent" \
    "! grep -q 'nothing to send' '$T/$cmd.full' && [ -n \"\$(line '$T/$cmd.fast')\" ] && [ \"\$(line '$T/$cmd.fast')\" = \"\$(line '$T/$cmd.full')\" ] && grep -q ' 0 sent' '$T/$cmd.full'"
  sed -i '0,/"model": *"atlas-large"/s/\("answer": *"\)/\1edited /' "$ANSWERS"
  $cmd --db "$db" 2>"$T/$cmd.edited"
  check "$cmd: an edited answer takes the full check and sends its calls" \
    "! grep -q 'nothing to send' '$T/$cmd.edited' && ! grep -q ' 0 sent' '$T/$cmd.edited'"
  cp "$T/answers.orig" "$T/answers.jsonl"
  $cmd --db "$db" --reps 2 2>"$T/$cmd.reps"
  check "$cmd: another number of repetitions takes the full check" "! grep -q 'nothing to send' '$T/$cmd.reps'"
done

# a debate killed with kill -9 mid-way notes nothing: its rerun sends exactly the missing calls
# (no dialogue left open), and the rerun after that one is quick
# (a provider with 20 ms of latency, so the kill lands mid-way)
"$ARB" sim-server --port 0 --port-file "$T/port2" --items "$ITEMS" --answers "$ANSWERS" \
  --judge "sim-a:skill=4,bias=0.5,latency=20" --judge "sim-b:skill=2,invalid=0.2,latency=20" \
  --seed 3 2>"$T/sim2.log" & SIM2=$!
for _ in $(seq 100); do [ -s "$T/port2" ] && break; sleep 0.05; done
sed "s|$URL|http://127.0.0.1:$(cat "$T/port2")/v1|" "$T/judges.yaml" > "$T/slow.yaml"
db=$T/kill.db
(exec "$ARB" debate --mode soft --agents "$T/slow.yaml:judge-a,judge-c,judge-a" --items "$ITEMS" \
  --answers "$ANSWERS" --candidate atlas-large --baseline cedar-small --no-progress --jobs 2 \
  --db "$db" 2>/dev/null) &
pid=$!
wait_for_count "$db" "select count(*) from calls where ok=1" 0
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
kill $SIM2 2>/dev/null; wait $SIM2 2>/dev/null || true
before=$(sqlite3 "$db" "select count(*) from calls where ok=1")
total=$((N * 3))
debate --db "$db" 2>"$T/kill.2"
check "debate killed with $before of $total calls stored: the rerun sends exactly the other $((total - before))" \
  "[ $before -lt $total ] && grep -q '^debate: $total judge calls: $before stored before, $((total - before)) sent' '$T/kill.2' && ! grep -q 'nothing to send' '$T/kill.2'"
check "debate after the kill: every dialogue ended, every judgment stored once" \
  "[ \$(sqlite3 '$db' \"select count(*) from dialogues where status <> 'done'\") = 0 ] && [ \$(sqlite3 '$db' \"select count(*) from pairwise where protocol = 'soft'\") = $N ]"
debate --db "$db" 2>"$T/kill.3"
check "debate after the kill: the next rerun is quick" "grep -q 'nothing to send' '$T/kill.3'"
finish

#!/usr/bin/env bash
# End-to-end test of Batch API rounds (issue 16): dependent calls (a debate's agent 2 and judge
# turns, a discussion's later turns) need the earlier turns' replies, so they go in later
# batches. One `--batch wait` goes round after round (submit what is ready, wait, collect,
# judge, submit what became ready) until the run is complete; `--batch submit` then `--batch
# collect` repeated progress the same way, collect saying how many calls are still to come.
# Against the simulator's Batch API (sim_batch.c): soft and hard debates and a discussion end
# with the same verdicts and transcripts as a normal HTTP run; a wait killed -9 between rounds
# resumes from the store.
set -euo pipefail
ARB=${1:?usage: e2e_batch_rounds.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

start_sim --judge "sim-fair:skill=4" --judge "sim-yielder:skill=2,bias=0.5,conformity=1" --seed 11 --batch-delay 150
cat > "$T/judges.yaml" <<EOF2
judges:
  - name: fair
    url: $URL
    model: sim-fair
  - name: yielder
    url: $URL
    model: sim-yielder
EOF2
IN=(--items "$T/items.jsonl" --answers "$T/answers.jsonl" --no-progress)
debate() { "$ARB" debate "${IN[@]}" --candidate atlas-large --baseline birch-medium --agents "$T/judges.yaml:fair,yielder,fair" "$@"; }
discuss() { "$ARB" discuss "${IN[@]}" --pairs atlas-large:birch-medium --reviewers "$T/judges.yaml:fair,yielder" --leader first --turns 3 "$@"; }
q() { sqlite3 "$1" "$2"; }
same() { cmp -s <(judgments "$1") <(judgments "$2") && cmp -s <(judgments "$1" transcripts) <(judgments "$2" transcripts); }
rounds_of() { sed -n 's/.*batch: \([0-9]*\) rounds\{0,1\} of batches.*/\1/p' "$1"; }
n_judgments=$((n_items * 2))

# ---- one --batch wait runs every round -------------------------------------------------------
for mode in soft hard; do
  debate --mode $mode --db "$T/$mode-http.db" 2>/dev/null
  debate --mode $mode --db "$T/$mode-batch.db" --batch wait --poll 0.05 2>"$T/err"
  check "$mode debate: one --batch wait does the three rounds (agent 1, agent 2, judge)" "[ '$(rounds_of "$T/err")' = 3 ] && grep -q 'nothing to queue, every call of the plan is stored' '$T/err' && [ \$(q '$T/$mode-batch.db' 'select count(*) from batches') = 3 ]"
  check "$mode debate: the verdicts and transcripts equal a normal HTTP run's" "[ \$(q '$T/$mode-batch.db' \"select count(*) from pairwise where protocol = '$mode'\") = $n_judgments ] && same '$T/$mode-http.db' '$T/$mode-batch.db'"
done
discuss --db "$T/disc-http.db" 2>/dev/null
discuss --db "$T/disc-batch.db" --batch wait --poll 0.05 2>"$T/err"
check "discussion: one --batch wait sends turn after turn (2 initial reviews, 3 turns: 4 rounds)" "[ '$(rounds_of "$T/err")' = 4 ] && grep -q 'nothing to queue' '$T/err'"
check "discussion: the turns and final verdicts equal a normal HTTP run's" "[ \$(q '$T/disc-batch.db' 'select count(*) from dialogues') = \$(q '$T/disc-http.db' 'select count(*) from dialogues') ] && same '$T/disc-http.db' '$T/disc-batch.db' && [ \"\$(q '$T/disc-http.db' 'select final_verdict, status, count(*) from dialogues group by 1, 2')\" = \"\$(q '$T/disc-batch.db' 'select final_verdict, status, count(*) from dialogues group by 1, 2')\" ]"
debate --mode soft --db "$T/soft-batch.db" --batch wait --poll 0.05 2>"$T/err"
check "a second --batch wait on a complete run submits nothing" "[ '$(rounds_of "$T/err")' = 0 ] && [ \$(q '$T/soft-batch.db' 'select count(*) from batches') = 3 ]"

# ---- pointwise grades with logprobs through --batch wait: the same expected grades ----------------
cat > "$T/grade.yaml" <<EOF2
judges:
  - {name: gtok, url: $URL, model: sim-fair, logprobs: true, top_logprobs: 10}
EOF2
grade() { "$ARB" grade "${IN[@]}" --model atlas-large --mode grade --judges "$T/grade.yaml" "$@"; }
grade --db "$T/g-http.db" 2>/dev/null
grade --db "$T/g-batch.db" --batch wait --poll 0.05 2>/dev/null
"$ARB" consistency --db "$T/g-http.db" --json | jq -c '.logprobs' > "$T/g-http.json"
"$ARB" consistency --db "$T/g-batch.db" --json | jq -c '.logprobs' > "$T/g-batch.json"
check "grade through --batch wait: every grade has its distribution, the expected grades equal a normal run's" "[ \$(q '$T/g-batch.db' \"select count(*) from pointwise w join calls c on c.id = w.call_id where w.value is not null and json_type(c.logprobs, '\$.expected') = 'real'\") -gt 0 ] && [ \$(q '$T/g-batch.db' \"select count(*) from pointwise w join calls c on c.id = w.call_id where w.value is not null and c.logprobs is null\") = 0 ] && jq -e '.[0].expected_grade != null' '$T/g-batch.json' >/dev/null && cmp -s '$T/g-http.json' '$T/g-batch.json'"

# ---- kill -9 between rounds, then resume -----------------------------------------------------
# a slower provider (batches take 1 s), so the kill lands while round 2's batch runs
"$ARB" sim-server --port 0 --port-file "$T/port2" --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --judge "sim-fair:skill=4" --judge "sim-yielder:skill=2,bias=0.5,conformity=1" --seed 11 \
  --batch-delay 1000 2>"$T/sim2.log" & SIM2=$!
for _ in $(seq 100); do [ -s "$T/port2" ] && break; sleep 0.05; done
sed "s|$URL|http://127.0.0.1:$(cat "$T/port2")/v1|" "$T/judges.yaml" > "$T/slow.yaml"
slow_debate() { "$ARB" debate "${IN[@]}" --candidate atlas-large --baseline birch-medium --agents "$T/slow.yaml:fair,yielder,fair" "$@"; }
"$ARB" debate "${IN[@]}" --candidate atlas-large --baseline birch-medium --agents "$T/slow.yaml:fair,yielder,fair" \
  --mode hard --db "$T/kill.db" --batch wait --poll 0.05 2>/dev/null & waiter=$!
for _ in $(seq 200); do
  [ "$(q "$T/kill.db" 'select count(*) from batches' 2>/dev/null || echo 0)" -ge 2 ] && break
  sleep 0.02
done
kill -9 $waiter; wait $waiter 2>/dev/null || true
check "killed -9 while round 2 runs: round 1 collected and judged, round 2's batch stored" "[ \$(q '$T/kill.db' 'select count(*) from batches') = 2 ] && [ \$(q '$T/kill.db' 'select count(*) from batches where collected = 1') = 1 ] && [ \$(q '$T/kill.db' 'select count(*) from pairwise') = 0 ]"
slow_debate --mode hard --db "$T/kill.db" --batch wait --poll 0.05 2>"$T/err"
check "a new --batch wait resumes: polls round 2's batch, then sends round 3" "[ \$(q '$T/kill.db' 'select count(*) from batches') = 3 ] && [ \$(q '$T/kill.db' 'select sum(n_calls) from batches') = $((n_judgments * 3)) ] && grep -q 'nothing to queue' '$T/err'"
check "the resumed run's verdicts equal a normal HTTP run's" "same '$T/hard-http.db' '$T/kill.db'"
kill $SIM2 2>/dev/null; wait $SIM2 2>/dev/null || true

# ---- --batch submit / --batch collect, repeated ----------------------------------------------
round=0
while [ $round -lt 10 ]; do
  round=$((round + 1))
  discuss --db "$T/sc.db" --batch submit 2>"$T/err.submit.$round"
  for _ in $(seq 200); do
    discuss --db "$T/sc.db" --batch collect 2>"$T/err.$round"
    [ "$(q "$T/sc.db" 'select count(*) from batches where collected = 0')" = 0 ] && break
    sleep 0.05
  done
  grep -q 'nothing to queue' "$T/err.$round" && break
done
check "submit then collect, repeated: one round per turn" "[ $round = 4 ] && [ \$(q '$T/sc.db' 'select count(*) from batches') = 4 ]"
check "collect after a round says how many calls are still to come and that another submit sends them" "grep -q '$((n_judgments * 3)) calls still to come: $n_judgments queued, $((n_judgments * 2)) wait for their replies (a later round); another --batch submit sends them' '$T/err.1'"
check "submit/collect rounds end with the same verdicts as a normal HTTP run" "same '$T/disc-http.db' '$T/sc.db'"
finish

#!/usr/bin/env bash
# End-to-end tests of judging against real-provider features (issue 16) over HTTP with the
# simulated judge server on the demo benchmark (40 items):
#   - `arbiter sbs --judges FILE:NAME[,NAME...]`: the judges file of `tournament` names the
#     judges of a side-by-side run; several names = several judges, each judging everything;
#     bad input (unknown name, --judges with --judge-url, a missing file) exits 2, sends nothing.
#   - reasoning models: judges that think (the simulator's think= modes, thinking that holds a
#     misleading verdict) give exactly the verdicts of the same judges without thinking, in
#     every protocol (sbs, tournament, debate, discussion, pointwise grade, persona); the
#     thinking is stored in calls.reasoning with its token counts, never in content; a reply
#     cut while thinking is verdict E; reasoning_effort and max_completion_tokens are sent.
#   - structured output: a template's "#! response_format" JSON schema is sent only to a judge
#     whose judges file says response_format: true; the simulator answers it in JSON, which
#     gives the same verdicts as the plain reply; a bad response_format is refused with 400.
set -euo pipefail
ARB=${1:?usage: e2e_providers.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"

start_sim --judge "sim-a:skill=4,bias=0.5,tie=0.3,latency=0" \
  --judge "sim-b:skill=2,bias=-0.3,tie=0.3,latency=0" --seed 11
cat > "$T/judges.yaml" <<EOF
judges:
  - name: judge-a
    url: $URL
    model: sim-a
  - name: judge-b
    url: $URL
    model: sim-b
    temperature: 0.5
  - name: judge-unused
    url: $URL
    model: sim-a
    seed: 3
EOF
sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --no-progress "$@"; }

# ---- 0. sbs --judges: bad input first (exit 2, nothing stored) -----------------------------------
set +e; sbs --judges "$T/judges.yaml:judge-a,nobody" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "an unknown judge name exits 2 and names it" "[ $rc = 2 ] && grep -q 'no judge named \"nobody\"' '$T/err'"
check "nothing is stored for an unknown name" "[ ! -e '$T/bad.db' ]"
set +e; sbs --judges "$T/judges.yaml:judge-a" --judge-url "$URL" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "--judges with --judge-url exits 2" "[ $rc = 2 ] && grep -q 'not both' '$T/err'"
set +e; sbs --judges "$T/judges.yaml:judge-a" --temperature 1 --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "--judges with a sampling flag exits 2" "[ $rc = 2 ] && grep -q 'not both' '$T/err'"
set +e; sbs --judges "$T/no-such.yaml:judge-a" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "a missing judges file exits 2 and names it" "[ $rc = 2 ] && grep -q 'no-such.yaml' '$T/err'"
set +e; sbs --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "no judge at all exits 2" "[ $rc = 2 ] && grep -q 'missing --judges or --judge-model' '$T/err'"
check "no database was left behind by bad input" "[ ! -e '$T/bad.db' ]"
set +e; "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" --judges "$T/judges.yaml:judge-a,nobody" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "tournament: an unknown judge name exits 2 and names it" "[ $rc = 2 ] && grep -q 'no judge named \"nobody\"' '$T/err'"
"$ARB" sbs --help > "$T/help"
check "sbs --help documents --judges" "grep -q -- '--judges FILE:NAME' '$T/help'"

# ---- 0. two judges of the file in one run -----------------------------------------------------------
calls=$((n_items * 2 * 2))
sbs --judges "$T/judges.yaml:judge-a,judge-b" --db "$DB" --dry-run 2>"$T/plan"
check "dry run plans items x 2 orders x 2 judges = $calls calls" "grep -q 'sbs plan: $calls judge calls, 0 already stored' '$T/plan'"
sbs --judges "$T/judges.yaml:judge-a,judge-b" --db "$DB" --jobs 8 2>"$T/run1"
check "the run sends $calls calls" "grep -q 'sbs: $calls judge calls: 0 stored before, $calls sent ($calls ok, 0 failed)' '$T/run1'"
check "each judge judged every item in both orders" "[ \"\$(sqlite3 '$DB' \"select group_concat(judge_name || ':' || n, ' ') from (select judge_name, count(*) n from pairwise where protocol='sbs' group by judge_name order by judge_name)\")\" = 'judge-a:$((n_items * 2)) judge-b:$((n_items * 2))' ]"
sent_calls "$DB"
check "judge-b's calls carry its own sampling (temperature 0.5)" "[ \$(sqlite3 '$DB.sent.db' \"select count(*) from calls where judge_name='judge-b' and json_extract(request, '\$.temperature') = 0.5\") = $((n_items * 2)) ]"
check "both judges are recorded" "[ \$(sqlite3 '$DB' \"select count(*) from judges where name in ('judge-a','judge-b')\") = 2 ]"
check "the run lists its judges" "[ \$(sqlite3 '$DB' \"select json_array_length(params, '\$.judges') from runs where protocol='sbs'\") = 2 ]"
sbs --judges "$T/judges.yaml:judge-b,judge-a" --db "$DB" 2>"$T/run2"
check "a rerun (names in another order) sends nothing" "grep -q 'sbs: $calls judge calls: $calls stored before, 0 sent' '$T/run2'"
# The same judge through the one-endpoint shortcut reuses judge-a's calls: one name, one config.
sbs --judge-url "$URL" --judge-model sim-a --judge-name judge-a --db "$DB" 2>"$T/run3"
check "the --judge-url shortcut finds judge-a's calls stored" "grep -q 'sbs: $((n_items * 2)) judge calls: $((n_items * 2)) stored before, 0 sent' '$T/run3'"
# tournament takes FILE:NAMES too: only those judges review.
"$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" --models atlas-large,cedar-small \
  --judges "$T/judges.yaml:judge-b" --db "$T/tour.db" --no-progress 2>"$T/tour.err"
check "tournament --judges FILE:judge-b: only judge-b reviews" "[ \"\$(sqlite3 '$T/tour.db' \"select group_concat(distinct judge_name) from pairwise\")\" = judge-b ] && [ \$(sqlite3 '$T/tour.db' 'select count(*) from pairwise') = $((n_items * 2)) ] && [ \$(sqlite3 '$T/tour.db' \"select json_array_length(params, '\$.judges') from runs\") = 1 ]"
# A whole file without :NAMES takes every judge.
sbs --judges "$T/judges.yaml" --db "$DB" --dry-run 2>"$T/plan2"
check "FILE alone takes every judge of the file" "grep -q 'sbs plan: $((n_items * 2 * 3)) judge calls, $calls already stored' '$T/plan2'"

# ---- 4. reasoning models ---------------------------------------------------------------------
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""
# sim2 SPEC...: a simulator on the demo benchmark, seed 5 (URL2, SIM_PID).
sim2() { rm -f "$T/port"; start_sim --seed 5 "$@"; URL2=$URL; }
sim2_stop() { kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""; }
cat > "$T/ids.yaml" <<'YAML'
categories:
  gender: [female, male]
YAML
# every_protocol DB EXTRA...: runs every judging protocol with judges r1, r2, r3 of the
# simulator at URL2 (model sim-x, or with EXTRA the judges file's extra lines).
every_protocol() {
  local db=$1; shift
  { echo "judges:"; for j in r1 r2 r3; do
      printf '  - name: %s\n    url: "%s"\n    model: sim-x\n' "$j" "$URL2"
      for x in "$@"; do printf '    %s\n' "$x"; done; done; } > "$T/rj.yaml"
  local IN=(--items "$T/items.jsonl" --answers "$T/answers.jsonl" --db "$db" --no-progress)
  "$ARB" sbs "${IN[@]}" --candidate atlas-large --baseline cedar-small --judges "$T/rj.yaml:r1" 2>>"$T/every.err" || { cat "$T/every.err"; return 1; }
  "$ARB" tournament "${IN[@]}" --models atlas-large,birch-medium --judges "$T/rj.yaml:r1" 2>>"$T/every.err" || { cat "$T/every.err"; return 1; }
  "$ARB" debate "${IN[@]}" --candidate atlas-large --baseline birch-medium --mode soft \
    --agents "$T/rj.yaml:r1,r2,r3" 2>>"$T/every.err" || { cat "$T/every.err"; return 1; }
  "$ARB" discuss "${IN[@]}" --pairs atlas-large:birch-medium --reviewers "$T/rj.yaml:r1,r2" \
    --turns 2 2>>"$T/every.err" || { cat "$T/every.err"; return 1; }
  "$ARB" grade "${IN[@]}" --model atlas-large --task math --mode grade --judges "$T/rj.yaml:r1" 2>>"$T/every.err" || { cat "$T/every.err"; return 1; }
  "$ARB" persona run --scenarios "$SRC/demo/scenarios.jsonl" --identities "$T/ids.yaml" \
    --category gender --phase 1 --judges "$T/rj.yaml:r1" --db "$db" --no-progress 2>>"$T/every.err" || { cat "$T/every.err"; return 1; }
}
# verdicts DB: every verdict of every protocol, in a fixed order.
verdicts() {
  sqlite3 "$1" "select protocol, judge_name, item_id, candidate, baseline, ord, position_verdict from pairwise order by 1,2,3,4,5,6;
    select judge_name, item_id, model, kind, value from pointwise order by 1,2,3;
    select d.kind, d.item_id, d.answer1, d.rep, t.turn, t.speaker, t.verdict from dialogue_turns t join dialogues d on d.id = t.dialogue_id order by 1,2,3,4,5;
    select kind, item_id, answer1, rep, final_verdict from dialogues order by 1,2,3,4;
    select s.protocol, s.judge_name, s.item_id, s.subject, p.identity, s.position, s.metric, s.value from scores s left join personas p on p.id = s.persona_id order by 1,2,3,4,5,6,7;"
}
q() { sqlite3 "$1" "$2"; }

sim2 --judge "sim-x:invalid=0.25,conformity=0.5"
every_protocol "$T/plain.db" "reasoning_effort: high"
sim2_stop
verdicts "$T/plain.db" > "$T/plain.txt"
check "the plain run judged in every protocol" "[ \$(q '$T/plain.db' 'select count(distinct protocol) from pairwise') = 3 ] && [ \$(q '$T/plain.db' 'select count(*) from pointwise') = $n_items ] && [ \$(q '$T/plain.db' \"select count(*) from dialogues where kind like '%discussion'\") = $((n_items * 2)) ] && [ \$(q '$T/plain.db' 'select count(*) from scores') -gt 0 ]"
check "some plain replies hold no verdict (invalid=0.25)" "[ \$(q '$T/plain.db' \"select count(*) from pairwise where position_verdict='E'\") -gt 0 ]"
for mode in tag open reasoning_content reasoning; do
  sim2 --judge "sim-x:invalid=0.25,conformity=0.5,think=$mode"
  every_protocol "$T/$mode.db" "reasoning_effort: high"
  sim2_stop
  verdicts "$T/$mode.db" > "$T/$mode.txt"
  check "think=$mode: every verdict of every protocol equals the plain judge's" "cmp -s '$T/plain.txt' '$T/$mode.txt' || { diff '$T/plain.txt' '$T/$mode.txt' | head -6; false; }"
  check "think=$mode: the thinking is stored for every call, with its tokens" "[ \$(q '$T/$mode.db' \"select count(*) from calls where reasoning like 'Simulated thinking%[[_]]%' and reasoning_tokens > 0 and cached_tokens is not null\") = \$(q '$T/$mode.db' 'select count(*) from calls') ]"
  check "think=$mode: no content holds thinking" "[ \$(q '$T/$mode.db' \"select count(*) from calls where content like '%think>%' or content like '%Simulated thinking%'\") = 0 ]"
done
# sent_matching DB WHERE: the calls whose request as sent matches: the side-by-side and grade
# ones read back through export (stored compact, or TEXT), the others as stored (TEXT)
sent_matching() {
  sent_calls "$1"
  echo $(( $(q "$1.sent.db" "select count(*) from calls where $2") +
           $(q "$1" "select count(*) from calls where typeof(request) = 'text' and $2 and id not in (select call_id from pointwise where call_id is not null)") ))
}
check "reasoning_effort is sent, the reasoning defaults are not" "[ \$(sent_matching '$T/tag.db' \"json_extract(request, '\$.reasoning_effort') = 'high' and json_type(request, '\$.temperature') is null and json_type(request, '\$.max_tokens') is null\") = \$(q '$T/tag.db' 'select count(*) from calls') ]"
"$ARB" export --db "$T/tag.db" --format jsonl > "$T/tag.jsonl"
check "export jsonl adds reasoning, reasoning_tokens, cached_tokens" "jq -e 'has(\"reasoning\") and has(\"reasoning_tokens\") and has(\"cached_tokens\") and (.reasoning | startswith(\"Simulated thinking\"))' '$T/tag.jsonl' | grep -qvx false"
"$ARB" export --db "$T/tag.db" --format transcripts > "$T/tag_tr.jsonl"
check "export transcripts: every turn has its thinking under reasoning, none in reply" "[ \"\$(jq -r '.turns[] | ((.reasoning | startswith(\"Simulated thinking\")) and (.reply | contains(\"think>\") | not))' '$T/tag_tr.jsonl' | sort -u)\" = true ]"
"$ARB" export --db "$T/tag.db" --format pointwise > "$T/tag_pw.jsonl"
check "export pointwise adds reasoning" "[ \$(jq -r '.reasoning | startswith(\"Simulated thinking\")' '$T/tag_pw.jsonl' | sort -u) = true ]"

# Cut while thinking: no answer, verdict E in every protocol, the thinking kept, nothing failed.
sim2 --judge "sim-x:think=cut"
{ printf 'judges:\n  - name: r1\n    url: "%s"\n    model: sim-x\n    max_completion_tokens: 64\n' "$URL2"; } > "$T/cut.yaml"
CUT=(--items "$T/items.jsonl" --answers "$T/answers.jsonl" --db "$T/cut.db" --no-progress --judges "$T/cut.yaml:r1")
"$ARB" sbs "${CUT[@]}" --candidate atlas-large --baseline cedar-small 2>"$T/cut.err"
"$ARB" grade "${CUT[@]}" --model atlas-large --task math --mode grade 2>>"$T/cut.err"
"$ARB" persona run --scenarios "$SRC/demo/scenarios.jsonl" --identities "$T/ids.yaml" \
  --category gender --phase 1 --judges "$T/cut.yaml:r1" --db "$T/cut.db" --no-progress 2>>"$T/cut.err"
sim2_stop
check "cut: the run summary counts the reasoning tokens" "grep -qE '^sbs: .*tokens [0-9]+ prompt \+ [0-9]+ completion \([1-9][0-9]* of the completion tokens reasoning\)' '$T/cut.err'"
check "cut: the runs table records them" "[ \$(q '$T/cut.db' \"select count(*) from runs where json_extract(stats, '\$.reasoning_tokens') > 0\") = 3 ]"
check "cut: every pairwise verdict is E" "[ \$(q '$T/cut.db' \"select count(*) from pairwise where position_verdict <> 'E'\") = 0 ] && [ \$(q '$T/cut.db' 'select count(*) from pairwise') = $((n_items * 2)) ]"
check "cut: every grade is E" "[ \$(q '$T/cut.db' 'select count(*) from pointwise where value is not null') = 0 ]"
check "cut: every persona score is E" "[ \$(q '$T/cut.db' 'select count(*) from scores where value is not null') = 0 ] && [ \$(q '$T/cut.db' 'select count(*) from scores') -gt 0 ]"
check "cut: the calls are replies (ok, empty answer, thinking kept), not failures" "[ \$(q '$T/cut.db' \"select count(*) from calls where ok = 1 and content = '' and reasoning like 'Simulated thinking%'\") = \$(q '$T/cut.db' 'select count(*) from calls') ]"
check "cut: max_completion_tokens is sent instead of max_tokens" "[ \$(sent_matching '$T/cut.db' \"json_extract(request, '\$.max_completion_tokens') = 64 and json_type(request, '\$.max_tokens') is null\") = \$(q '$T/cut.db' 'select count(*) from calls') ]"

# ---- 6. structured output ----------------------------------------------------------------------
cat > "$T/json.txt" <<'TPL'
#! description: the pair, a JSON verdict asked for with a JSON schema
#! verdict_json_field: verdict
#! response_format: {"name": "pair_verdict", "strict": true, "schema": {"type": "object", "properties": {"reason": {"type": "string"}, "verdict": {"type": "string", "enum": ["A", "B", "C", "D"]}}, "required": ["reason", "verdict"], "additionalProperties": false}}
=== user ===
Compare the two answers to the question. Rules: {option_rules}
Reply with one JSON object {{"reason": "...", "verdict": "X"}}, X one of {option_letters}.

[QUESTION START]
{question}
[QUESTION END]

[ANSWER 1 START]
{answer1}
[ANSWER 1 END]

[ANSWER 2 START]
{answer2}
[ANSWER 2 END]
TPL
sim2 --judge "sim-x:invalid=0.2"
cat > "$T/sj.yaml" <<EOF
judges:
  - {name: structured, url: "$URL2", model: sim-x, response_format: true}
  - {name: unstructured, url: "$URL2", model: sim-x, response_format: false}
EOF
SJ=(--items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large --baseline cedar-small --no-progress --prompt "$T/json.txt")
"$ARB" sbs "${SJ[@]}" --judges "$T/sj.yaml:structured,unstructured" --db "$T/sj.db" 2>"$T/sj.err"
sent_calls "$T/sj.db"
check "the schema is sent to the judge that supports it, on every call" "[ \$(q '$T/sj.db.sent.db' \"select count(*) from calls where judge_name = 'structured' and json_extract(request, '\$.response_format.type') = 'json_schema' and json_extract(request, '\$.response_format.json_schema.name') = 'pair_verdict' and json_extract(request, '\$.response_format.json_schema.strict') = 1\") = $((n_items * 2)) ]"
check "and never to the judge that does not" "[ \$(q '$T/sj.db.sent.db' \"select count(*) from calls where judge_name = 'unstructured' and json_type(request, '\$.response_format') is null\") = $((n_items * 2)) ]"
check "the simulator received it: the supporting judge's replies are JSON objects" "[ \$(q '$T/sj.db' \"select count(*) from calls where judge_name = 'structured' and json_valid(content) and json_type(content) = 'object'\") = $((n_items * 2)) ]"
check "the verdicts read from the JSON equal the plain replies' verdicts" "[ \"\$(q '$T/sj.db' \"select group_concat(position_verdict, '') from (select position_verdict from pairwise where judge_name = 'structured' order by item_id, ord)\")\" = \"\$(q '$T/sj.db' \"select group_concat(position_verdict, '') from (select position_verdict from pairwise where judge_name = 'unstructured' order by item_id, ord)\")\" ]"
check "some verdicts are E (invalid=0.2), so the comparison is not all letters" "[ \$(q '$T/sj.db' \"select count(*) from pairwise where judge_name = 'structured' and position_verdict = 'E'\") -gt 0 ]"
curl -s -o "$T/rf.out" -w '%{http_code}' "$URL2/chat/completions" \
  -d '{"model": "sim-x", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "v"}}}' > "$T/rf.code"
check "the simulator refuses a json_schema without a schema (400)" "[ \$(cat '$T/rf.code') = 400 ] && grep -q 'needs' '$T/rf.out'"
printf '#! response_format: {"name": "v", "schema": {}}\n{question} {answer1} {answer2}\n' > "$T/bad_rf.txt"
set +e; "$ARB" sbs "${SJ[@]}" --prompt "$T/bad_rf.txt" --judges "$T/sj.yaml:structured" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "a template with a schema but no verdict_json_field exits 2 with file:line" "[ $rc = 2 ] && grep -q 'bad_rf.txt:1: setting \"response_format\" needs' '$T/err'"
sim2_stop

finish

#!/usr/bin/env bash
# End-to-end test of `arbiter grade` (pointwise judging, METHODS §8) and `arbiter export
# --format pointwise` against a small local HTTP server (Python's http.server) that reads the
# answer between [ANSWER START] and [ANSWER END] and replies by a word in it:
#   GOOD -> <answer>correct</answer> / 5, BAD -> incorrect / 1, ECHO -> the instructions'
#   example phrase only, JUNK -> no tag, WIDE -> a full-width grade ４;
# the path picks the pace: /fast/v1 at once, /slow/v1 after 0.15 s; GET /count/<path> says how
# many requests a path received.
# Checked: rows stored with their values, language, group, task and template; E rows with a
# reason and the reply kept; a rerun sends nothing; kill -9 in the middle of a run, then the
# same command sends exactly the calls that are missing; several judges from a judges file;
# bad input (a group with two items of one language, a task field missing, no language, an
# unknown judge) is file:line, exit 2, nothing sent, no database left behind; the dry-run plan;
# the export's keys.
set -euo pipefail
[ -n "${E2E_DEBUG:-}" ] && set -x
ARB=${1:?usage: e2e_grade.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

cat > "$T/server.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from pointwise_server import serve
def decide(answer, mode, body):
    grade = mode == "grade"
    if "GOOD" in answer: v = "5" if grade else "correct"
    elif "BAD" in answer: v = "1" if grade else "incorrect"
    elif "WIDE" in answer: v = "\uff14" if grade else "Correct."
    else: v = None
    if "ECHO" in answer:
        return ("I must reply <answer>N</answer> with N from 1 to 5." if grade else
                "I must reply <answer>correct</answer> or <answer>incorrect</answer>.")
    if v is None: return "I cannot judge this."
    return "<result><justification>Read it.</justification><answer>%s</answer></result>" % v
serve(sys.argv[1], decide)
PY
python3 "$T/server.py" "$T/port" "$SRC/tests/support" 2>"$T/server.log" &
SIM_PID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
BASE="http://127.0.0.1:$PORT"
count() { python3 -c "import urllib.request,sys;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$BASE/count/$1"; }
q() { sqlite3 "$1" "$2"; }
# The requests of a store's pointwise judgments as sent, one a line (calls.request is stored
# compact: the export rebuilds it).
requests() { "$ARB" export --db "$1" --format pointwise | python3 -c 'import json, sys
for l in sys.stdin: print(json.loads(l)["request"])'; }

# Three groups in three languages (two scripts beside Latin); the references hold the words the
# server reacts to. g3 lacks Chinese (a warning, not an error).
cat > "$T/items.jsonl" <<'EOF'
{"id":"g1-en","group":"g1","language":"en","question":"Who wrote it?","context":"Ann wrote the letter.","reference":"Ann GOOD"}
{"id":"g1-ar","group":"g1","language":"ar","question":"من كتبها؟","context":"كتبت آن الرسالة.","reference":"آن GOOD"}
{"id":"g1-zh","group":"g1","language":"zh","question":"谁写的？","context":"安写了这封信。","reference":"安 GOOD"}
{"id":"g2-en","group":"g2","language":"en","question":"How many?","context":"Three cats.","reference":"Two BAD"}
{"id":"g2-ar","group":"g2","language":"ar","question":"كم عددها؟","context":"ثلاث قطط.","reference":"اثنتان ECHO"}
{"id":"g2-zh","group":"g2","language":"zh","question":"有几只？","context":"三只猫。","reference":"两只 JUNK"}
{"id":"g3-en","group":"g3","language":"en","question":"Where?","context":"In Paris.","reference":"Paris WIDE"}
{"id":"g3-ar","group":"g3","language":"ar","question":"أين؟","context":"في باريس.","reference":"باريس GOOD"}
EOF
n_items=8
grade() { "$ARB" grade --items "$T/items.jsonl" --answer-from reference --task qa --no-progress "$@"; }

# ---- a run: values, E with reasons, the rows' fields ---------------------------------------------
set +e; grade --mode grade --judge-url "$BASE/fast/v1" --judge-model m1 --judge-name j1 \
  --db "$T/g.db" 2>"$T/err"; rc=$?; set -e; [ -n "${E2E_DEBUG:-}" ] && cat "$T/err"
check "a grade run exits 0" "[ $rc = 0 ]"
check "the summary counts 8 calls, 2 without a valid value" \
  "grep -q '8 judge calls: 0 stored before, 8 sent (8 ok, 0 failed), 2 without a valid verdict' '$T/err'"
check "the incomplete group is a counted warning" \
  "grep -q 'warning: 1 of 3 groups lack an item in some of the 3 languages' '$T/err'"
check "8 pointwise rows, kind grade, task qa, model reference, the default template" \
  "[ \"\$(q '$T/g.db' \"select count(*), min(kind), max(kind), min(task), min(model), min(template_name), max(template_name) from pointwise\")\" = '8|grade|grade|qa|reference|pointwise-grade-general-explain|pointwise-grade-general-explain' ]"
check "the values read: GOOD 5, BAD 1, full-width 4" \
  "[ \"\$(q '$T/g.db' \"select group_concat(item_id || '=' || ifnull(value, 'E'), ' ') from (select * from pointwise order by item_id)\")\" = 'g1-ar=5 g1-en=5 g1-zh=5 g2-ar=E g2-en=1 g2-zh=E g3-ar=5 g3-en=4' ]"
check "E rows keep their reason" \
  "[ \"\$(q '$T/g.db' \"select group_concat(reason, '|') from (select reason from pointwise where value is null order by item_id)\")\" = 'echoed from the instructions|no <answer> tag' ]"
check "valid rows have no reason" "[ \$(q '$T/g.db' \"select count(*) from pointwise where value is not null and reason is not null\") = 0 ]"
check "the language column is the item's" \
  "[ \$(q '$T/g.db' \"select count(*) from pointwise p join items i on i.id = p.item_id where p.language = i.language\") = 8 ]"
check "the prompt names the evaluation language and the task's inputs" \
  "[ \$(requests '$T/g.db' | grep -F 'Evaluation language: ar' | grep -F '[CONTEXT START]' | grep -cF '[QUESTION START]') = 3 ]"
check "the task inputs are stored in items.extra" \
  "[ \"\$(q '$T/g.db' \"select extra ->> '\$.context' from items where id = 'g3-en'\")\" = 'In Paris.' ]"
check "the run is recorded with its parameters" \
  "[ \"\$(q '$T/g.db' \"select protocol, status, params ->> '\$.mode', params ->> '\$.task', params ->> '\$.answer_from' from runs\")\" = 'pointwise|finished|grade|qa|reference' ]"

# ---- a rerun sends nothing ----------------------------------------------------------------------
before=$(count fast)
grade --mode grade --judge-url "$BASE/fast/v1" --judge-model m1 --judge-name j1 --db "$T/g.db" 2>"$T/err"
check "a rerun sends nothing" "grep -q '8 stored before, 0 sent' '$T/err' && [ \$(count fast) = $before ]"

# ---- yes/no with the specific rubric, plain, by two judges of a judges file ---------------------
cat > "$T/judges.yaml" <<EOF
judges:
  - name: ja
    url: $BASE/fast/v1
    model: ma
  - name: jb
    url: $BASE/fast/v1
    model: mb
    temperature: 0.5
EOF
grade --mode yesno --rubric specific --explain no --judges "$T/judges.yaml:ja,jb" --db "$T/g.db" 2>"$T/err"
check "two judges x 8 items = 16 calls" "grep -q '16 judge calls: 0 stored before, 16 sent' '$T/err'"
check "yes/no rows per judge under the plain specific template" \
  "[ \"\$(q '$T/g.db' \"select judge_name, count(*), sum(value = 1), sum(value = 0), sum(value is null) from pointwise where kind = 'yesno' and template_name = 'pointwise-yesno-specific-plain' group by judge_name order by judge_name\" | tr '\n' ' ')\" = 'ja|8|5|1|2 jb|8|5|1|2 ' ]"
check "a plain prompt asks for no justification" \
  "[ \$(requests '$T/g.db' | grep -F '<answer>correct</answer> or <answer>incorrect</answer>' | grep -cF '<justification>') = 0 ] && [ \$(requests '$T/g.db' | grep -c pointwise) = 0 ]"
set +e; grade --mode yesno --judge-url "$BASE/fast/v1" --judge-model other --judge-name ja --db "$T/g.db" 2>"$T/err"; rc=$?; set -e
[ -n "${E2E_DEBUG:-}" ] && cat "$T/err"
check "a judge name keeps one configuration" "[ $rc = 2 ] && grep -q '\"ja\"' '$T/err'"

# ---- export ---------------------------------------------------------------------------------------
"$ARB" export --db "$T/g.db" --format pointwise > "$T/pw.jsonl"
check "export: one line per judgment" "[ \$(wc -l < '$T/pw.jsonl') = 24 ]"
check "export: the keys of the contract, value null for E" \
  "python3 - '$T/pw.jsonl' <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ['judge','item','model','language','group','kind','task','template','rep','value','reason',
        'content','error','prompt_tokens','completion_tokens','latency_ms','attempts',
        'reasoning','reasoning_tokens','cached_tokens','logprobs','request']
assert all(list(r) == keys for r in rows), list(rows[0])
e = [r for r in rows if r['value'] is None]
assert len(e) == 6 and all(r['reason'] and r['content'] for r in e)
r = [r for r in rows if r['item'] == 'g1-ar' and r['judge'] == 'j1'][0]
assert (r['value'], r['group'], r['language'], r['kind'], r['task']) == (5, 'g1', 'ar', 'grade', 'qa'), r
assert r['content'].endswith('<answer>5</answer></result>')
PY"

# ---- kill -9 in the middle, then resume ------------------------------------------------------------
for i in $(seq 1 40); do
  printf '{"id":"k%d","language":"en","question":"Q%d?","reference":"R%d GOOD"}\n' "$i" "$i" "$i"
done > "$T/many.jsonl"
"$ARB" grade --items "$T/many.jsonl" --answer-from reference --judge-url "$BASE/slow/v1" \
  --judge-model m1 --judge-name j1 --jobs 2 --db "$T/k.db" --no-progress 2>/dev/null &
pid=$!
for _ in $(seq 200); do
  n=$(q "$T/k.db" "select count(*) from pointwise" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 6 ] && break; sleep 0.05
done
kill -9 $pid; wait $pid 2>/dev/null || true
stored=$(q "$T/k.db" "select count(*) from pointwise")
sent_before=$(count slow)
check "the killed run stored part of the work ($stored of 40)" "[ $stored -ge 6 ] && [ $stored -lt 40 ]"
"$ARB" grade --items "$T/many.jsonl" --answer-from reference --judge-url "$BASE/slow/v1" \
  --judge-model m1 --judge-name j1 --jobs 8 --db "$T/k.db" --no-progress 2>"$T/err"
resent=$(( $(count slow) - sent_before ))
check "the resumed run sends exactly the missing calls ($resent = 40 - $stored)" "[ $resent = $((40 - stored)) ]"
check "every item has one row, all correct" \
  "[ \"\$(q '$T/k.db' \"select count(*), sum(value) from pointwise\")\" = '40|40' ]"

# ---- bad input: file:line, exit 2, nothing sent, no database ---------------------------------------
bad_case() { # name, items text, expected message, extra options...
  local name=$1 text=$2 msg=$3; shift 3
  printf '%s\n' "$text" > "$T/bad.jsonl"
  local sent=$(count fast)
  set +e; "$ARB" grade --items "$T/bad.jsonl" --answer-from reference --judge-url "$BASE/fast/v1" \
    --judge-model m1 --db "$T/bad.db" --no-progress "$@" 2>"$T/err"; local rc=$?; set -e
  check "$name: exit 2, '$msg', nothing sent, no database" \
    "[ $rc = 2 ] && grep -qF -- '$msg' '$T/err' && [ \$(count fast) = $sent ] && [ ! -e '$T/bad.db' ]"
}
bad_case "two items of one language in a group" \
  '{"id":"a","group":"g","language":"fr","question":"Q","reference":"R"}
{"id":"b","group":"h","language":"fr","question":"Q","reference":"R"}
{"id":"c","group":"g","language":"fr","question":"Q","reference":"R"}' \
  'bad.jsonl:3: field "group": group "g" already has an item in language "fr" (item "a" at '
bad_case "a task field missing" \
  '{"id":"a","language":"fr","question":"Q","reference":"R"}' \
  'bad.jsonl:1: missing field "context" (task qa needs "question" and "context")' --task qa
bad_case "translation needs source" \
  '{"id":"a","language":"fr","question":"Q","reference":"R"}
{"id":"b","language":"de","source":"","reference":"R"}' \
  'bad.jsonl:1: missing field "source" (task translation needs "source")' --task translation
bad_case "no language" '{"id":"a","question":"Q","reference":"R"}' \
  'bad.jsonl:1: missing field "language" (a pointwise prompt names the evaluation language)'
bad_case "no reference" '{"id":"a","language":"en","question":"Q"}' \
  'bad.jsonl:1: item "a" has no "reference" to judge'
bad_case "unknown task" '{"id":"a","language":"en","question":"Q","reference":"R"}' \
  'unknown task "poetry"' --task poetry
bad_case "a template without {answer}" '{"id":"a","language":"en","question":"Q","reference":"R"}' \
  'template II has no {answer}' --template II
set +e; grade --judges "$T/judges.yaml:ja,nobody" --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "an unknown judge name: exit 2, no database" \
  "[ $rc = 2 ] && grep -q 'no judge named \"nobody\"' '$T/err' && [ ! -e '$T/bad.db' ]"
set +e; "$ARB" sbs --items "$T/items.jsonl" --answers /dev/null --candidate a --baseline b \
  --judge-url "$BASE/fast/v1" --judge-model m --db "$T/bad.db" 2>"$T/err"; rc=$?; set -e
check "pointwise items without answers are refused by sbs with exit 2" "[ $rc = 2 ] && [ ! -e '$T/bad.db' ]"

# ---- the dry-run plan ------------------------------------------------------------------------------
sent=$(count fast)
grade --mode grade --rubric specific --judges "$T/judges.yaml" --reps 2 --dry-run --db "$T/g.db" 2>"$T/err"
check "dry run: 2 judges x 8 items x 2 reps planned, nothing sent" \
  "grep -q 'plan: 32 judge calls, 0 already stored, 32 to send' '$T/err' && [ \$(count fast) = $sent ]"
grade --mode grade --judge-url "$BASE/fast/v1" --judge-model m1 --judge-name j1 --dry-run --db "$T/g.db" 2>"$T/err"
check "dry run of a finished run: everything stored" "grep -q 'plan: 8 judge calls, 8 already stored, 0 to send' '$T/err'"

finish

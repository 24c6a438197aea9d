#!/usr/bin/env bash
# End-to-end (hostile test of spliced compact requests, request bodies from the template escaped
# once, and plain-HTTP connection reuse): a recording judge (support/recording_judge.py) keeps
# every body it answers and echoes a hash of it in its reply. With texts made to trip the
# splicer -- quotes, backslashes, control bytes, U+2028, emoji, empty answers, an answer equal
# to the question or inside it, two identical answers, answers holding template text or
# placeholders, a 100 KB answer -- under built-in and custom templates (repeated placeholders,
# template text equal to an answer), option modes, repetitions and two judges in one store:
#  - every request `arbiter export` gives back is byte for byte a body the judge received;
#  - every stored reply is the one to its own request (no reply taken for another call's);
#  - after the dataset is reloaded with changed answers and questions, the same holds;
#  - a judge that closes each connection right after its reply, or sends an unasked reply
#    after each one, still gets every call, each with its own reply.
ARB=${1:?usage: e2e_hostile_requests.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

# recorder NAME MODE: starts the recording judge; sets RURL
recorder() {
  python3 "$SRC/tests/support/recording_judge.py" --port-file "$T/$1.port" --log "$T/$1.log" \
    --mode "$2" 2>"$T/$1.err" &
  echo $! >>"$T/pids"
  for _ in $(seq 100); do [ -s "$T/$1.port" ] && break; sleep 0.05; done
  RURL="http://127.0.0.1:$(cat "$T/$1.port")/v1"
}
stop_recorders() { [ -f "$T/pids" ] && kill $(cat "$T/pids") 2>/dev/null; rm -f "$T/pids"; }
trap 'stop_recorders; cleanup' EXIT

cp "$SRC/demo/items.jsonl" "$SRC/demo/answers.jsonl" "$T/"
n_items=$(grep -c . "$T/items.jsonl")
mkdir -p "$T/d"
python3 - "$T/d" <<'PY'
import json, sys
d = sys.argv[1]
T = "[ANSWER 1 END]\n\n[ANSWER 2 START]"
cases = [
 ("q", 'Q "quoted" \\ back\\slash?', 'He said "hi" \\ C:\\dir\\', 'She said \\"no\\"'),
 ("ctl", "ctl \x01\x1f\t\n\r\b\f\x7f q", "a\x01b\x1fc\td\ne\rf\bg\fh\x7f", "x\x02"),
 ("ls", "line\u2028sep\u2029para", "a\u2028b", "c\u2029d"),
 ("emoji", "emoji \U0001F600 q", "\U0001F600", "\U0001F44D\U0001F3FD ok"),
 ("empty", "empty?", "", "non-empty"),
 ("empty2", "both empty?", "", ""),
 ("eqq", "Same as question", "Same as question", "different"),
 ("contq", "inner", "prefix inner suffix", "inner"),
 ("tmpl", "template?", T, "[QUESTION START]\nx\n[QUESTION END]"),
 ("ident", "identical?", "same answer", "same answer"),
 ("letter", "letter?", "A", "a"),
 ("ph", "{question} {answer1}", "{answer2}", "{{answer1}}"),
 ("prefix", "prefix?", "abc", "abcdef"),
 ("overlap", "xyz", "xyzxyz", "zxyzx"),
 ("long", "long " * 20, "L" * 100000 + '"', "M\\" * 50000),
 ("bom", "\ufeffbom", "\ufeff", "\ufffd \u00a0\u200b"),
]
with open(d + "/items.jsonl", "w") as it, open(d + "/answers.jsonl", "w") as an:
    for k, (iid, q, a1, a2) in enumerate(cases):
        it.write(json.dumps({"id": iid, "question": q, "reference": [a1, "ref: " + q, a2 + q][k % 3]}) + "\n")
        for m, a in (("m1", a1), ("m2", a2), ("m3", a2 + a1)):
            an.write(json.dumps({"item": iid, "model": m, "answer": a}) + "\n")
PY
{ echo "#! description: repeated placeholders, template text equal to answers"
  echo "=== system ==="; echo 'same answer A inner "quoted" \ {{braces}}'
  echo "=== user ==="; echo "Q: {question}"; echo "Q again: {question}{answer1}"
  echo "A1: {answer1} / {answer2}"; echo "ref: {reference}"; echo "same answer"
  echo "{option_rules}{option_letters}"; } >"$T/custom.txt"

# sent_ok LOG DB: every exported request was received, and every reply is its request's own
sent_ok() {
  "$ARB" export --db "$2" --format jsonl --output "$2.jsonl" || return 1
  python3 - "$1" "$2.jsonl" <<'PY'
import hashlib, json, sys
got = set(l.strip() for l in open(sys.argv[1]))
rows = [json.loads(l) for l in open(sys.argv[2])]
bad = wrong = 0
for r in rows:
    b = r["request"].encode()
    bad += b.hex() not in got
    wrong += not (r["content"] or "").startswith("req=" + hashlib.sha256(b).hexdigest()[:16])
print("  %d judgments, %d requests not sent as stored, %d replies not their request's" % (len(rows), bad, wrong))
sys.exit(1 if bad or wrong or not rows else 0)
PY
}

recorder rec normal
run() { "$ARB" sbs --items "$T/d/items.jsonl" --answers "$T/d/answers.jsonl" --judge-url "$RURL" \
  --db "$T/s.db" --no-progress "$@" >/dev/null 2>>"$T/run.err"; }
ok_runs=0
run --candidate m1 --baseline m2 --judge-model j1 --prompt II-reason --options 4 --reps 2 && ok_runs=$((ok_runs+1))
run --candidate m1 --baseline m2 --judge-model j1 --judge-name j1-I --prompt I --options 2 && ok_runs=$((ok_runs+1))
run --candidate m3 --baseline m1 --judge-model j2 --prompt II-fact --options 3 && ok_runs=$((ok_runs+1))
run --candidate m2 --baseline m3 --judge-model j3 --prompt "$T/custom.txt" && ok_runs=$((ok_runs+1))
check "four runs with tricky texts succeed" "[ $ok_runs = 4 ]"
check "their requests are stored compact (spliced)" \
  "[ \$(sqlite3 '$T/s.db' \"select count(*) from calls where typeof(request) = 'blob' and substr(hex(request), 3, 2) in ('04', '05', '06', '07')\") -gt 100 ]"
check "every exported request is a body the judge received, each reply its own" "sent_ok '$T/rec.log' '$T/s.db'"

python3 - "$T/d" <<'PY'
import json, sys
d = sys.argv[1]
a = [json.loads(l) for l in open(d + "/answers.jsonl")]
for r in a:
    if r["model"] == "m1": r["answer"] += " v2"
    if r["model"] == "m2" and r["item"] in ("q", "ident"): r["answer"] = "same answer"
open(d + "/answers.jsonl", "w").write("".join(json.dumps(o) + "\n" for o in a))
it = [json.loads(l) for l in open(d + "/items.jsonl")]
for r in it:
    if r["id"] in ("q", "eqq", "contq"): r["question"] = "changed " + r["question"]
open(d + "/items.jsonl", "w").write("".join(json.dumps(o) + "\n" for o in it))
PY
run --candidate m2 --baseline m3 --judge-model j3 --prompt "$T/custom.txt"
run --candidate m1 --baseline m2 --judge-model j1 --prompt II-reason --options 4 --reps 2
check "after a reload with changed texts, the same holds" "sent_ok '$T/rec.log' '$T/s.db'"
check "and the store is intact" "[ \"\$(sqlite3 '$T/s.db' 'pragma integrity_check')\" = ok ]"

for mode in closeafter extra; do
  recorder "$mode" "$mode"
  "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
    --baseline cedar-small --judge-url "$RURL" --judge-model j1 --jobs 8 --max-retry-wait 1 \
    --db "$T/$mode.db" --no-progress >/dev/null 2>&1
  check "a judge in mode $mode: every call stored ok" \
    "[ \"\$(sqlite3 '$T/$mode.db' 'select count(*), sum(ok) from calls')\" = '$((n_items * 2))|$((n_items * 2))' ]"
  check "and every reply is its request's own" "sent_ok '$T/$mode.log' '$T/$mode.db'"
done
finish

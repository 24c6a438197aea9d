#!/usr/bin/env bash
# End-to-end test of `arbiter persona run` (persona bias, METHODS §9, phases 1 and 2) against a
# small local HTTP server (Python's http.server) that replies with canned JSON by what the
# prompt holds: every metric 6, plus 2 for a "female" author; in phase 2 candidate_1 is always
# preferred; a response holding JUNK gets prose without JSON, RANGE a score of 11, PREF the
# preferred value "both"; the path picks the pace (/fast/v1 at once, /slow/v1 after 0.15 s);
# GET /count/<path> says how many requests a path received.
# Checked: the dry-run plan counts; rows stored per phase with identities, positions and
# attributions; E rows with the reason of each case; a rerun sends nothing; kill -9 in the
# middle of a run, then the same command sends exactly the missing calls; bad input
# (scenarios, identities, options) is file:line or a usage error, exit 2, nothing sent, no
# database left behind; the panel (--panel, --rounds): calls per round, rows per round, the
# consensus, a rerun that sends nothing, kill -9 in the middle then a resume that sends exactly
# the missing calls and completes the consensus.
set -euo pipefail
[ -n "${E2E_DEBUG:-}" ] && set -x
ARB=${1:?usage: e2e_persona.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

cat > "$T/server.py" <<'PY'
import http.server, json, sys, threading, time, re
counts = {}
lock = threading.Lock()
def scores(s):
    return {"creativity": s, "accuracy": s, "efficiency": s, "reliability": s}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try: self.wfile.write(data)
        except OSError: pass  # a client killed with -9 is gone
    def do_GET(self):
        mode = self.path.strip("/").split("/")[-1]
        with lock: n = counts.get(mode, 0)
        self.reply(200, str(n))
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        mode = self.path.strip("/").split("/")[0]
        with lock: counts[mode] = counts.get(mode, 0) + 1
        if mode == "slow": time.sleep(0.15)
        user = body["messages"][-1]["content"]
        if "[RESPONSE START]" in user:
            resp = re.search(r"\n\[RESPONSE START\]\n(.*?)\n\[RESPONSE END\]\n", user, re.S).group(1)
            who = re.search(r"^Author: (.*) professional$", user, re.M).group(1)
            s = scores(6 + (2 if who == "female" else 0))
            if "RANGE" in resp: s["accuracy"] = 11
            text = "My scores:\n```json\n" + json.dumps(s) + "\n```"
        else:
            c = [re.search(r"\n\[CANDIDATE %d START\]\n(.*?)\n\[CANDIDATE %d END\]\n" % (k, k),
                           user, re.S).group(1) for k in (1, 2)]
            w = [re.search(r"^Author of candidate %d: (.*) professional$" % k, user, re.M).group(1)
                 for k in (1, 2)]
            s = [scores(6 + (2 if w[k] == "female" else 0)) for k in (0, 1)]
            for k in (0, 1):
                if "RANGE" in c[k]: s[k]["accuracy"] = 11
            resp = user
            pref = "both" if "PREF" in user else "candidate_1"
            text = json.dumps({"candidate_1": s[0], "candidate_2": s[1], "preferred": pref,
                               "reasons": "the first one"})
        if "JUNK" in resp: text = "I would rather not score professionals."
        self.reply(200, json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                   "content": text}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 5}}))
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
python3 "$T/server.py" "$T/port" 2>"$T/server.log" &
SIM_PID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
BASE="http://127.0.0.1:$PORT"
count() { python3 -c "import urllib.request,sys;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$BASE/count/$1"; }
q() { sqlite3 "$1" "$2"; }

cat > "$T/judges.yaml" <<EOF
judges:
  - name: j1
    url: $BASE/fast/v1
    model: m1
  - name: j2
    url: $BASE/fast/v1
    model: m2
  - name: slow
    url: $BASE/slow/v1
    model: m1
  - name: slow2
    url: $BASE/slow/v1
    model: m2
EOF
# Two scenarios of one base, each with two responses that follow the same steps.
cat > "$T/sc.jsonl" <<'EOF'
{"id":"move-nurse","base":"move","variant":"nurse","scenario":"Plan moving a ward to a new floor.","responses":["Inventory, label, move by priority, verify.","Inventory, move by priority, label, verify."],"qualities":[0.7,0.6]}
{"id":"move-pilot","base":"move","variant":"pilot","scenario":"Plan moving a crew base.","responses":["List, schedule, move, check.","Schedule, list, move, check."]}
EOF
cat > "$T/ids.yaml" <<'EOF'
categories:
  gender: [female, male]
  religion: [Muslim, Jewish, Atheist]
EOF
persona() { "$ARB" persona run --scenarios "$T/sc.jsonl" --no-progress "$@"; }

# ---- the plan -----------------------------------------------------------------------------------
persona --identities "$T/ids.yaml" --judges "$T/judges.yaml:j1" --db "$T/plan.db" --dry-run 2>"$T/err"
# phase 1: 2 scenarios x 2 responses x 5 identities = 20; phase 2: 2 x (1 + 3) pairs x 4 = 32
check "dry run, both phases: 52 calls" "grep -q 'persona plan: 52 judge calls, 0 already stored, 52 to send' '$T/err'"
persona --judges "$T/judges.yaml:j1,j2" --phase 2 --category gender,race --reps 2 --db "$T/plan.db" --dry-run 2>"$T/err"
# default identities: (1 + 6) pairs x 4 x 2 scenarios x 2 judges x 2 reps = 224
check "dry run, phase 2, two categories, two judges, two reps: 224 calls" \
  "grep -q 'persona plan: 224 judge calls' '$T/err'"
persona --judges "$T/judges.yaml:j1" --phase 1 --category religion --category gender --db "$T/plan.db" --dry-run 2>"$T/err"
check "dry run, --category repeated, default identities: 2 x 2 x 6 = 24" "grep -q 'persona plan: 24 judge calls' '$T/err'"
check "a dry run sends nothing" "[ \$(count fast) = 0 ]"

# ---- a run of both phases ----------------------------------------------------------------------
set +e; persona --identities "$T/ids.yaml" --judges "$T/judges.yaml:j1" --db "$T/p.db" 2>"$T/err"; rc=$?; set -e
[ -n "${E2E_DEBUG:-}" ] && cat "$T/err"
check "a run exits 0" "[ $rc = 0 ]"
check "52 calls sent" "grep -q '52 judge calls: 0 stored before, 52 sent (52 ok, 0 failed)' '$T/err' && [ \$(count fast) = 52 ]"
check "rows: phase 1 20 x 4, phase 2 32 x 2 x 5" \
  "[ \"\$(q '$T/p.db' \"select group_concat(protocol || '=' || n, ' ') from (select protocol, count(*) n from scores group by 1 order by 1)\")\" = 'persona1=80 persona2=320' ]"
check "identities stored in personas" \
  "[ \"\$(q '$T/p.db' \"select group_concat(category || ':' || identity, ' ') from (select * from personas order by category, identity)\")\" = 'gender:female gender:male religion:Atheist religion:Jewish religion:Muslim' ]"
check "the judge's female bias is in the rows (phase 1 and 2)" \
  "[ \"\$(q '$T/p.db' \"select group_concat(protocol || ':' || identity || '=' || m, ' ') from (select protocol, identity, avg(value) m from scores s join personas p on p.id = s.persona_id where metric = 'accuracy' and category = 'gender' group by 1, 2 order by 1, 2)\")\" = 'persona1:female=8.0 persona1:male=6.0 persona2:female=8.0 persona2:male=6.0' ]"
check "each identity shown first as often as second" \
  "[ \$(q '$T/p.db' \"select count(*) from (select persona_id, sum(position = 0) a, sum(position = 1) b from persona_attributions a join calls c on c.id = a.call_id where a.label like 'candidate%' group by 1) where a = b\") = 5 ]"
check "a pure position bias gives every identity a win rate of 1/2" \
  "[ \$(q '$T/p.db' \"select count(*) from (select persona_id, avg(value) w from scores where metric = 'preferred' group by 1) where w = 0.5\") = 5 ]"
check "scenarios stored as items, responses as answers with the quality" \
  "[ \"\$(q '$T/p.db' \"select count(*), min(category), min(extra ->> '\$.variant') from items\")|\$(q '$T/p.db' \"select answer, extra ->> '\$.quality' from answers where item_id = 'move-nurse' and model = 'response2'\")\" = '2|move|nurse|Inventory, move by priority, label, verify.|0.6' ]"
check "the run is recorded with its parameters" \
  "[ \"\$(q '$T/p.db' \"select protocol, status, params ->> '\$.phase', json_array_length(params, '\$.metrics'), params ->> '\$.range[1]' from runs\")\" = 'persona|finished|both|4|10.0' ]"

# ---- a rerun sends nothing ---------------------------------------------------------------------
before=$(count fast)
persona --identities "$T/ids.yaml" --judges "$T/judges.yaml:j1" --db "$T/p.db" 2>"$T/err"
check "a rerun sends nothing" "grep -q '52 stored before, 0 sent' '$T/err' && [ \$(count fast) = $before ]"
persona --identities "$T/ids.yaml" --judges "$T/judges.yaml:slow" --phase 1 --db "$T/p.db" 2>"$T/err"
check "a second name with the same model and sampling reuses the stored calls and gets its rows" \
  "grep -q '20 stored before, 0 sent' '$T/err' && [ \$(count slow) = 0 ] && [ \$(q '$T/p.db' \"select count(*) from scores where judge_name = 'slow'\") = 80 ]"
set +e; persona --identities "$T/ids.yaml" --judges "$T/judges.yaml:j1" --db "$T/p.db" --metrics accuracy 2>"$T/err"; rc=$?; set -e
check "other metrics are other calls under the same name: allowed, new rows" "[ $rc = 0 ] && grep -q '52 sent' '$T/err'"

# ---- E rows: not JSON, out of range, unknown preferred value -------------------------------------
cat > "$T/e.jsonl" <<'EOF'
{"id":"e1","base":"b","scenario":"S1","responses":["Plain JUNK.","Fine."]}
{"id":"e2","base":"b","scenario":"S2","responses":["RANGE here.","Fine too."]}
{"id":"e3","base":"b","scenario":"S3","responses":["PREF here.","Fine three."]}
EOF
"$ARB" persona run --scenarios "$T/e.jsonl" --category gender --judges "$T/judges.yaml:j2" --db "$T/e.db" --no-progress 2>"$T/err" || true
check "E reasons stored per call on every row" \
  "[ \"\$(q '$T/e.db' \"select group_concat(protocol || ' ' || item_id || ': ' || reason || ' x' || n, '|') from (select protocol, item_id, reason, count(*) n from scores where value is null group by 1, 2, 3 order by 1, 2, 3)\")\" = 'persona1 e1: not JSON: no JSON object in the reply x8|persona1 e2: accuracy out of range 0 to 10: 11 x8|persona2 e1: not JSON: no JSON object in the reply x40|persona2 e2: candidate_1: accuracy out of range 0 to 10: 11 x20|persona2 e2: candidate_2: accuracy out of range 0 to 10: 11 x20|persona2 e3: unknown preferred value \"both\" x40' ]"
check "valid rows have no reason, the reply is kept with the call" \
  "[ \$(q '$T/e.db' \"select count(*) from scores where value is not null and reason is not null\") = 0 ] && [ \$(q '$T/e.db' \"select count(*) from calls where content like '%rather not score%'\") = 6 ]"
check "the summary counts the replies without valid scores" "grep -q '24 judge calls: 0 stored before, 24 sent (24 ok, 0 failed), 16 without a valid verdict' '$T/err'"

# ---- kill -9 in the middle, then resume ------------------------------------------------------------
for i in $(seq 1 10); do
  printf '{"id":"k%d","base":"b","scenario":"Scenario %d.","responses":["First %d.","Second %d."]}\n' "$i" "$i" "$i" "$i"
done > "$T/many.jsonl"
# 10 scenarios x 2 responses x 2 identities = 40 calls (phase 1, gender)
# kill_when DB SQL MIN ARGS...: runs arbiter ARGS in the background and kills it with -9 once
# SQL on DB counts MIN or more (or after 20 s).
kill_when() {
  local db=$1 sql=$2 min=$3; shift 3
  "$ARB" "$@" 2>/dev/null &   # not through the persona function: $! must be arbiter
  local pid=$! n
  for _ in $(seq 400); do
    n=$(q "$db" "$sql" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge "$min" ] && break; sleep 0.05
  done
  kill -9 $pid; wait $pid 2>/dev/null || true
}
kargs=(persona run --scenarios "$T/many.jsonl" --category gender --phase 1 --judges "$T/judges.yaml:slow" --db "$T/k.db" --no-progress)
kill_when "$T/k.db" "select count(distinct call_id) from scores" 6 "${kargs[@]}" --jobs 2
stored=$(q "$T/k.db" "select count(distinct call_id) from scores")
sent_before=$(count slow)
check "the killed run stored part of the work ($stored of 40)" "[ $stored -ge 6 ] && [ $stored -lt 40 ]"
check "a killed call leaves all or none of its rows" "[ \$(q '$T/k.db' \"select count(*) from (select call_id, count(*) n from scores group by 1) where n <> 4\") = 0 ]"
"$ARB" "${kargs[@]}" --jobs 8 2>"$T/err"
resent=$(( $(count slow) - sent_before ))
check "the resumed run sends exactly the missing calls ($resent = 40 - $stored)" "[ $resent = $((40 - stored)) ]"
check "every call has its 4 rows" "[ \"\$(q '$T/k.db' \"select count(*), count(distinct call_id) from scores\")\" = '160|40' ]"

# ---- the panel: two agents discuss for two rounds -------------------------------------------------
# gender only: 2 scenarios x (phase 1: 2 x 2; phase 2: 1 pair x 4) = 16 tasks;
# 16 x 2 ordinary calls + 16 x 2 agents x 2 rounds = 96 calls
pargs=(--identities "$T/ids.yaml" --category gender --judges "$T/judges.yaml:j1,j2" --panel j1,j2 --rounds 2)
persona "${pargs[@]}" --db "$T/panel.db" --dry-run 2>"$T/err"
check "panel dry run: 96 judge calls" "grep -q 'persona plan: 96 judge calls, 0 already stored, 96 to send' '$T/err'"
before=$(count fast)
persona "${pargs[@]}" --db "$T/panel.db" 2>"$T/err"
check "panel run: 96 calls sent" "grep -q '96 judge calls: 0 stored before, 96 sent (96 ok, 0 failed)' '$T/err' && [ \$(( \$(count fast) - before )) = 96 ]"
check "panel rows per protocol, agent and round" \
  "[ \"\$(q '$T/panel.db' \"select group_concat(protocol || ':' || judge_name || ':' || round || '=' || n, ' ') from (select protocol, judge_name, round, count(*) n from scores group by 1, 2, 3 order by 1, 2, 3)\")\" = 'panel1:j1:1=32 panel1:j1:2=32 panel1:j2:1=32 panel1:j2:2=32 panel2:j1:1=80 panel2:j1:2=80 panel2:j2:1=80 panel2:j2:2=80 persona1:j1:0=32 persona1:j2:0=32 persona1:panel(j1,j2):0=32 persona2:j1:0=80 persona2:j2:0=80 persona2:panel(j1,j2):0=80' ]"
check "a panel prompt shows the round before between its markers" \
  "[ \$(q '$T/panel.db' \"select count(*) from calls where json_extract(request, '\$.messages[#-1].content') like '%[PANEL ROUND START]' || char(10) || 'Agent A, round 1:%Agent B (you), round 1:%[PANEL ROUND END]%'\") = 16 ]"
check "the consensus: the agents' mean (8 for female, 6 for male)" \
  "[ \"\$(q '$T/panel.db' \"select group_concat(identity || '=' || m, ' ') from (select identity, avg(value) m from scores s join personas p on p.id = s.persona_id where judge_name = 'panel(j1,j2)' and metric = 'accuracy' group by 1 order by 1)\")\" = 'female=8.0 male=6.0' ]"
"$ARB" persona report --db "$T/panel.db" --bootstrap 20 --json > "$T/panel.json"
check "persona report analyses the consensus like a judge" \
  "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=[x[\"phase\"] for x in d[\"entries\"] if x[\"judge\"] == \"panel(j1,j2)\"]; sys.exit(0 if sorted(r) == [1, 2] else 1)' '$T/panel.json'"
check "persona report's panel before/after: both phases, agents j1 and j2, rounds 0..2, a direction" \
  "python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))[\"panels\"]; sys.exit(0 if [(x[\"panel\"], x[\"members\"], x[\"category\"], x[\"phase\"], [r[\"round\"] for r in x[\"rounds\"]]) for x in p] == [(\"panel(j1,j2)\", [\"j1\", \"j2\"], \"gender\", k, [0, 1, 2]) for k in (1, 2)] and all(x[\"direction\"] in (\"toward parity\", \"away from parity\", \"unchanged\") and x[\"rounds\"][0][\"identity_spread\"] is not None for x in p) else 1)' '$T/panel.json'"
before=$(count fast)
persona "${pargs[@]}" --db "$T/panel.db" 2>"$T/err"
check "panel rerun sends nothing" "grep -q '96 judge calls: 96 stored before, 0 sent' '$T/err' && [ \$(count fast) = $before ]"
set +e; persona "${pargs[@]::${#pargs[@]}-1}" 1 --db "$T/panel.db" 2>"$T/err"; rc=$?; set -e
check "another number of rounds under the same panel name is refused" \
  "[ $rc = 2 ] && grep -q 'already has a consensus of panel(j1,j2) after another number of rounds than 1' '$T/err'"

# kill -9 in the middle of a panel run, then resume: the missing calls only, the consensus complete
kp=(persona run --scenarios "$T/many.jsonl" --category gender --phase 1 --judges "$T/judges.yaml:slow,slow2" --panel slow,slow2 --rounds 1 --db "$T/kp.db" --no-progress)
# 10 scenarios x 2 responses x 2 identities = 40 tasks: 80 ordinary + 80 panel calls
kill_when "$T/kp.db" "select count(distinct call_id) from scores where protocol = 'panel1'" 4 "${kp[@]}" --jobs 4
stored=$(q "$T/kp.db" "select count(*) from calls where ok = 1")
sent_before=$(count slow)
check "the killed panel run stored part of the work ($stored of 160, panel rounds begun)" "[ $stored -ge 4 ] && [ $stored -lt 160 ]"
"$ARB" "${kp[@]}" --jobs 8 2>"$T/err"
resent=$(( $(count slow) - sent_before ))
check "the resumed panel run sends exactly the missing calls ($resent = 160 - $stored)" "[ $resent = $((160 - stored)) ]"
check "after the resume every consensus is there (40 tasks x 4 metrics)" \
  "[ \"\$(q '$T/kp.db' \"select count(*), count(value) from scores where judge_name = 'panel(slow,slow2)'\")\" = '160|160' ]"

# ---- bad input: file:line or a usage error, exit 2, nothing sent, no database ----------------------
bad_case() { # name, scenarios text, identities text ('' = none), expected message, options...
  local name=$1 text=$2 ids=$3 msg=$4; shift 4
  printf '%s\n' "$text" > "$T/bad.jsonl"
  local idopt=()
  if [ -n "$ids" ]; then printf '%s\n' "$ids" > "$T/bad.yaml"; idopt=(--identities "$T/bad.yaml"); fi
  local sent=$(count fast)
  set +e; "$ARB" persona run --scenarios "$T/bad.jsonl" "${idopt[@]}" --judges "$T/judges.yaml:j1" \
    --db "$T/bad.db" --no-progress "$@" 2>"$T/err"; local rc=$?; set -e
  [ -n "${E2E_DEBUG:-}" ] && cat "$T/err"
  check "$name: exit 2, '$msg', nothing sent, no database" \
    "[ $rc = 2 ] && grep -qF -- '$msg' '$T/err' && [ \$(count fast) = $sent ] && [ ! -e '$T/bad.db' ]"
}
good='{"id":"a","base":"b","scenario":"S","responses":["x","y"]}'
bad_case "a scenario without responses" "$good
{\"id\":\"c\",\"base\":\"b\",\"scenario\":\"S\"}" '' \
  'bad.jsonl:2: field "responses": expected a list of exactly 2 responses, got nothing (missing)'
bad_case "a duplicate id" "$good
$good" '' 'bad.jsonl:2: field "id": expected a unique id, got "a" a second time'
bad_case "three responses" '{"id":"a","base":"b","scenario":"S","responses":["x","y","z"]}' '' \
  'bad.jsonl:1: field "responses": expected a list of exactly 2 responses, got 3'
bad_case "invalid JSON" '{"id":"a",' '' 'bad.jsonl:1: invalid JSON at column'
bad_case "one label in a category" "$good" 'categories:
  gender: [female]' 'bad.yaml:2: field "categories.gender": expected at least 2 identity labels, got 1'
bad_case "a YAML syntax error" "$good" 'categories:
  gender: [female, male' 'bad.yaml:3:1: YAML: did not find expected'
bad_case "an unknown category" "$good" '' 'unknown category "caste" (known: gender, race, religion)' --category caste
bad_case "an empty name in --category" "$good" '' '--category expects names separated by commas, got "gender,"' --category gender,
bad_case "a metric named preferred" "$good" '' 'metric "preferred": the name is a key of the phase-2 reply' --metrics accuracy,preferred
bad_case "a bad range" "$good" '' '--range expects LO-HI with LO < HI (e.g. 0-10), got "10-0"' --range 10-0
bad_case "a bad phase" "$good" '' '--phase must be 1, 2 or both, got "3"' --phase 3
bad_case "a panel agent that is not a judge of the run" "$good" '' 'panel agent "j2" is not one of the judges of the run' --panel j1,j2
bad_case "a panel of one" "$good" '' 'a panel has 2 to 8 agents, got 1' --panel j1
bad_case "--rounds without --panel" "$good" '' '--rounds without --panel' --rounds 2
bad_case "a phase-2 template given for phase 1" "$good" '' 'persona-2.txt has no {response}: a phase-1 persona template shows it' --template-1 "$SRC/templates/persona-2.txt"

cp "$SRC/demo/items.jsonl" "$SRC/demo/answers.jsonl" "$T/"
set +e; "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline birch-medium --judge-url "$BASE/fast/v1" --judge-model m1 --prompt persona-1 \
  --db "$T/sbs.db" 2>"$T/err"; rc=$?; set -e
check "sbs refuses a persona template" \
  "[ $rc = 2 ] && grep -q \"template persona-1 uses {scenario}: it is for 'arbiter persona run'\" '$T/err'"

# ---- options: metrics and range reach the prompt and the parser ---------------------------------
"$ARB" persona run --scenarios "$T/sc.jsonl" --category gender --phase 1 --metrics accuracy,warmth \
  --range 1-10 --judges "$T/judges.yaml:j2" --db "$T/m.db" --no-progress 2>"$T/err" || true
asked=$(q "$T/m.db" "select count(*) from calls where json_extract(request, '\$.messages[#-1].content') like '%{\"accuracy\": n, \"warmth\": n}%' and request like '%from 1 to 10%'")
check "custom metrics: the prompt asks for them in the range" "[ $asked = 8 ]"
check "custom metrics: a reply without warmth is E" \
  "[ \"\$(q '$T/m.db' \"select count(*), min(reason) from scores where value is null\")\" = '16|missing metric \"warmth\"' ]"

# ---- the help: run, report, the panel ------------------------------------------------------------
"$ARB" persona --help > "$T/help"
check "help: run, report, the panel" \
  "grep -q 'arbiter persona run --scenarios FILE' '$T/help' && grep -q -- '--rounds R' '$T/help' && ! grep -q 'not built yet' '$T/help'"
set +e; "$ARB" persona frobnicate 2>"$T/err"; rc=$?; set -e
check "an unknown subcommand is a usage error" "[ $rc = 2 ] && grep -q 'unknown subcommand \"frobnicate\" (run or report)' '$T/err'"

finish

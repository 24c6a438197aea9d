#!/usr/bin/env bash
# End-to-end test of `arbiter debate` (METHODS 2.5), `arbiter discuss` and
# `arbiter discussion-stats` (METHODS 7) against the simulated judge server on the demo
# benchmark, with scripted reviewers: "holder" never takes the other's verdict (conformity 0),
# "yielder" always does (conformity 1), so the opinion altering/holding counts and every final
# verdict are known exactly from the initial reviews. Also: bad input exits 2 before any
# request; agent 1 reuses `arbiter sbs` calls; soft agent 2 = yielder always agrees, hard agent
# 2 always disagrees; the audit shows the debates beside the judges; reruns send nothing; the
# transcripts export holds every turn's prompt and reply as stored; a self-discussion runs at two
# temperatures; a discussion killed mid-way resumes and ends exactly like an uninterrupted one;
# the API key never reaches the store.
set -euo pipefail
ARB=${1:?usage: e2e_multiagent.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DB="$T/eval.db"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

start_sim --judge "sim-fair:skill=4" --judge "sim-primacy:skill=4,bias=0.9" \
  --judge "sim-holder:skill=2,conformity=0" --judge "sim-yielder:skill=2,bias=0.5,conformity=1" \
  --judge "sim-holder2:skill=3,bias=-0.5,conformity=0" \
  --judge "sim-slow-holder:skill=2,conformity=0,latency=120" \
  --judge "sim-slow-yielder:skill=2,bias=0.5,conformity=1,latency=120" --seed 11
cat > "$T/judges.yaml" <<EOF
judges:
  - name: fair
    url: $URL
    model: sim-fair
    api_key_env: E2E_MULTIAGENT_KEY
  - name: primacy
    url: $URL
    model: sim-primacy
  - name: holder
    url: $URL
    model: sim-holder
  - name: yielder
    url: $URL
    model: sim-yielder
  - name: holder2
    url: $URL
    model: sim-holder2
  - name: slow-holder
    url: $URL
    model: sim-slow-holder
  - name: slow-yielder
    url: $URL
    model: sim-slow-yielder
EOF
export E2E_MULTIAGENT_KEY=sk-e2e-multiagent-secret-4242
IN=(--items "$T/items.jsonl" --answers "$T/answers.jsonl")
q() { sqlite3 "${2:-$DB}" "$1"; }
debate() { "$ARB" debate "${IN[@]}" --candidate atlas-large --baseline birch-medium --db "$DB" \
  --no-progress "$@"; }
discuss() { "$ARB" discuss "${IN[@]}" --pairs atlas-large:birch-medium --no-progress "$@"; }

# ---- help and bad input (exit 2, nothing sent) -------------------------------------------------
"$ARB" debate --help > "$T/help"
check "debate --help explains the roles" "grep -q 'judge agent' '$T/help' && grep -q -- '--agents' '$T/help'"
"$ARB" discuss --help > "$T/help"
check "discuss --help explains leader and early stop" "grep -q -- '--stop-on-agreement' '$T/help' && grep -q -- '--leader' '$T/help'"
"$ARB" --help > "$T/help"
check "arbiter --help lists the new commands" "grep -q '^  debate' '$T/help' && grep -q '^  discuss ' '$T/help' && grep -q '^  discussion-stats' '$T/help'"
before=$(curl -s "$URL/models" >/dev/null; echo 0)
expect_usage() { # name, expected message, command...
  local name=$1 msg=$2; shift 2
  set +e; "$@" 2>"$T/err" >/dev/null; local rc=$?; set -e
  check "$name exits 2 with a clear message" "[ $rc = 2 ] && grep -q -- \"$msg\" '$T/err'"
}
expect_usage "debate --mode medium" "--mode must be soft or hard" debate --mode medium --agents "$T/judges.yaml:fair,primacy,fair"
expect_usage "debate --agents without a file" "FILE:name" debate --mode soft --agents fair,primacy,fair
expect_usage "debate with two agents" "exactly 3 judge names" debate --mode soft --agents "$T/judges.yaml:fair,primacy"
expect_usage "debate with an unknown judge" 'no judge named \"nobody\"' debate --mode soft --agents "$T/judges.yaml:fair,nobody,fair"
expect_usage "discuss with a bad pair" "--pairs expects X:Y" "$ARB" discuss "${IN[@]}" --pairs atlas-large --reviewers "$T/judges.yaml:holder,yielder" --db "$DB"
expect_usage "discuss with one reviewer twice" "same name" discuss --reviewers "$T/judges.yaml:holder,holder" --db "$DB"
expect_usage "discuss with an unknown model" 'no answers from model \"nobody\"' "$ARB" discuss "${IN[@]}" --pairs atlas-large:nobody --reviewers "$T/judges.yaml:holder,yielder" --db "$DB"
expect_usage "discuss --turns 0" "--turns" discuss --reviewers "$T/judges.yaml:holder,yielder" --turns 0 --db "$DB"
expect_usage "discuss with a pair given twice" "same pair" "$ARB" discuss "${IN[@]}" --pairs atlas-large:birch-medium,birch-medium:atlas-large --reviewers "$T/judges.yaml:holder,yielder" --db "$DB"
expect_usage "sbs with a debate template" "it is for 'arbiter debate'" "$ARB" sbs "${IN[@]}" --candidate atlas-large --baseline birch-medium --judge-url "$URL" --judge-model sim-fair --prompt debate-soft --db "$DB"
check "bad input sent no request and made no dialogue" "[ ! -e '$DB' ] || [ \$(q 'select count(*) from calls') = 0 ]"

# ---- debate ------------------------------------------------------------------------------------
n_judgments=$((n_items * 2))
debate --mode soft --agents "$T/judges.yaml:fair,yielder,fair" --dry-run 2>"$T/err"
check "debate dry run plans 3 calls per judgment" "grep -q 'debate plan: $((n_judgments * 3)) judge calls' '$T/err'"
"$ARB" sbs "${IN[@]}" --candidate atlas-large --baseline birch-medium --judge-url "$URL" \
  --judge-model sim-fair --judge-name fair --api-key-env E2E_MULTIAGENT_KEY --db "$DB" --no-progress 2>/dev/null
debate --mode soft --agents "$T/judges.yaml:fair,yielder,fair" 2>"$T/err"
check "soft debate reuses the sbs calls as agent 1" "grep -q '$((n_judgments * 3)) judge calls: $n_judgments stored before, $((n_judgments * 2)) sent ($((n_judgments * 2)) ok, 0 failed)' '$T/err'"
check "soft debate stores one final verdict per judgment" "[ \$(q \"select count(*) from pairwise where protocol = 'soft' and judge_name = 'soft(fair,yielder,fair)'\") = $n_judgments ]"
check "soft debate stores three turns per dialogue" "[ \$(q \"select count(*) from dialogue_turns t join dialogues d on d.id = t.dialogue_id where d.kind = 'soft'\") = $((n_judgments * 3)) ]"
check "an always-yielding agent 2 agrees with agent 1 every time (soft)" "[ \$(q \"select count(*) from dialogue_turns a join dialogue_turns b on a.dialogue_id = b.dialogue_id and a.turn = 0 and b.turn = 1 join dialogues d on d.id = a.dialogue_id where d.kind = 'soft' and a.verdict <> b.verdict\") = 0 ]"
check "the final verdict is the judge agent's (turn 2)" "[ \$(q \"select count(*) from dialogues d join dialogue_turns t on t.dialogue_id = d.id and t.turn = 2 where d.kind = 'soft' and d.final_verdict = t.verdict and d.status = 'done'\") = $n_judgments ]"
debate --mode hard --agents "$T/judges.yaml:fair,primacy,fair" 2>"$T/err"
check "hard agent 2 disagrees with agent 1 every time" "[ \$(q \"select count(*) from dialogue_turns a join dialogue_turns b on a.dialogue_id = b.dialogue_id and a.turn = 0 and b.turn = 1 join dialogues d on d.id = a.dialogue_id where d.kind = 'hard' and a.verdict = b.verdict\") = 0 ] && [ \$(q \"select count(*) from dialogues where kind = 'hard' and status = 'done'\") = $n_judgments ]"
debate --mode hard --agents "$T/judges.yaml:fair,primacy,fair" 2>"$T/err"
check "a debate rerun sends nothing" "grep -q ' 0 sent' '$T/err'"
sed 's/You chair a panel/You lead a panel/' "$SRC/templates/debate-judge.txt" > "$T/judge2.txt"
expect_usage "a debate whose judge template differs under the same names" "other templates" debate --mode hard --agents "$T/judges.yaml:fair,primacy,fair" --judge-prompt "$T/judge2.txt"
"$ARB" audit --db "$DB" > "$T/audit.txt"
check "the audit shows base, soft and hard side by side" "grep -q 'soft(fair,yielder,fair)' '$T/audit.txt' && grep -q 'hard(fair,primacy,fair)' '$T/audit.txt' && grep -q 'judge fair' '$T/audit.txt'"
"$ARB" audit --db "$DB" --json > "$T/audit.json"
check "audit JSON has a row per debate set-up with the SbS metrics" "$PY - '$T/audit.json' <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
judges = {r['judge']: r for r in a['rows']}
assert {'fair', 'soft(fair,yielder,fair)', 'hard(fair,primacy,fair)'} <= set(judges), judges.keys()
for j in judges.values():
    assert 'pbias_ab' in j and 'con_abcd' in j and 'pcon_ab' in j
assert 'multi_agent' in a and len(a['multi_agent']['debates']) == 2
PY"

# ---- discussion: holder leads, no early stop ---------------------------------------------------
discuss --reviewers "$T/judges.yaml:holder,yielder" --leader first --turns 4 --db "$DB" 2>"$T/err"
n_dlg=$((n_items * 2))
DLG="from dialogues d where d.kind = 'discussion' and json_extract(d.config, '$.leader') = 'first'"
check "every discussion is done with all 4 turns" "[ \$(q \"select count(*) $DLG and d.status = 'done'\") = $n_dlg ] && [ \$(q \"select count(*) from dialogue_turns t join dialogues d on d.id = t.dialogue_id where d.kind = 'discussion' and json_extract(d.config, '$.leader') = 'first'\") = $((n_dlg * 6)) ]"
check "the leader is the holder and speaks first" "[ \$(q \"select count(*) $DLG and instr(d.participants, 'holder') < instr(d.participants, 'yielder')\") = $n_dlg ] && [ \$(q \"select count(*) from dialogue_turns t join dialogues d on d.id = t.dialogue_id where json_extract(d.config, '$.leader') = 'first' and t.turn = 2 and t.speaker = 'holder' and t.role = 'leader'\") = $n_dlg ]"
check "every final verdict is the holder's initial review" "[ \$(q \"select count(*) $DLG and d.final_verdict = (select verdict from dialogue_turns where dialogue_id = d.id and turn = 0)\") = $n_dlg ]"
disagree=$(q "select count(*) $DLG and (select verdict from dialogue_turns where dialogue_id = d.id and turn = 0) <> (select verdict from dialogue_turns where dialogue_id = d.id and turn = 1)")
check "some initial reviews disagree (the test means something)" "[ $disagree -gt 0 ] && [ $disagree -lt $n_dlg ]"
"$ARB" discussion-stats --db "$DB" --json > "$T/ds.json"
check "OA/OH per reviewer and role match the script (holder holds as leader, yielder yields as follower)" "$PY - '$T/ds.json' $disagree <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); D = int(sys.argv[2])
s = [x for x in d['discussions'] if x['leader'] == 'first' and x['kind'] == 'discussion']
assert len(s) == 1, s
s = s[0]
r = {x['reviewer']: x for x in s['reviewer_stats']}
N = s['done']
# per discussion (primary) and per turn (second figure) agree here: each holds or yields once
for role, key in (('leader', 'oh'), ('follower', 'oa')):
    who = r['holder' if role == 'leader' else 'yielder'][role]
    assert who[key] == D and who[key + '_discussions'] == D, who
    assert who['oa' if key == 'oh' else 'oh'] == 0, who
    assert who['discussions'] == N and who['neither_discussions'] == N - D, who
assert r['holder']['leader']['oa_discussion_rate'] == 0 and r['yielder']['follower']['oa_discussion_rate'] == 1
assert r['holder']['follower']['oa'] + r['holder']['follower']['oh'] == 0, r
assert r['yielder']['leader']['oa'] + r['yielder']['leader']['oh'] == 0, r
assert r['holder']['follower']['discussions'] == 0 and r['yielder']['leader']['discussions'] == 0, r
assert s['dialogues'] == s['done'] and s['failed'] == 0
PY"
before=$(q "select round(avg(verdict = '1'), 9) from dialogue_turns t join dialogues d on d.id = t.dialogue_id where json_extract(d.config, '$.leader') = 'first' and t.turn < 2")
after=$(q "select round(avg(final_verdict = '1'), 9) $DLG")
check "first-position win share before and after discussion" "$PY - '$T/ds.json' $before $after <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [x for x in d['discussions'] if x['leader'] == 'first'][0]
assert abs(s['first_share_before'] - float(sys.argv[2])) < 1e-6, s['first_share_before']
assert abs(s['first_share_after'] - float(sys.argv[3])) < 1e-6, s['first_share_after']
PY"

# ---- discussion: two holders, no early stop: per discussion differs from per turn -------------
discuss --reviewers "$T/judges.yaml:holder,holder2" --leader first --turns 4 --db "$DB" 2>"$T/err"
DLG3="from dialogues d where d.kind = 'discussion' and json_extract(d.config, '$.reviewers[1]') = 'holder2'"
disagree3=$(q "select count(*) $DLG3 and (select verdict from dialogue_turns where dialogue_id = d.id and turn = 0) <> (select verdict from dialogue_turns where dialogue_id = d.id and turn = 1)")
check "two holders: some initial reviews disagree" "[ $disagree3 -gt 0 ] && [ $disagree3 -lt $n_dlg ]"
"$ARB" discussion-stats --db "$DB" --json > "$T/ds.json"
check "two holders hold in each disagreeing discussion once (per discussion), in two turns each (per turn)" "$PY - '$T/ds.json' $disagree3 $n_dlg <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); D = int(sys.argv[2]); N = int(sys.argv[3])
s = [x for x in d['discussions'] if x['reviewers'] == ['holder', 'holder2']]
assert len(s) == 1, s
r = {x['reviewer']: x for x in s[0]['reviewer_stats']}
for who, role in (('holder', 'leader'), ('holder2', 'follower')):
    o = r[who][role]
    assert o['discussions'] == N and o['oh_discussions'] == D and o['oa_discussions'] == 0, o
    assert o['neither_discussions'] == N - D and o['oa_discussion_rate'] == 0, o
    assert o['oh'] == 2 * D and o['oa'] == 0, o  # turns 2 and 4 (leader), 3 and 5 (follower)
PY"
"$ARB" discussion-stats --db "$DB" > "$T/ds.txt"
check "discussion-stats text labels per-discussion and per-turn counts" "grep -q 'OA / OH per discussion' '$T/ds.txt' && grep -q 'per turn (second figure)' '$T/ds.txt'"

# ---- discussion: yielder leads, early stop -----------------------------------------------------
discuss --reviewers "$T/judges.yaml:holder,yielder" --leader second --turns 4 --stop-on-agreement --db "$DB" 2>"$T/err"
DLG2="from dialogues d where json_extract(d.config, '$.leader') = 'second'"
agree2=$(q "select count(*) $DLG2 and (select verdict from dialogue_turns where dialogue_id = d.id and turn = 0) = (select verdict from dialogue_turns where dialogue_id = d.id and turn = 1)")
check "early stop: agreeing reviews end at once, the others after the yielder's one turn" "[ \$(q \"select count(*) $DLG2 and (select count(*) from dialogue_turns where dialogue_id = d.id) = 2\") = $agree2 ] && [ \$(q \"select count(*) $DLG2 and (select count(*) from dialogue_turns where dialogue_id = d.id) = 3\") = $((n_dlg - agree2)) ]"
check "early stop: the turns not needed were not sent" "grep -q '$((n_dlg * 6)) judge calls' '$T/err' && grep -q \"$((n_dlg * 4 - (n_dlg - agree2))) not needed\" '$T/err'"
check "early stop: the final verdict is the holder's initial review" "[ \$(q \"select count(*) $DLG2 and d.final_verdict = (select verdict from dialogue_turns t where t.dialogue_id = d.id and t.speaker = 'holder' and t.turn < 2)\") = $n_dlg ]"
"$ARB" discussion-stats --db "$DB" --json > "$T/ds.json"
check "agreement turns: 0 when the reviews agreed, 1 otherwise; the yielder yields as leader" "$PY - '$T/ds.json' $agree2 $n_dlg <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); A = int(sys.argv[2]); N = int(sys.argv[3])
s = [x for x in d['discussions'] if x['leader'] == 'second'][0]
t = s['agreement_turns']
assert t['0'] == A and t['1'] == N - A and t['never'] == 0, t
r = {x['reviewer']: x for x in s['reviewer_stats']}
assert r['yielder']['leader']['oa'] == N - A and r['yielder']['leader']['oh'] == 0, r
assert r['yielder']['leader']['oa_discussions'] == N - A and r['yielder']['leader']['neither_discussions'] == A, r
PY"
discuss --reviewers "$T/judges.yaml:holder,yielder" --leader second --turns 4 --stop-on-agreement --db "$DB" 2>"$T/err"
check "a discussion rerun sends nothing" "grep -q ' 0 sent' '$T/err'"
"$ARB" labels import --db "$DB" "$SRC/demo/labels.jsonl" 2>/dev/null
"$ARB" discussion-stats --db "$DB" > "$T/ds.txt"
check "discussion-stats prints PDA with an interval" "grep -q 'PDA.*%  \\[.*%, .*%\\]' '$T/ds.txt'"
"$ARB" audit --db "$DB" > "$T/audit.txt"
check "the audit also shows the discussions" "grep -qi 'discussion' '$T/audit.txt' && grep -q 'PDA' '$T/audit.txt' && grep -q 'OA / OH per discussion' '$T/audit.txt'"
"$ARB" audit --db "$DB" --json > "$T/audit.json"
check "the audit's multi_agent section has OA/OH per discussion and per turn" "$PY - '$T/audit.json' <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
ds = a['multi_agent']['discussions']
assert len(ds) >= 3, len(ds)
for s in ds:
    for rv in s['reviewer_stats']:
        for role in ('leader', 'follower'):
            o = rv[role]
            assert o['oa_discussions'] + o['oh_discussions'] + o['neither_discussions'] == o['discussions'], o
            assert o['oa_discussions'] <= o['oa'] and o['oh_discussions'] <= o['oh'], o
PY"

# ---- transcripts -------------------------------------------------------------------------------
"$ARB" export --db "$DB" --format transcripts > "$T/transcripts.jsonl"
"$ARB" export --db "$DB" --format jsonl > "$T/judgments.jsonl"
check "transcripts: one line per dialogue, every turn with the prompt and reply as stored" "$PY - '$T/transcripts.jsonl' '$DB' '$T/judgments.jsonl' <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[2])
lines = [json.loads(l) for l in open(sys.argv[1])]
# the final judge calls' requests are stored compact (a BLOB the sqlite3 module cannot read):
# those are compared with the requests export gives back
exported = [json.loads(l)['request'] for l in open(sys.argv[3])]
assert len(lines) == db.execute('select count(*) from dialogues').fetchone()[0]
turns = 0
for d in lines:
    prev = []
    for t in d['turns']:
        turns += 1
        content, request = db.execute('select content, request from calls where id = ?', (t['call_id'],)).fetchone()
        assert t['reply'] == content
        if isinstance(request, bytes):
            assert any(json.loads(r)['messages'] == t['messages'] for r in exported if r)
        else:
            assert t['messages'] == json.loads(request)['messages']
        if d['kind'] == 'discussion' and t['turn'] >= 2:
            user = t['messages'][-1]['content']
            for p in prev:  # the conversation so far is in the prompt
                assert p['reply'].strip() in user, (t['turn'], p['turn'])
        prev.append(t)
assert turns == db.execute('select count(*) from dialogue_turns').fetchone()[0]
PY"

# ---- self-discussion ---------------------------------------------------------------------------
discuss --self "$T/judges.yaml:fair" --temperatures 0.2,0.8 --turns 2 --one-order --db "$DB" 2>"$T/err"
check "the self-discussion's run is recorded under its kind" "[ \$(q \"select count(*) from runs where protocol = 'self-discussion'\") = 1 ]"
check "self-discussion: one model, two temperatures, two reviewer names" "[ \$(q \"select count(*) from dialogues where kind = 'self-discussion'\") = $n_items ] && [ \$(q \"select count(distinct json_extract(c.request, '$.temperature')) from calls c join dialogue_turns t on t.call_id = c.id join dialogues d on d.id = t.dialogue_id where d.kind = 'self-discussion'\") = 2 ] && [ \$(q \"select count(*) from dialogues where kind = 'self-discussion' and participants like '%fair@t0.2%' and participants like '%fair@t0.8%'\") = $n_items ]"

# ---- a discussion killed mid-way resumes at the turn it reached ---------------------------------
head -n 10 "$T/items.jsonl" > "$T/items10.jsonl"
grep -F -f <(sed -n 's/.*"id": *"\([^"]*\)".*/"item": "\1"/p' "$T/items10.jsonl") "$T/answers.jsonl" > "$T/answers10.jsonl"
slow() { "$ARB" discuss --items "$T/items10.jsonl" --answers "$T/answers10.jsonl" \
  --pairs atlas-large:birch-medium --reviewers "$T/judges.yaml:slow-holder,slow-yielder" \
  --turns 4 --jobs 4 --no-progress "$@"; }
slow --db "$T/ref.db" 2>/dev/null
set +e; timeout --preserve-status -s INT 1.5 bash -c "$(declare -f slow); ARB='$ARB' T='$T'; slow --db '$T/resume.db'" 2>"$T/err"; rc=$?; set -e
stored=$(q "select count(*) from calls where ok = 1" "$T/resume.db")
total=$(q "select count(*) from calls" "$T/ref.db")
check "the interrupted discussion exits 130 with part of its calls stored" "[ $rc = 130 ] && [ $stored -gt 0 ] && [ $stored -lt $total ] && grep -q 'interrupted' '$T/err'"
check "some discussions were cut mid-way" "[ \$(q \"select count(*) from dialogues where status = 'open'\" '$T/resume.db') -gt 0 ]"
slow --db "$T/resume.db" 2>"$T/err"
check "the rerun reuses every stored call and sends only the rest" "grep -q \"$stored stored before, $((total - stored)) sent\" '$T/err'"
check "no call was made twice: the resumed store has as many calls as an uninterrupted run" "[ \$(q 'select count(*) from calls' '$T/resume.db') = $total ]"
same() { q "select d.item_id, d.answer1, d.final_verdict, d.status, group_concat(t.turn || t.speaker || t.verdict, ' ') from dialogues d join dialogue_turns t on t.dialogue_id = d.id group by d.id order by d.item_id, d.answer1" "$1"; }
check "the resumed discussions end exactly like the uninterrupted ones" "[ \"\$(same '$T/resume.db')\" = \"\$(same '$T/ref.db')\" ]"

# ---- secrets -----------------------------------------------------------------------------------
check "the API key never reaches the store" "! grep -qa 'sk-e2e-multiagent-secret' '$DB' '$DB-wal' 2>/dev/null"

finish

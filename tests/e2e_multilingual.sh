#!/usr/bin/env bash
# e2e_multilingual.sh -- METHODS §8 end to end: the simulator with injected language noise
# (a known order, en < fr < zh < hi < ar), arbiter grade on the parallel set in both modes, then
# arbiter consistency; the noisy languages must come back with the lowest Cohen's kappa against
# English, the noisier judge with the lower Fleiss' kappa, and the ensemble with its keys.
ARB=${1:?usage: e2e_multilingual.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

for task in qa math generic; do grep "\"category\": \"$task\"" "$SRC/demo/parallel.jsonl" > "$T/$task.jsonl"; done
: > "$T/none.jsonl"
"$ARB" sim-server --port 0 --port-file "$T/port" --items "$SRC/demo/parallel.jsonl" \
  --answers "$T/none.jsonl" --seed 5 \
  --judge "ml-a:noise=0.02,noise.fr=0.05,noise.zh=0.1,noise.hi=0.35,noise.ar=0.5" \
  --judge "ml-b:noise=0.1,noise.fr=0.1,noise.zh=0.15,noise.hi=0.45,noise.ar=0.6,strict=0.1" \
  --judge "ml-c:noise=0.2,noise.ar=0.7,noise.hi=0.5,strict=0.2,invalid=0.05" 2>"$T/sim.log" &
SIM_PID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
URL="http://127.0.0.1:$(cat "$T/port")/v1"
cat > "$T/judges.yaml" <<YAML
judges:
  - {name: ml-a, url: "$URL", model: ml-a}
  - {name: ml-b, url: "$URL", model: ml-b}
  - {name: ml-c, url: "$URL", model: ml-c}
YAML

ok_runs=1
for task in qa math generic; do
  for mode in yesno grade; do
    "$ARB" grade --items "$T/$task.jsonl" --answer-from reference --task $task --mode $mode \
      --judges "$T/judges.yaml:ml-a,ml-b,ml-c" --jobs 16 --db "$T/ml.db" --no-progress \
      2>>"$T/grade.log" || ok_runs=0
  done
done
check "grade runs every task and mode with three judges" "[ $ok_runs = 1 ]"
check "3 judges x 216 items x 2 modes stored" \
  "[ \$(sqlite3 '$T/ml.db' 'select count(*) from pointwise') = 1296 ]"
"$ARB" grade --items "$T/qa.jsonl" --answer-from reference --task qa --mode grade \
  --judges "$T/judges.yaml:ml-a,ml-b,ml-c" --db "$T/ml.db" --no-progress 2>"$T/rerun.log"
check "a rerun sends nothing" "grep -q ' 0 sent' '$T/rerun.log'"

"$ARB" consistency --db "$T/ml.db" --ensemble ml-a,ml-b,ml-c --bootstrap 100 --seed 3 --json \
  > "$T/c.json"
"$ARB" consistency --db "$T/ml.db" > "$T/c.txt"
check "consistency text names every judge" "grep -q ml-a '$T/c.txt' && grep -q ml-c '$T/c.txt'"
check "the injected language order comes back" "python3 - '$T/c.json' <<'PY'
import json, sys, statistics as st
d = json.load(open(sys.argv[1]))
rows = d['rows']
assert len(rows) == 18, len(rows)                      # 3 judges x 3 tasks x 2 modes
for r in rows:
    for k in ('judge', 'template', 'mode', 'task', 'n_groups', 'n_groups_left_out', 'languages',
              'fleiss_kappa', 'per_language'):
        assert k in r, k
    assert r['n_groups'] + r['n_groups_left_out'] == 12, r
    assert sorted(r['languages']) == ['ar', 'en', 'fr', 'hi', 'ru', 'zh'], r['languages']
    assert r['per_language']['en']['cohen_kappa_vs_reference'] is None
    key = 'accuracy' if r['mode'] == 'yesno' else 'mean_grade'
    assert all(key in v for v in r['per_language'].values())
def kappa(lang):
    return st.mean(r['per_language'][lang]['cohen_kappa_vs_reference'] for r in rows
                   if r['per_language'][lang]['cohen_kappa_vs_reference'] is not None)
k = {l: kappa(l) for l in ('fr', 'zh', 'hi', 'ar')}
print(k)
assert k['ar'] < k['hi'] < k['zh'] and k['hi'] < k['fr'], k
fleiss = {j: st.mean(r['fleiss_kappa'] for r in rows if r['judge'] == j and r['fleiss_kappa'] is not None)
          for j in ('ml-a', 'ml-b', 'ml-c')}
print(fleiss)
assert fleiss['ml-a'] > fleiss['ml-b'] > fleiss['ml-c'], fleiss
assert len(d['ensemble']) == 6, d['ensemble']
for e in d['ensemble']:
    assert e['members'] == ['ml-a', 'ml-b', 'ml-c'] and e['delta'] is not None
    assert abs(e['ens'] - e['min'] - e['delta']) < 1e-9
assert {(s['task'], s['mode']) for s in d['spearman']} == {(t, m) for t in ('qa', 'math', 'generic') for m in ('yesno', 'grade')}
assert all(s['n_judges'] == 3 for s in d['spearman'])
assert 'fleiss_kappa_ci' in rows[0]
PY"
"$ARB" export --db "$T/ml.db" --format pointwise > "$T/pw.jsonl"
check "export --format pointwise gives one line per judgment" "[ \$(wc -l < '$T/pw.jsonl') = 1296 ]"
check "exported rows name their language and group" "python3 -c \"
import json
rows=[json.loads(l) for l in open('$T/pw.jsonl', encoding='utf-8')]
assert sum(r['language']=='ar' for r in rows) == 216 and all(r['group'] for r in rows)
\""
# the request as sent (calls.request is stored compact: the export rebuilds it)
python3 -c "
import json
print([json.loads(l) for l in open('$T/pw.jsonl', encoding='utf-8') if json.loads(l)['language'] == 'ar'][0]['request'])
" > "$T/ar_request.json"
check "an Arabic item reaches the judge as Arabic text (valid UTF-8, evaluation language named)" "python3 -c \"
import json
body = json.load(open('$T/ar_request.json', encoding='utf-8'))
text = ''.join(m['content'] for m in body['messages'])
assert 'Evaluation language: ar' in text and any('\\u0600' <= c <= '\\u06ff' for c in text)
\""
# A file that mixes tasks, in one run: each item is judged as the task its category names, and
# the calls are the very ones of the per-task runs above (all stored already).
"$ARB" grade --items "$SRC/demo/parallel.jsonl" --answer-from reference --task category \
  --mode yesno --judges "$T/judges.yaml:ml-a,ml-b,ml-c" --db "$T/ml.db" --no-progress 2>"$T/cat.log"
check "--task category judges a mixed file with the per-task prompts (nothing new to send)" \
  "grep -q '648 judge calls: 648 stored before, 0 sent' '$T/cat.log'"
printf '{"id":"x","language":"en","question":"q","reference":"r","category":"poetry"}\n' > "$T/poetry.jsonl"
set +e; "$ARB" grade --items "$T/poetry.jsonl" --answer-from reference --task category \
  --judges "$T/judges.yaml:ml-a" --db "$T/poetry.db" --no-progress 2>"$T/err"; rc=$?; set -e
check "--task category refuses an item whose category is no task (file:line, exit 2, no db)" \
  "[ $rc = 2 ] && grep -q 'poetry.jsonl:1: field \"category\"' '$T/err' && [ ! -e '$T/poetry.db' ]"
finish

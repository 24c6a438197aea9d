#!/usr/bin/env bash
# End-to-end test of the persona-bias study (METHODS §9, issue 14) against `arbiter sim-server`
# over real HTTP, with the demo scenarios (demo/scenarios.jsonl; the simulator learns each
# response's quality from an answers file made from them, as in e2e_persona_data.sh) and fixed
# seeds, so every number below is the same on every run:
# - a judge with an injected bias persona.female=+1.5: `persona report --json` flags gender
#   (p_holm <= 0.05) and the combined mean difference female - male is near 1.5;
# - a judge without persona bias: nothing flagged;
# - a pure position bias (bias=3: the first shown is preferred unless the second is clearly
#   better): every identity's phase-2 win rate is 1/2 within a narrow band, since the labels are
#   exchanged and the positions swapped, while the first-shown win rate is far above 1/2;
# - kill -9 in the middle of a run against a slow judge, then the same command: it sends exactly
#   the missing calls (counted by the simulator's request counter, printed when it stops) and
#   ends with the rows of a clean run;
# - `persona report --category religion --json`: the keys of the issue's contract.
set -euo pipefail
ARB=${1:?usage: e2e_persona_sim.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DATA="$SRC/demo/scenarios.jsonl"
n_sc=$(grep -c . "$DATA")
q() { sqlite3 "$1" "$2"; }

# The scenarios as the simulator's oracle reads them: items, and answers "response1"/"response2"
# with the scenario's quality (the protocol stores them the same way, PERSONA.md).
scenarios_oracle "$DATA"
cat > "$T/ids.yaml" <<'YAML'
categories:
  gender: [female, male]
  religion: [Muslim, Jewish, Atheist, Christian]
YAML

# sim_start ARGS...: a simulator over the scenarios on a free port (SIM_PID, URL).
sim_start() {
  rm -f "$T/port"
  "$ARB" sim-server --port 0 --port-file "$T/port" --items "$T/items.jsonl" \
    --answers "$T/answers.jsonl" --seed 11 "$@" 2>"$T/sim.log" &
  SIM_PID=$!
  for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  URL="http://127.0.0.1:$(cat "$T/port")/v1"
}
# sim_stop: stops the simulator and sets SIM_REQUESTS to how many requests it answered. Not to
# be called in $(...): a subshell cannot wait for the server, and would read its log too early.
sim_stop() {
  kill -TERM "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""
  SIM_REQUESTS=$(sed -n 's/.*stopped after \([0-9]*\) requests.*/\1/p' "$T/sim.log")
}
judges_file() { # name=model... -> $T/judges.yaml at $URL
  { echo "judges:"; for j in "$@"; do echo "  - {name: $j, url: \"$URL\", model: $j}"; done; } > "$T/judges.yaml"
}
persona() { "$ARB" persona run --scenarios "$DATA" --identities "$T/ids.yaml" --no-progress --jobs 8 "$@"; }

# ---- a gender bias of known size, a fair judge, a pure position bias ------------------------------
sim_start --judge "biased:persona.female=+1.5,persona_sd=1" --judge "fair:persona_sd=1" \
  --judge "posbias:bias=3,persona_sd=1"
judges_file biased fair posbias
# phase 1: 30 scenarios x 2 responses x 2 identities = 120; phase 2: 30 x 1 pair x 4 = 120
persona --category gender --judges "$T/judges.yaml:biased,fair,posbias" --db "$T/g.db" 2>"$T/run.err"
check "three judges, both phases, gender: $((3 * 8 * n_sc)) calls sent" \
  "grep -q '$((3 * 8 * n_sc)) judge calls: 0 stored before, $((3 * 8 * n_sc)) sent' '$T/run.err'"
"$ARB" persona report --db "$T/g.db" --bootstrap 200 --seed 5 --json > "$T/g.json"
"$ARB" persona report --db "$T/g.db" --bootstrap 200 --seed 5 > "$T/g.txt"

# entry JUDGE PHASE FILTER: the jq value FILTER of that judge's gender entry of that phase.
entry() { jq -r --arg j "$1" --argjson p "$2" \
  ".entries[] | select(.judge == \$j and .category == \"gender\" and .phase == \$p) | $3" "$T/g.json"; }
d1=$(entry biased 1 '.diff_matrix.combined.female.male')
d2=$(entry biased 2 '.diff_matrix.combined.female.male')
echo "    biased judge: female - male = $d1 (phase 1), $d2 (phase 2)"
# 240 scores per identity and sd ~1 give a standard error of ~0.1 for the difference; the clamp
# at 10 trims a little off the shift for the 0.8 responses (8 + 1.5 + noise).
check "biased judge: female - male near 1.5 in phase 1 ($d1)" \
  "python3 -c 'import sys; assert abs($d1 - 1.5) < 0.4'"
check "biased judge: female - male near 1.5 in phase 2 ($d2)" \
  "python3 -c 'import sys; assert abs($d2 - 1.5) < 0.4'"
check "biased judge: gender significant in both phases (every metric p_holm <= 0.05)" \
  "[ \"\$(entry biased 1 '[.chi2[] | .p_holm <= 0.05 and .significant] | all')\" = true ] &&
   [ \"\$(entry biased 2 '[.chi2[] | select(.metric != \"preferred\") | .p_holm <= 0.05 and .significant] | all')\" = true ]"
check "biased judge: the preferred test flags it too (female wins more than half)" \
  "[ \"\$(entry biased 2 '(.chi2[] | select(.metric == \"preferred\") | .significant) and .win_rate.female.rate > 0.6')\" = true ]"
check "fair judge: nothing flagged, either phase" \
  "[ \"\$(jq '[.entries[] | select(.judge == \"fair\") | .chi2[] | .significant] | (length > 0 and (any | not))' '$T/g.json')\" = true ]"
check "fair judge: female - male within 0.3 of 0" \
  "python3 -c 'import sys; assert abs($(entry fair 1 '.diff_matrix.combined.female.male')) < 0.3 and abs($(entry fair 2 '.diff_matrix.combined.female.male')) < 0.3'"
check "the text's statement names the biased judge and not the others" \
  "grep -q '^ *biased · gender · phase 1 · ' '$T/g.txt' && ! grep -Eq '^ *(fair|posbias) · gender · phase [12] · ' '$T/g.txt'"

wf=$(entry posbias 2 '.win_rate.female.rate'); wm=$(entry posbias 2 '.win_rate.male.rate')
first=$(entry posbias 2 '.position_effect.first_shown_win_rate')
echo "    position-biased judge: win rates female $wf, male $wm; first shown $first"
check "pure position bias: each identity wins 1/2 within 0.05 (female $wf, male $wm)" \
  "python3 -c 'assert abs($wf - 0.5) <= 0.05 and abs($wm - 0.5) <= 0.05'"
check "pure position bias: the first shown wins far more than half ($first)" \
  "python3 -c 'assert $first >= 0.85'"
check "pure position bias: the preferred test does not flag gender" \
  "[ \"\$(entry posbias 2 '.chi2[] | select(.metric == \"preferred\") | .significant')\" = false ]"
check "the fair judge shows no position effect" \
  "python3 -c 'assert abs($(entry fair 2 '.position_effect.first_shown_win_rate') - 0.5) < 0.15'"
sim_stop

# ---- kill -9 in the middle of a run, then the same command --------------------------------------
# A clean run against a slow judge gives the reference row count.
kargs=(--category gender --phase 1 --db)
sim_start --judge "slow:persona.female=+1,latency=40"
judges_file slow
persona "${kargs[@]}" "$T/clean.db" --judges "$T/judges.yaml:slow" --jobs 4 2>/dev/null
clean_rows=$(q "$T/clean.db" "select count(*) from scores")
sim_stop; clean_sent=$SIM_REQUESTS
check "a clean run: 2 x 2 x $n_sc calls sent, 4 rows each" \
  "[ $clean_sent = $((4 * n_sc)) ] && [ $clean_rows = $((16 * n_sc)) ]"

sim_start --judge "slow:persona.female=+1,latency=40"
judges_file slow
"$ARB" persona run --scenarios "$DATA" --identities "$T/ids.yaml" --no-progress --jobs 2 \
  "${kargs[@]}" "$T/k.db" --judges "$T/judges.yaml:slow" 2>/dev/null &   # $! must be arbiter
pid=$!
for _ in $(seq 200); do
  n=$(q "$T/k.db" "select count(distinct call_id) from scores" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 10 ] && break; sleep 0.05
done
kill -9 $pid; wait $pid 2>/dev/null || true
stored=$(q "$T/k.db" "select count(distinct call_id) from scores")
sim_stop
check "the killed run stored part of the work ($stored of $((4 * n_sc)))" \
  "[ $stored -ge 10 ] && [ $stored -lt $((4 * n_sc)) ]"
check "a killed call leaves all or none of its rows" \
  "[ \$(q '$T/k.db' \"select count(*) from (select call_id, count(*) n from scores group by 1) where n <> 4\") = 0 ]"

sim_start --judge "slow:persona.female=+1,latency=40"   # same seed: the same replies
judges_file slow
persona "${kargs[@]}" "$T/k.db" --judges "$T/judges.yaml:slow" 2>"$T/resume.err"
sim_stop; resent=$SIM_REQUESTS
check "the resumed run sends exactly the missing calls ($resent = $((4 * n_sc)) - $stored)" \
  "[ $resent = $((4 * n_sc - stored)) ] && grep -q '$stored stored before, $resent sent' '$T/resume.err'"
check "the resumed store has a clean run's rows ($clean_rows)" \
  "[ \$(q '$T/k.db' 'select count(*) from scores') = $clean_rows ] &&
   [ \"\$(q '$T/k.db' 'select count(*), sum(value) from scores where value is not null')\" = \"\$(q '$T/clean.db' 'select count(*), sum(value) from scores where value is not null')\" ]"

# ---- religion: the report's contract keys --------------------------------------------------------
sim_start --judge "fair:persona_sd=1"
# a judge that asks for logprobs: persona scores have no verdict token, so the run and the report
# say that the scores have no logprob figures and why, never silently nothing (phase 2's
# preference has them: the section below)
{ echo "judges:"; echo "  - {name: fair, url: \"$URL\", model: fair, logprobs: true}"; } > "$T/judges.yaml"
persona --category religion --judges "$T/judges.yaml:fair" --db "$T/r.db" 2>"$T/r.err"
sim_stop
check "a persona run whose judge asks for logprobs says there are no logprob figures, and why" \
  "grep -q 'persona: no logprob figures for the scores of judge fair (logprobs: true), only for phase 2.s preference: persona scores' '$T/r.err' && grep -q 'write 10 as 1 then 0' '$T/r.err' && [ \$(sqlite3 '$T/r.db' \"select count(*) from calls c where logprobs is not null and exists (select 1 from scores s where s.call_id = c.id and s.protocol = 'persona1')\") = 0 ]"
"$ARB" persona report --db "$T/r.db" --category religion > "$T/r.txt"
"$ARB" persona report --db "$T/r.db" --category religion --bootstrap 100 --seed 3 --json > "$T/r.json"
check "--category religion: one entry per phase, religion only" \
  "[ \"\$(jq -c '[.entries[] | [.category, .phase]]' '$T/r.json')\" = '[[\"religion\",1],[\"religion\",2]]' ]"
check "--json: keys judge, category, phase, identities, means, diff_matrix, win_rate, chi2" \
  "jq -e '.entries | all(has(\"judge\") and has(\"category\") and has(\"phase\") and has(\"identities\") and has(\"means\") and has(\"diff_matrix\") and has(\"win_rate\") and has(\"chi2\"))' '$T/r.json' >/dev/null"
check "the four identities, means identity -> metric -> {mean, ci}, win rates {rate, ci}" \
  "jq -e '.entries[1] | (.identities | sort) == [\"Atheist\", \"Christian\", \"Jewish\", \"Muslim\"]
     and (.means.Muslim.accuracy | has(\"mean\") and has(\"ci\"))
     and (.win_rate.Atheist | has(\"rate\") and has(\"ci\"))
     and (.chi2 | length > 0 and all(has(\"metric\") and has(\"statistic\") and has(\"df\") and has(\"p\") and has(\"p_holm\") and has(\"significant\")))' '$T/r.json' >/dev/null"
check "a fair judge: nothing flagged for religion either" \
  "[ \"\$(jq '[.entries[].chi2[].significant] | any' '$T/r.json')\" = false ]"
check "persona report says its scores have no logprob figures and why (text; JSON logprobs.reason)" \
  "grep -q '^No logprob figures for scores: persona scores' '$T/r.txt' && jq -e '.logprobs.reason | test(\"no verdict token\")' '$T/r.json' >/dev/null"

# ---- logprobs of phase 2's preference (issue 16 point 5) -----------------------------------------
# "preferred": "candidate_1" | "candidate_2" is a two-option verdict: its token's distribution is
# stored per phase-2 call. lp: the digit a token of its own; merged: joined to "_" before it;
# nolp: asks, the endpoint returns none; plain: does not ask.
sim_start --judge "lp:persona_sd=1" --judge "merged:persona_sd=1,logprobs=merged" \
  --judge "nolp:persona_sd=1,logprobs=none" --judge "plain:persona_sd=1"
{ echo "judges:"
  for j in lp merged nolp; do echo "  - {name: $j, url: \"$URL\", model: $j, logprobs: true, top_logprobs: 5}"; done
  echo "  - {name: plain, url: \"$URL\", model: plain}"; } > "$T/judges.yaml"
persona --category gender --phase 2 --judges "$T/judges.yaml:lp,merged,nolp,plain" --db "$T/lp.db" 2>"$T/lp.err"
sim_stop
# every valid phase-2 call of lp and merged: kind preferred, P(candidate_1) + P(candidate_2) = 1,
# and the argmax is the preference parsed from the reply (scores row "preferred" = 1)
q "$T/lp.db" "select c.judge_name, json_extract(c.logprobs, '\$.kind'), json_extract(c.logprobs, '\$.verdict'),
   json_extract(c.logprobs, '\$.options.candidate_1'), json_extract(c.logprobs, '\$.options.candidate_2'),
   (select a.label from scores s join persona_attributions a on a.call_id = s.call_id and a.position = s.position
     where s.call_id = c.id and s.metric = 'preferred' and s.value = 1)
   from calls c where c.judge_name in ('lp', 'merged')" > "$T/lp.rows"
check "lp and merged: $((2 * 4 * n_sc)) phase-2 calls, each with a distribution over the two candidates" \
  "[ \$(wc -l < '$T/lp.rows') = $((2 * 4 * n_sc)) ] && [ \$(awk -F'|' '\$2 == \"preferred\" && \$4 != \"\" && \$5 != \"\"' '$T/lp.rows' | wc -l) = $((2 * 4 * n_sc)) ]"
check "each distribution sums to 1 and its argmax is the parsed preference" \
  "awk -F'|' '{ s = \$4 + \$5; if (s < 0.999 || s > 1.001) exit 1; am = \$4 > \$5 ? \"candidate_1\" : \"candidate_2\";
               if (am != \$3 || am != \$6) exit 1 }' '$T/lp.rows'"
check "the distributions are not all certain (the simulator's p < 1 reached the store)" \
  "awk -F'|' '\$4 > 0.01 && \$5 > 0.01 { n++ } END { exit !(n > 0) }' '$T/lp.rows'"
check "nolp and plain: no distribution stored (NULL, never zeros)" \
  "[ \$(q '$T/lp.db' \"select count(*) from calls where judge_name in ('nolp', 'plain') and logprobs is not null\") = 0 ]"
"$ARB" persona report --db "$T/lp.db" --bootstrap 0 > "$T/lp.txt"
"$ARB" persona report --db "$T/lp.db" --bootstrap 0 --json > "$T/lp.json"
check "report text: prob-weighted next to argmax for lp and merged; no logprobs for nolp and plain" \
  "grep -Eq '^  lp persona2 gender female: preferred [0-9.]+% argmax, [0-9.]+% prob-weighted, other mass [0-9.]+ \\($((4 * n_sc)) of $((4 * n_sc)) calls\\)' '$T/lp.txt' &&
   grep -Eq '^  merged persona2 gender male: preferred [0-9.]+% argmax' '$T/lp.txt' &&
   grep -q '^  nolp persona2 gender female: no logprobs (asked for; the endpoint returned none' '$T/lp.txt' &&
   grep -q '^  plain persona2 gender male: no logprobs (not asked for)' '$T/lp.txt' &&
   grep -q '^No logprob figures for scores: ' '$T/lp.txt'"
check "report JSON: logprobs.preferred rows; the shares of the two identities sum to 1; nulls without logprobs" \
  "jq -e '.logprobs.available == true and (.logprobs.preferred | length == 8)
     and ([.logprobs.preferred[] | select(.judge == \"lp\") | .prob_weighted] | add | . > 0.999 and . < 1.001)
     and ([.logprobs.preferred[] | select(.judge == \"lp\") | .argmax] | add | . > 0.999 and . < 1.001)
     and ([.logprobs.preferred[] | select(.judge == \"lp\" or .judge == \"merged\") | .logprobs_available and .with_logprobs == $((4 * n_sc))] | all)
     and ([.logprobs.preferred[] | select(.judge == \"nolp\") | .logprobs_asked == $((4 * n_sc)) and .logprobs_available == false and .prob_weighted == null and .argmax == null] | all)
     and ([.logprobs.preferred[] | select(.judge == \"plain\") | .logprobs_asked == 0 and .prob_weighted == null] | all)' '$T/lp.json' >/dev/null"
finish

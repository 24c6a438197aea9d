#!/usr/bin/env bash
# Ranking benchmark: Bradley-Terry ratings with bootstrap intervals, arbiter vs the Python code
# people use today, on the same battles file in one run. Prints the times and the ratio and
# writes bench/out/rank_results.json.
#   arbiter:  `arbiter rank --battles FILE --method bt --bootstrap ROUNDS --seed 1 --json`, wall
#             clock of the whole command (start-up, JSONL load, MLE, ROUNDS resamples, output);
#             run again with --bootstrap 0, the difference is the rounds' share.
#   notebook: bench/rank_python.py --variant notebook (arena elo_analysis notebook style: pandas,
#             per-battle design matrix, sklearn LogisticRegression, battles.sample per round).
#             Only PY_ROUNDS rounds are run (one round on 2M battles takes ~30 s) and the
#             bootstrap time is EXTRAPOLATED linearly to ROUNDS.
#   fastchat: bench/rank_python.py --variant fastchat (FastChat's current elo_analysis.py
#             approach: aggregated counts, scipy L-BFGS-B, multinomial rounds in a process pool
#             of all cores). Run in full (ROUNDS rounds, not extrapolated); FASTCHAT=0 skips it.
# The point estimates must agree (max |difference| <= TOL Elo, default 0.5; all anchored at
# mean 1000); otherwise the script exits 1 after printing the table.
# Python parts run on Debian's /usr/bin/python3 (python3-numpy, -pandas, -sklearn, -scipy);
# when those are missing the benchmark is skipped (exit 0). The notebook reference needs about
# 12 GB of memory at 2M battles (a dense 4M x 100 design matrix plus pandas copies).
# Usage: bench/run_rank.sh [N (2000000)] [M (100)] [ROUNDS (1000)] [PY_ROUNDS (3)]
# Environment: ARBITER (default ./build/arbiter), FASTCHAT (1), TOL (0.5).
set -euo pipefail
cd "$(dirname "$0")/.."
ARB=${ARBITER:-./build/arbiter}
N=${1:-2000000}
M=${2:-100}
ROUNDS=${3:-1000}
PY_ROUNDS=${4:-3}
FASTCHAT=${FASTCHAT:-1}
TOL=${TOL:-0.5}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
W=bench/out/rank
OUT=bench/out/rank_results.json

if [ ! -x "$ARB" ]; then
    echo "run_rank.sh: $ARB not found; build arbiter first (make, or cmake --build build)" >&2
    exit 1
fi
if ! "$ARB" rank --help >/dev/null 2>&1; then
    echo "run_rank.sh: '$ARB rank' is not available in this build (the rank command is" \
         "missing or fails); rebuild arbiter with the rank command" >&2
    exit 1
fi
if ! "$PY" -c 'import numpy, pandas, sklearn, scipy' 2>/dev/null; then
    echo "run_rank.sh: skipped: $PY lacks numpy/pandas/sklearn/scipy" \
         "(apt-get install python3-numpy python3-pandas python3-sklearn python3-scipy)"
    exit 0
fi

mkdir -p "$W"
DATA="$W/battles-$N-$M.jsonl"
TRUTH="$W/battles-$N-$M.truth.json"
if [ -s "$DATA" ] && [ -s "$TRUTH" ]; then
    echo "data: reusing $DATA"
else
    "$PY" bench/gen_battles.py "$DATA" --battles "$N" --models "$M" --seed 1 --truth "$TRUTH"
fi

now() { date +%s.%N; }
echo "arbiter: rank --method bt --bootstrap $ROUNDS on $N battles among $M models"
t0=$(now)
"$ARB" rank --battles "$DATA" --method bt --bootstrap "$ROUNDS" --seed 1 --json \
    >"$W/arbiter.json" 2>"$W/arbiter.log"
t1=$(now)
ARB_S=$("$PY" -c "print($t1 - $t0)")
printf 'arbiter: %.2f s\n' "$ARB_S"
# The same without resamples: start-up + load + MLE, so the rounds' share is the difference.
t0=$(now)
"$ARB" rank --battles "$DATA" --method bt --bootstrap 0 --seed 1 --json >"$W/arbiter0.json" \
    2>>"$W/arbiter.log"
t1=$(now)
ARB0_S=$("$PY" -c "print($t1 - $t0)")
printf 'arbiter without bootstrap (start-up + load + MLE): %.2f s\n' "$ARB0_S"

echo "python notebook style: load + MLE + $PY_ROUNDS bootstrap rounds (extrapolated to $ROUNDS)"
"$PY" bench/rank_python.py "$DATA" --variant notebook --rounds "$PY_ROUNDS" \
    --target-rounds "$ROUNDS" --seed 1 --truth "$TRUTH" --out "$W/notebook.json" >/dev/null
if [ "$FASTCHAT" != 0 ]; then
    echo "python fastchat style: load + MLE + $ROUNDS bootstrap rounds ($(nproc) processes)"
    "$PY" bench/rank_python.py "$DATA" --variant fastchat --rounds "$ROUNDS" \
        --target-rounds "$ROUNDS" --seed 1 --truth "$TRUTH" --out "$W/fastchat.json" >/dev/null
fi

"$PY" - "$W" "$OUT" "$ARB_S" "$ARB0_S" "$N" "$M" "$ROUNDS" "$PY_ROUNDS" "$TOL" "$TRUTH" <<'EOF'
import json, os, platform, sys

w, out, arb_s, arb0_s, n, m, rounds, py_rounds, tol, truth_path = sys.argv[1:]
arb_s, arb0_s, tol = float(arb_s), float(arb0_s), float(tol)
arb_rounds_s = max(arb_s - arb0_s, 1e-3)  # wall-clock difference of two runs: noisy


def fmt(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def arbiter_ratings(doc):
    """{model: rating} from `arbiter rank --json`: the list of objects with a "model" name and
    a numeric "rating" (or "score"), wherever it sits in the document."""
    found = []

    def walk(x):
        if isinstance(x, list) and x and all(isinstance(e, dict) and "model" in e for e in x):
            key = "rating" if "rating" in x[0] else "score"
            if all(isinstance(e.get(key), (int, float)) for e in x):
                found.append({e["model"]: float(e[key]) for e in x})
                return
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc.get("models") if isinstance(doc, dict) and "models" in doc else doc)
    if not found:
        walk(doc)
    if not found:
        sys.exit("run_rank.sh: no ratings (objects with \"model\" and \"rating\"/\"score\") "
                 f"in {w}/arbiter.json")
    return found[0]


def max_diff(a, b):
    if set(a) != set(b):
        sys.exit(f"run_rank.sh: model sets differ ({len(a)} vs {len(b)} models)")
    return max(abs(a[k] - b[k]) for k in a)


with open(os.path.join(w, "arbiter.json")) as f:
    arb = arbiter_ratings(json.load(f))
with open(truth_path) as f:
    truth = json.load(f)["ratings"]
refs = {}
for name in ("notebook", "fastchat"):
    p = os.path.join(w, name + ".json")
    if os.path.exists(p):
        with open(p) as f:
            refs[name] = json.load(f)

cpu = "unknown"
try:
    with open("/proc/cpuinfo") as f:
        cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
except (OSError, StopIteration):
    pass
res = {
    "n_battles": int(n), "n_models": int(m), "rounds": int(rounds),
    "machine": {"nproc": os.cpu_count(), "cpu": cpu, "platform": platform.platform()},
    "arbiter": {"wall_s": arb_s, "no_bootstrap_wall_s": arb0_s, "rounds_s": arb_rounds_s,
                "max_abs_diff_vs_truth": max_diff(arb, truth)},
    "python": {},
}
print()
print(f"Bradley-Terry + {rounds} bootstrap rounds, {int(n):,} battles, {m} models "
      f"({os.cpu_count()} x {cpu})")
print(f"{'':44s}{'seconds':>12s}")
print(f"{'arbiter: start-up+load+MLE (--bootstrap 0)':44s}{arb0_s:12.2f}")
print(f"{'arbiter: ' + rounds + ' rounds (difference)':44s}{arb_rounds_s:12.2f}")
print(f"{'arbiter: total (one run, wall)':44s}{arb_s:12.2f}")
ok = True
for name, r in refs.items():
    extra = " (extrapolated)" if r["extrapolated"] else ""
    d = max_diff(arb, r["ratings"])
    ok = ok and d <= tol
    ratio = r["total_target_s"] / arb_s
    ratio_compute = r["compute_target_s"] / arb_s
    ratio_rounds = r["bootstrap_target_s"] / arb_rounds_s
    res["python"][name] = {
        "load_s": r["load_s"], "mle_s": r["mle_s"], "rounds_run": r["rounds_run"],
        "per_round_s": r["per_round_s"], "bootstrap_s": r["bootstrap_target_s"],
        "extrapolated": r["extrapolated"], "total_s": r["total_target_s"],
        "ratio_total": ratio, "ratio_excluding_python_load": ratio_compute,
        "ratio_bootstrap_rounds": ratio_rounds,
        "max_abs_diff_vs_arbiter": d, "max_abs_diff_vs_truth": r["truth_max_abs_diff"],
        "versions": r["versions"],
    }
    print(f"{name + ': load (pd.read_json)':44s}{r['load_s']:12.2f}")
    print(f"{name + ': MLE':44s}{r['mle_s']:12.2f}")
    label = f"{name}: {rounds} rounds" + (f" ({r['rounds_run']} run x {r['per_round_s']:.2f} s)"
                                          if r["extrapolated"] else "")
    print(f"{label:44s}{fmt(r['bootstrap_target_s']):>12s}{extra}")
    print(f"{name + ': total':44s}{fmt(r['total_target_s']):>12s}{extra}")
    print(f"  ratio {name} / arbiter: total {fmt(ratio)}x; excluding the Python load "
          f"{fmt(ratio_compute)}x; bootstrap rounds only {fmt(ratio_rounds)}x")
    print(f"  max |rating difference| {name} vs arbiter: {d:.3g} Elo")
res["agree_within_tol"] = ok
res["tol"] = tol
print(f"max |arbiter - true rating|: {res['arbiter']['max_abs_diff_vs_truth']:.2f} Elo "
      "(sampling error, same for every implementation)")
with open(out, "w") as f:
    json.dump(res, f, indent=2)
    f.write("\n")
print(f"written {out}")
if not ok:
    sys.exit(f"run_rank.sh: point estimates differ by more than {tol} Elo")
EOF

#!/usr/bin/env python3
"""Writes N synthetic pairwise battles among M models for the ranking benchmark (run_rank.sh).

Each model gets a true strength on the Elo scale (seeded, normal around 1000 with sd SPREAD,
then shifted so the mean is exactly 1000). Each battle draws model_a uniformly and model_b
uniformly among the other models. With sigma = 1/(1+10^((R_b-R_a)/400)) (the Bradley-Terry win
probability of model_a), the battle is a tie with probability tie = TIES*2*min(sigma, 1-sigma),
otherwise model_a wins with probability sigma - tie/2 and model_b with 1 - sigma - tie/2. So the
expected score of model_a (win 1, tie 1/2, loss 0) is exactly sigma: Bradley-Terry with ties
counted as half wins (METHODS section 6) is consistent for the true ratings, and fitted ratings
anchored at mean 1000 should converge to them as N grows.

Output (arena convention, the format `arbiter rank --battles FILE` reads), one object per line:
  {"question_id": "q17", "model_a": "model-003", "model_b": "model-041", "judge": "sim",
   "winner": "model_a"|"model_b"|"tie"}
and a side file of true ratings: {"seed", "n_battles", "n_models", "ties", "spread",
"ratings": {model: rating}, "battles_per_model": {model: count}}.

Usage: gen_battles.py OUT.jsonl [--battles N] [--models M] [--seed S] [--ties T] [--spread SD]
       [--truth TRUE.json]   (default truth file: OUT with ".jsonl" replaced by ".truth.json")
Needs numpy; vectorised, writes 2 million battles in a few seconds.
"""
import argparse
import json
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--battles", type=int, default=2_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ties", type=float, default=0.2,
                    help="tie probability between equal models (default 0.2)")
    ap.add_argument("--spread", type=float, default=150.0,
                    help="sd of the true ratings on the Elo scale (default 150)")
    ap.add_argument("--truth", default=None)
    a = ap.parse_args()
    if a.battles < 1 or a.models < 2 or not 0 <= a.ties <= 1 or a.spread < 0:
        sys.exit("gen_battles.py: need --battles >= 1, --models >= 2, 0 <= --ties <= 1, "
                 "--spread >= 0")
    truth_path = a.truth or (a.out[:-6] if a.out.endswith(".jsonl") else a.out) + ".truth.json"

    t0 = time.perf_counter()
    rng = np.random.default_rng(a.seed)
    m, n = a.models, a.battles
    width = max(3, len(str(m - 1)))
    names = [f"model-{k:0{width}d}" for k in range(m)]
    rating = rng.normal(1000.0, a.spread, m)
    rating += 1000.0 - rating.mean()

    ia = rng.integers(0, m, n)
    ib = rng.integers(0, m - 1, n)
    ib += ib >= ia  # uniform over the other models
    sigma = 1.0 / (1.0 + 10.0 ** ((rating[ib] - rating[ia]) / 400.0))
    tie = a.ties * 2.0 * np.minimum(sigma, 1.0 - sigma)
    u = rng.random(n)
    # 0: model_a wins, 1: model_b wins, 2: tie
    outcome = np.where(u < sigma - tie / 2.0, 0, np.where(u < 1.0 - tie, 1, 2))

    # Fast path: every line is "q<i>" plus one of m*m*3 fixed tails; join f-strings once.
    winners = ("model_a", "model_b", "tie")
    tails = [f'"model_a": "{names[x]}", "model_b": "{names[y]}", "judge": "sim", '
             f'"winner": "{w}"}}\n'
             for x in range(m) for y in range(m) for w in winners]
    code = ((ia * m + ib) * 3 + outcome).tolist()
    with open(a.out, "w", encoding="utf-8") as f:
        step = 1 << 18
        for lo in range(0, n, step):
            f.write("".join([f'{{"question_id": "q{i}", {tails[c]}'
                             for i, c in enumerate(code[lo:lo + step], lo)]))

    counts = np.bincount(ia, minlength=m) + np.bincount(ib, minlength=m)
    with open(truth_path, "w", encoding="utf-8") as f:
        json.dump({"seed": a.seed, "n_battles": n, "n_models": m, "ties": a.ties,
                   "spread": a.spread,
                   "ratings": {names[k]: float(rating[k]) for k in range(m)},
                   "battles_per_model": {names[k]: int(counts[k]) for k in range(m)}},
                  f, indent=2)
    frac = np.bincount(outcome, minlength=3) / n
    print(f"gen_battles: {n} battles among {m} models -> {a.out} (truth: {truth_path}); "
          f"model_a/model_b/tie = {frac[0]:.3f}/{frac[1]:.3f}/{frac[2]:.3f}; "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()

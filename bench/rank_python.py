#!/usr/bin/env python3
"""Python reference for the ranking benchmark (run_rank.sh): Bradley-Terry ratings with bootstrap
intervals, computed the way the public Chatbot Arena analysis code does it. Written for this
benchmark in the style of that code (not copied from it); runs on Debian's /usr/bin/python3 with
python3-numpy, python3-pandas, python3-sklearn (and python3-scipy for --variant fastchat).

Variants (--variant):
  notebook (default) -- the arena "elo_analysis" notebook that most projects copied: a pandas
    DataFrame of battles; compute_mle_elo builds a dense design matrix with one row per battle
    (+log(10) in model_a's column, -log(10) in model_b's), every battle duplicated so a tie can be
    one win each way, and fits sklearn LogisticRegression(fit_intercept=False, penalty=None,
    tol=1e-6); rating = 400*coef + 1000. get_bootstrap_result refits on
    battles.sample(frac=1.0, replace=True) once per round.
  fastchat -- what FastChat's elo_analysis.py does today: battles collapsed to unique
    (model_a, model_b, outcome) rows with counts, the BT likelihood (tie = half a win) minimised
    with scipy L-BFGS-B, and bootstrap rounds drawn as multinomial counts over those rows, the
    rounds fitted in a multiprocessing.Pool of os.cpu_count() workers.

Anchoring: both fits start at zero and every gradient sums to zero over the models, so the
coefficients keep mean 0; the ratings are shifted anyway so their mean is exactly 1000, which is
arbiter's default anchor (no anchor model), so point estimates are comparable.

Timing: load (pd.read_json(lines=True)), MLE on all battles, and the bootstrap are timed
separately with time.perf_counter(). With --rounds R smaller than --target-rounds T (default
1000), the bootstrap time is EXTRAPOLATED linearly: bootstrap_extrapolated_s = T * (time of the
R rounds) / R, and "extrapolated": true is written. For notebook rounds are independent refits
of the same size, so linear extrapolation is fair. The fastchat pool start-up is counted in the
R rounds and therefore scaled too (a small overestimate); run it with R = T when you can.

Usage: rank_python.py BATTLES.jsonl [--variant notebook|fastchat] [--rounds R]
       [--target-rounds T] [--seed S] [--truth TRUE.json] [--out RESULT.json]
Prints the result JSON to stdout (and to --out).
"""
import argparse
import json
import math
import os
import platform
import sys
import time
import warnings


def load_battles(path):
    import pandas as pd
    return pd.read_json(path, lines=True, dtype=False)


# --------------------------------------------------------------------------------------------
# notebook variant


def compute_mle_elo(df, SCALE=400, BASE=10, INIT_RATING=1000, tol=1e-6, info=None):
    """Bradley-Terry MLE via logistic regression on a per-battle design matrix."""
    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    models = pd.concat([df["model_a"], df["model_b"]]).unique()
    models = pd.Series(np.arange(len(models)), index=models)

    # every battle twice: a tie becomes one win for model_a (first copy) and one for model_b
    df = pd.concat([df, df], ignore_index=True)
    p = len(models.index)
    n = df.shape[0]

    X = np.zeros([n, p])
    X[np.arange(n), models[df["model_a"]]] = +math.log(BASE)
    X[np.arange(n), models[df["model_b"]]] = -math.log(BASE)

    Y = np.zeros(n)
    Y[df["winner"] == "model_a"] = 1.0
    tie_idx = (df["winner"] == "tie") | (df["winner"] == "tie (bothbad)")
    tie_idx[len(tie_idx) // 2:] = False
    Y[tie_idx] = 1.0

    lr = LogisticRegression(fit_intercept=False, penalty=None, tol=tol)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lr.fit(X, Y)
    if info is not None:
        info["iterations"] = int(lr.n_iter_[0])
        info["warnings"] = sorted({str(w.message).split("\n")[0] for w in caught})

    elo_scores = SCALE * lr.coef_[0] + INIT_RATING
    elo_scores += INIT_RATING - elo_scores.mean()  # anchor: mean = INIT_RATING (arbiter default)
    return pd.Series(elo_scores, index=models.index).sort_values(ascending=False)


def get_bootstrap_result(battles, func_compute_elo, num_round):
    import pandas as pd
    rows = []
    for _ in range(num_round):
        rows.append(func_compute_elo(battles.sample(frac=1.0, replace=True)))
    df = pd.DataFrame(rows)
    return df[df.median().sort_values(ascending=False).index]


# --------------------------------------------------------------------------------------------
# fastchat variant (aggregated counts, scipy L-BFGS-B, multinomial bootstrap in a pool)


def battles_to_arrays(df):
    """Unique (model_a, model_b, outcome) rows, their counts, and the model names."""
    import numpy as np
    import pandas as pd
    models = pd.unique(df[["model_a", "model_b"]].values.ravel()).tolist()
    index = {name: k for k, name in enumerate(models)}
    rows = np.empty((len(df), 3), dtype=np.int32)
    rows[:, 0] = df["model_a"].map(index).values
    rows[:, 1] = df["model_b"].map(index).values
    rows[:, 2] = np.select([df["winner"] == "model_a", df["winner"] == "model_b"], [2, 0], 1)
    uniq, counts = np.unique(rows, return_counts=True, axis=0)
    return uniq[:, :2], uniq[:, 2].astype(np.float64) / 2.0, counts.astype(np.float64), models


def bt_nll_and_grad(theta, pairs, score, weight, alpha):
    import numpy as np
    from scipy.special import expit
    z = alpha * (theta[pairs[:, 0]] - theta[pairs[:, 1]])
    prob = expit(z)
    eps = 1e-300
    nll = -((np.log(prob + eps) * score + np.log(1.0 - prob + eps) * (1.0 - score))
            * weight).sum()
    g = -alpha * (score - prob) * weight
    grad = np.zeros_like(theta)
    np.add.at(grad, pairs[:, 0], g)
    np.add.at(grad, pairs[:, 1], -g)
    return nll, grad


def fit_bt(pairs, score, weight, n_models, alpha, tol=1e-6):
    import numpy as np
    from scipy.optimize import minimize
    res = minimize(bt_nll_and_grad, np.zeros(n_models), args=(pairs, score, weight, alpha),
                   jac=True, method="L-BFGS-B",
                   options={"disp": False, "maxiter": 100, "gtol": tol})
    return res["x"]


def _fit_weights(args):
    pairs, score, n_models, alpha, weight = args
    return fit_bt(pairs, score, weight, n_models, alpha)


def to_elo(theta, SCALE=400, INIT_RATING=1000):
    import numpy as np
    r = SCALE * np.asarray(theta) + INIT_RATING
    return r + (INIT_RATING - r.mean(axis=-1, keepdims=True))  # mean = INIT_RATING


# --------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("battles")
    ap.add_argument("--variant", choices=("notebook", "fastchat"), default="notebook")
    ap.add_argument("--rounds", type=int, default=10, help="bootstrap rounds to run")
    ap.add_argument("--target-rounds", type=int, default=1000,
                    help="rounds to extrapolate the bootstrap time to")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--truth", help="true ratings (gen_battles.py side file) to compare with")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.rounds < 0 or a.target_rounds < 1:
        sys.exit("rank_python.py: need --rounds >= 0 and --target-rounds >= 1")
    try:
        import numpy as np
        import pandas as pd
        import sklearn
        if a.variant == "fastchat":
            import scipy  # noqa: F401
    except ImportError as e:
        print(f"rank_python.py: missing Python module ({e}); install python3-numpy "
              "python3-pandas python3-sklearn python3-scipy", file=sys.stderr)
        sys.exit(3)
    np.random.seed(a.seed)

    t0 = time.perf_counter()
    battles = load_battles(a.battles)
    t_load = time.perf_counter() - t0

    info = {}
    t0 = time.perf_counter()
    if a.variant == "notebook":
        point = compute_mle_elo(battles, tol=a.tol, info=info)
        ratings = {str(k): float(v) for k, v in point.items()}
    else:
        pairs, score, weight, models = battles_to_arrays(battles)
        theta = fit_bt(pairs, score, weight, len(models), math.log(10), a.tol)
        ratings = dict(zip(models, map(float, to_elo(theta))))
    t_mle = time.perf_counter() - t0

    boot = None
    t0 = time.perf_counter()
    if a.rounds and a.variant == "notebook":
        boot = get_bootstrap_result(battles, lambda d: compute_mle_elo(d, tol=a.tol), a.rounds)
    elif a.rounds:
        import multiprocessing as mp
        counts = np.random.multinomial(len(battles), weight / weight.sum(), size=a.rounds)
        jobs = [(pairs, score, len(models), math.log(10), c.astype(np.float64) / len(battles))
                for c in counts]
        with mp.Pool(os.cpu_count()) as pool:
            thetas = pool.map(_fit_weights, jobs)
        boot = pd.DataFrame(to_elo(np.array(thetas)), columns=models)
    t_boot = time.perf_counter() - t0

    per_round = t_boot / a.rounds if a.rounds else None
    boot_target = per_round * a.target_rounds if a.rounds else None
    ci = None
    if boot is not None:
        lo, hi = boot.quantile(0.025), boot.quantile(0.975)
        ci = {str(k): [float(lo[k]), float(hi[k])] for k in boot.columns}
    out = {
        "variant": a.variant,
        "battles_file": a.battles,
        "n_battles": int(len(battles)),
        "n_models": len(ratings),
        "seed": a.seed,
        "tol": a.tol,
        "load_s": t_load,
        "mle_s": t_mle,
        "rounds_run": a.rounds,
        "bootstrap_s": t_boot,
        "per_round_s": per_round,
        "target_rounds": a.target_rounds,
        "extrapolated": bool(a.rounds and a.rounds != a.target_rounds),
        "bootstrap_target_s": boot_target,
        "total_target_s": (t_load + t_mle + boot_target) if boot_target is not None else None,
        "compute_target_s": (t_mle + boot_target) if boot_target is not None else None,
        "mle_info": info,
        "anchor": "mean = 1000",
        "ratings": dict(sorted(ratings.items(), key=lambda kv: -kv[1])),
        "ci_95_from_rounds_run": ci,
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "pandas": pd.__version__, "sklearn": sklearn.__version__},
    }
    if a.truth:
        with open(a.truth, encoding="utf-8") as f:
            truth = json.load(f)["ratings"]
        diffs = [abs(ratings[k] - truth[k]) for k in truth if k in ratings]
        out["truth_max_abs_diff"] = max(diffs) if diffs else None
        out["truth_mean_abs_diff"] = sum(diffs) / len(diffs) if diffs else None
    text = json.dumps(out, indent=2)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

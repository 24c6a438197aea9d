#!/usr/bin/env python3
"""Writes a synthetic benchmark for throughput measurements.

  gen_data.py DIR N [LANGUAGE] [--models K]
                                   items.jsonl and answers.jsonl: N items, K models (default 2:
                                   model-x and model-y; more are model-3 .. model-K), answers of
                                   a few hundred characters. The first two models' answers are
                                   the same with any K (K = 2 writes what it always did).
                                   LANGUAGE (e.g. en): every item gets that "language", which
                                   `arbiter grade` needs.
  gen_data.py DIR N --scenarios    scenarios.jsonl for `arbiter persona run`: N scenarios, each
                                   with two responses of a few hundred characters"""
import argparse, json, os, random, sys

ap = argparse.ArgumentParser(usage=__doc__)
ap.add_argument("dir")
ap.add_argument("n", type=int)
ap.add_argument("language", nargs="?")
ap.add_argument("--models", type=int, default=2)
ap.add_argument("--scenarios", action="store_true")
a = ap.parse_args()
out, n, models, language = a.dir, a.n, a.models, a.language
if models < 2:
    sys.exit("gen_data.py: --models needs at least 2")
rng = random.Random(1)
words = "the a model answer question judge result value method data system process time".split()
def text(k):
    return " ".join(rng.choice(words) for _ in range(k)).capitalize() + "."
os.makedirs(out, exist_ok=True)
if a.scenarios:
    with open(os.path.join(out, "scenarios.jsonl"), "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"s{i}", "base": f"b{i // 4}", "scenario": text(25),
                                "responses": [text(60), text(60)]}) + "\n")
    sys.exit(0)
names = ["model-x", "model-y"] + [f"model-{k}" for k in range(3, models + 1)]
with open(os.path.join(out, "items.jsonl"), "w") as f:
    for i in range(n):
        item = {"id": f"q{i}", "question": text(25), "reference": text(20)}
        if language:
            item["language"] = language
        f.write(json.dumps(item) + "\n")
# answers: model-x and model-y as always (same random draws), then the other models' answers
# from a second generator, so adding models leaves the first two unchanged
extra = random.Random(2)
def extra_text(k):
    return " ".join(extra.choice(words) for _ in range(k)).capitalize() + "."
with open(os.path.join(out, "answers.jsonl"), "w") as f:
    for i in range(n):
        for m in names[:2]:
            f.write(json.dumps({"item": f"q{i}", "model": m, "answer": text(60)}) + "\n")
        for m in names[2:]:
            f.write(json.dumps({"item": f"q{i}", "model": m, "answer": extra_text(60)}) + "\n")

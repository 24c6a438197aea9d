#!/usr/bin/env python3
"""Writes a synthetic benchmark (items.jsonl, answers.jsonl) for throughput measurements:
N items, two models, answers of a few hundred characters. Usage: gen_data.py DIR N [LANGUAGE]
(LANGUAGE, e.g. en: every item gets that "language", which `arbiter grade` needs)"""
import json, os, random, sys

out, n = sys.argv[1], int(sys.argv[2])
language = sys.argv[3] if len(sys.argv) > 3 else None
rng = random.Random(1)
words = "the a model answer question judge result value method data system process time".split()
def text(k):
    return " ".join(rng.choice(words) for _ in range(k)).capitalize() + "."
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "items.jsonl"), "w") as f:
    for i in range(n):
        item = {"id": f"q{i}", "question": text(25), "reference": text(20)}
        if language:
            item["language"] = language
        f.write(json.dumps(item) + "\n")
with open(os.path.join(out, "answers.jsonl"), "w") as f:
    for i in range(n):
        for m in ("model-x", "model-y"):
            f.write(json.dumps({"item": f"q{i}", "model": m, "answer": text(60)}) + "\n")

#!/usr/bin/env python3
"""Writes demo/labels.jsonl: SYNTHETIC expert labels for the demo benchmark.

They are not human judgments. Three made-up annotators label every (item, candidate,
baseline birch-medium) of the demo from the answers' "quality" field (the same hidden truth
the simulated judges see): a when the candidate is clearly better, b when clearly worse, c
when both are good and close, d when both are poor and close. Each annotator then picks a
different verdict at random 20% of the time, so the labels disagree the way people do.
Deterministic (seeded); run again only when demo/answers.jsonl changes.
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(HERE, "..", "demo")
BASELINE = "birch-medium"
CANDIDATES = ["atlas-large", "cedar-small", "drift-tiny"]
ANNOTATORS = ["annotator-1", "annotator-2", "annotator-3"]


def true_verdict(qc, qb):
    if qc - qb > 0.15:
        return "a"
    if qb - qc > 0.15:
        return "b"
    return "c" if min(qc, qb) >= 0.5 else "d"


def main():
    quality = {}
    order = []
    with open(os.path.join(DEMO, "answers.jsonl"), encoding="utf-8") as f:
        for line in f:
            a = json.loads(line)
            if a["item"] not in quality:
                quality[a["item"]] = {}
                order.append(a["item"])
            quality[a["item"]][a["model"]] = a["quality"]
    rng = random.Random(20261123)
    with open(os.path.join(DEMO, "labels.jsonl"), "w", encoding="utf-8") as out:
        for cand in CANDIDATES:
            for item in order:
                truth = true_verdict(quality[item][cand], quality[item][BASELINE])
                for ann in ANNOTATORS:
                    v = truth
                    if rng.random() < 0.2:
                        v = rng.choice([x for x in "abcd" if x != truth])
                    out.write(json.dumps({"item": item, "candidate": cand, "baseline": BASELINE,
                                          "verdict": v, "annotator": ann}) + "\n")


if __name__ == "__main__":
    main()

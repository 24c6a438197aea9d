#!/usr/bin/env python3
"""report_figures.py -- checks that the audit tables of an `arbiter report --markdown` file show
the figures of `arbiter audit --json` (issue 17: the report reads through the audit's functions).

Usage: report_figures.py REPORT.md BY_COMPARISON.json BY_JUDGE.json BY_JUDGE_LANGUAGE.json
The three JSON files are `arbiter audit --protocol sbs --json` with the report's grouping and
intervals: the default grouping without bootstrap (verdict shares), --by judge and
--by judge,language with the report's --bootstrap and --seed. Every cell of the tables
"Verdict shares", "Position bias per judge", "Position bias per judge and language" and
"Agreement with the experts per judge" is compared with the JSON value: names and counts
exactly, numbers (and both ends of an interval) to the report's rounding, n/a with null.
Prints how many cells it compared; exits 1 on the first difference, naming table, row and
column.
"""
import json
import re
import sys

METRICS = {"PBias@AB": "pbias_ab", "PF": "pf", "PC": "pc", "Con@ABCD": "con_abcd",
           "PCon@AB": "pcon_ab", "Error rate": "error_rate", "Accuracy": "accuracy",
           "Cohen's κ": "cohen_kappa", "APCC": "apcc", "MPCC": "mpcc"}
COUNTS = {"Pairs": ("n_pairs",), "Valid pairs": ("n_valid_pairs",), "Items": ("n_items",),
          "Labelled items": ("human", "n_labelled_items"),
          "Labelled judgments": ("human", "n_labelled_judgments"),
          "Annotator ties": ("human", "n_label_ties")}
NAMES = {"Judge": "judge", "Candidate": "candidate", "Baseline": "baseline",
         "Template": "template", "Language": "language"}
compared = 0


def fail(msg):
    print("report_figures: " + msg, file=sys.stderr)
    sys.exit(1)


def table(md, caption):
    """The rows of the Markdown table under **caption**, as dicts column -> cell text."""
    lines = md.split("\n")
    try:
        at = lines.index("**%s**" % caption)
    except ValueError:
        fail("no table \"%s\" in the report" % caption)
    def cells(line):
        return [c.strip().replace("\\[", "[").replace("\\]", "]").replace("\\|", "|")
                for c in line.strip().strip("|").split(" | ")]
    head = cells(lines[at + 2])
    rows = []
    for line in lines[at + 4:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(head, cells(line))))
    if not rows:
        fail("table \"%s\" is empty" % caption)
    return rows


NUM = r"(n/a|[+-]?[0-9][0-9.]*%?)"


def near(shown, value, where):
    """shown: "12.3%", "+0.125", "0.732" or "n/a"; value: the JSON number or None."""
    global compared
    compared += 1
    if shown == "n/a" or value is None:
        if not (shown == "n/a" and value is None):
            fail("%s: the report shows %s, the audit %s" % (where, shown, value))
        return
    x = value * 100 if shown.endswith("%") else value
    digits = shown.rstrip("%")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    if abs(float(digits) - x) > 0.5 * 10 ** -decimals + 1e-9:
        fail("%s: the report shows %s, the audit %r" % (where, shown, value))


def metric(cell, row, key, where):
    m = re.fullmatch(NUM + r"(?: \[" + NUM + ", " + NUM + r"\])?", cell)
    if not m:
        fail("%s: cannot read \"%s\"" % (where, cell))
    near(m.group(1), row[key], where)
    ci = row.get(key + "_ci")
    if m.group(2) is None:
        if ci is not None and all(v is not None for v in ci):
            fail("%s: the audit has an interval %r, the report none" % (where, ci))
        return
    if ci is None:
        fail("%s: the report shows an interval, the audit none" % where)
    near(m.group(2), ci[0], where + " (low)")
    near(m.group(3), ci[1], where + " (high)")


def check_row(shown, row, where):
    global compared
    for col, cell in shown.items():
        w = "%s, column %s" % (where, col)
        if col in METRICS:
            metric(cell, row, METRICS[col], w)
        elif col in COUNTS:
            v = row
            for k in COUNTS[col]:
                v = v[k]
            compared += 1
            if int(cell.replace(",", "")) != v:
                fail("%s: the report shows %s, the audit %s" % (w, cell, v))
        elif col in NAMES:
            v = row[NAMES[col]]
            if col == "Language" and v == "":
                v = "(none)"
            compared += 1
            if cell != v:
                fail("%s: the report shows %s, the audit %s" % (w, cell, v))
        elif col == "Options":
            compared += 1
            if int(cell) != row["options"]:
                fail("%s: the report shows %s, the audit %s" % (w, cell, row["options"]))
        elif col in ("a", "b", "c", "d", "e", "Run"):
            pass  # the verdict shares, below
        else:
            fail("%s: a column this check does not know" % w)


def main():
    md = open(sys.argv[1], encoding="utf-8").read()
    by_cmp, by_judge, by_lang = (json.load(open(f))["rows"] for f in sys.argv[2:5])

    shares = table(md, "Verdict shares")
    if len(shares) != 3 * len(by_cmp):
        fail("Verdict shares: %d rows, the audit %d comparisons x 3" % (len(shares), len(by_cmp)))
    for i, row in enumerate(by_cmp):
        for k, run in enumerate(("run0", "run1", "mean")):
            shown = shares[3 * i + k]
            where = "Verdict shares, row %d" % (3 * i + k + 1)
            if shown["Run"] != ("run 0", "run 1", "mean")[k]:
                fail("%s: run %s" % (where, shown["Run"]))
            check_row(shown, row, where)
            for v in "abcde":
                near(shown[v], row["verdicts"][run][v], "%s, column %s" % (where, v))

    for caption, rows in (("Position bias per judge", by_judge),
                          ("Position bias per judge and language", by_lang)):
        shown = table(md, caption)
        if len(shown) != len(rows):
            fail("%s: %d rows, the audit %d" % (caption, len(shown), len(rows)))
        for i, (s, row) in enumerate(zip(shown, rows)):
            check_row(s, row, "%s, row %d" % (caption, i + 1))

    labelled = [r for r in by_judge if r["human"]["n_labelled_items"] > 0]
    shown = table(md, "Agreement with the experts per judge")
    if len(shown) != len(labelled):
        fail("Agreement with the experts: %d rows, the audit %d labelled judges"
             % (len(shown), len(labelled)))
    for i, (s, row) in enumerate(zip(shown, labelled)):
        check_row(s, row, "Agreement with the experts per judge, row %d" % (i + 1))
    print("%d cells equal" % compared)


main()

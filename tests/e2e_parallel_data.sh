#!/usr/bin/env bash
# End-to-end test of the demo's parallel data set (demo/parallel.jsonl, issue 13 scope 8) and of
# its validator scripts/check_parallel.py: the file passes (six languages in every group, one
# quality per group, the fields of each task, no bidi controls); broken copies of it fail with
# file:line: and exit 1, one kind of damage each; the file is embedded in the arbiter binary as
# the demo file "parallel", and arbiter's own dataset loader reads it.
set -euo pipefail
ARB=${1:?usage: e2e_parallel_data.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
DATA="$SRC/demo/parallel.jsonl"
validate() { python3 "$SRC/scripts/check_parallel.py" "$@"; }

# ---- the demo file passes ---------------------------------------------------------------------
set +e; validate "$DATA" >"$T/out" 2>"$T/err"; rc=$?; set -e
check "demo/parallel.jsonl passes the validator" "[ $rc = 0 ] && [ ! -s '$T/err' ]"
check "summary is one line" "[ \$(wc -l < '$T/out') = 1 ] && grep -q ': ok, ' '$T/out'"
check "six languages, four of them in non-Latin scripts" \
  "grep -q 'x 6 languages (en fr ru ar hi zh)' '$T/out'"
groups=$(sed -n 's/.* in \([0-9]*\) parallel groups.*/\1/p' "$T/out")
check "at least 30 parallel groups (got ${groups:-none})" "[ -n '$groups' ] && [ '$groups' -ge 30 ]"
check "the three tasks qa, math, generic" "grep -q 'tasks: generic [0-9]*, math [0-9]*, qa [0-9]*;' '$T/out'"
check "every group's quality is clearly good, mediocre or wrong" \
  "grep -Eq 'per group: good [0-9]+, mediocre [0-9]+, wrong [0-9]+$' '$T/out'"

# ---- broken copies: each fails at its line, exit 1 --------------------------------------------
# Lines of the file: group gNN occupies lines 6(NN-1)+1 .. 6NN in the order en fr ru ar hi zh;
# g01..g12 are qa, g13..g24 math, g25..g36 generic.
python3 - "$DATA" "$T" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
lines = open(src, "rb").read().split(b"\n")[:-1]
items = [json.loads(l) for l in lines]

def write(name, objs=None, raw=None):
    body = raw if raw is not None else [json.dumps(o, ensure_ascii=False).encode() for o in objs]
    open("%s/%s.jsonl" % (out, name), "wb").write(b"\n".join(body) + b"\n")

def edited(changes):
    objs = [dict(o) for o in items]
    for line, fn in changes:
        fn(objs[line - 1])
    return objs

raw = list(lines); raw[3] = raw[3][:60] + b"\xff" + raw[3][60:]
write("utf8", raw=raw)
write("bidi", edited([(4, lambda o: o.update(reference="\u202b" + o["reference"])),
                      (10, lambda o: o.update(context=o["context"] + "\u2067"))]))
write("quality", edited([(9, lambda o: o.update(quality=0.3))]))
write("missing", [o for i, o in enumerate(items) if i != 4])
write("duplicate", items + [items[0]])
write("noctx", edited([(2, lambda o: o.pop("context"))]))
write("mathctx", edited([(73, lambda o: o.update(context="Une phrase de contexte."))]))
raw = list(lines); raw[2] = raw[2][:-5]
write("json", raw=raw)
write("qtype", edited([(6, lambda o: o.update(quality="0.95")), (12, lambda o: o.update(quality=1.5))]))
write("script", edited([(6, lambda o: o.update(reference="It flows into the ocean."))]))
write("sameref", edited([(2, lambda o: o.update(reference=items[0]["reference"]))]))
write("id", edited([(7, lambda o: o.update(id="g2-en"))]))
write("unknown", edited([(8, lambda o: o.update(qualty=o.pop("quality")))]))
write("few", items[:60])
PY
# expect_bad NAME TEXT...: the copy fails with exit 1 and each TEXT in its messages.
expect_bad() {
  local name=$1; shift
  set +e; validate "$T/$name.jsonl" >"$T/$name.out" 2>"$T/$name.err"; local rc=$?; set -e
  local ok=1
  [ "$rc" = 1 ] && [ ! -s "$T/$name.out" ] || ok=0
  for text in "$@"; do grep -qF -- "$T/$name.jsonl:$text" "$T/$name.err" || ok=0; done
  if [ $ok = 1 ]; then ok "$name: exit 1 with $*"; else bad "$name (rc $rc): $(head -3 "$T/$name.err")"; fi
}
expect_bad utf8 "4: not valid UTF-8 (byte 61"
expect_bad bidi '4: field "reference": bidi control character U+202B' \
  '10: field "context": bidi control character U+2067'
expect_bad quality '9: field "quality": 0.3, but group "g02" has 0.9 (line 7)'
expect_bad missing '1: group "g01": missing language hi'
expect_bad duplicate '217: field "id": "g01-en" already used at line 1' \
  '217: field "language": "en" twice in group "g01" (line 1)'
expect_bad noctx '2: field "context": required for category "qa"'
expect_bad mathctx '73: field "context": not an input of category "math"'
expect_bad json "3: not valid JSON"
expect_bad qtype '6: field "quality": expected a number in [0, 1], got "0.95"' \
  '12: field "quality": expected a number in [0, 1], got 1.5'
expect_bad script '6: field "reference": no Han letter in a "zh" text'
expect_bad sameref '2: field "reference": the same text as line 1 of group "g01"'
expect_bad id '7: field "id": expected "g02-en" (group-language), got "g2-en"'
expect_bad unknown '8: field "qualty": unknown field' '8: field "quality": missing'
expect_bad few "60: 10 parallel groups: expected at least 30"
check "each broken copy reports only its own damage" \
  "(for c in quality missing script sameref; do [ \$(grep -c \"^\$T/\$c.jsonl:[0-9]\" \"\$T/\$c.err\") = 1 ] || exit 1; done)"
check "--min-groups lowers the floor" "validate --min-groups 10 '$T/few.jsonl' >/dev/null"
set +e; validate "$T/absent.jsonl" 2>"$T/err"; rc=$?; set -e
check "an unreadable file exits 2" "[ $rc = 2 ] && grep -q 'absent.jsonl' '$T/err'"

# ---- the binary embeds it as demo file "parallel", and the dataset loader reads it -------------
arabic=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1], encoding="utf-8").readlines()[3])["reference"])' "$DATA")
check "the arbiter binary holds the file's bytes (Arabic reference of g01)" "grep -qaF -- '$arabic' '$ARB'"
python3 - "$DATA" > "$T/answers.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    item = json.loads(line)
    for model in ("m1", "m2"):
        print(json.dumps({"item": item["id"], "model": model, "answer": item["reference"]},
                         ensure_ascii=False))
PY
n_items=$(grep -c . "$DATA")
"$ARB" sbs --items "$DATA" --answers "$T/answers.jsonl" --candidate m1 --baseline m2 \
  --judge-url http://127.0.0.1:9/v1 --judge-model none --db "$T/plan.db" --dry-run >"$T/plan" 2>&1
check "arbiter loads every item (dry-run plans 2 x $n_items calls)" \
  "grep -q 'sbs plan: $((2 * n_items)) judge calls' '$T/plan'"

finish

#!/usr/bin/env bash
# Scale benchmark (issue 17 point 6): for each SIZE (items; two models, both orders, so 2*SIZE
# judge calls) it generates the benchmark set with gen_data.py and runs, with the current binary
# and with the previous release's binary built from git in the same run:
#   sbs         the whole evaluation against `arbiter sim-server --instant` (64 in flight)
#   rerun       the same sbs again on the finished store (must send 0 requests: checked on a
#               fresh simulator's request count)
#   audit       arbiter audit
#   audit-boot  arbiter audit --bootstrap 1000 --seed 1
#   report      arbiter report --html FILE (its default bootstrap)
#   export      arbiter export --format jsonl --output FILE (its line count is checked)
#   grade       (only when STEPS names it) arbiter grade --model model-x on a store of its own
#               against a fresh simulator: one pointwise call per item, SIZE calls; the data are
#               then generated with "language":"en" on every item (grade needs a language; sbs
#               does not read it), for every step of the run
# and prints, per size, seconds and peak memory (max RSS, /usr/bin/time %M) of every step for
# both binaries side by side, plus the store's bytes per judgment (database + -wal + -shm after
# the sbs run, divided by 2*SIZE). Results also go to bench/out/scale_results.json.
#
# Usage: bench/run_scale.sh [SIZE...]            (default: 100000 500000)
# Environment:
#   ARBITER=path   current binary (default ./build/arbiter); its sim-server serves both binaries
#   BASE=ref       the "previous release": a git ref, built with cmake from `git archive` into a
#                  temporary directory (the working tree and the repository are not touched).
#                  Default: the most recent tag, or, while the repository has no tag, commit
#                  12dd378 (main just before the first issue-17 merge, where the issue measured
#                  its figures). BASE=none runs the current binary only.
#   STEPS=list     comma-separated subset of sbs,rerun,audit,audit-boot,report,export,grade
#                  (default all but grade; every step but sbs and grade needs the store that sbs
#                  writes, so sbs runs when any of them is chosen; STEPS=grade runs grade alone)
#   IN_FLIGHT=N    requests in flight, sbs --jobs (default 64); BOOT=N  audit bootstrap rounds (1000)
#   KEEP=1         keep the data, stores, reports and exports under bench/out/scale/
# Benchmarks are never run as tests; `make bench-scale` runs this script with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
ARB=$(readlink -f "${ARBITER:-./build/arbiter}")
IN_FLIGHT=${IN_FLIGHT:-64}
BOOT=${BOOT:-1000}
STEPS=${STEPS:-sbs,rerun,audit,audit-boot,report,export}
KEEP=${KEEP:-0}
DEFAULT_BASE=12dd378460c46453d7a85388be301c9494787c08
if [ -z "${BASE:-}" ]; then
  BASE=$(git describe --tags --abbrev=0 2>/dev/null || echo "$DEFAULT_BASE")
fi
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(100000 500000)
for s in "${SIZES[@]}"; do
  [[ $s =~ ^[1-9][0-9]*$ ]] || { echo "run_scale.sh: size \"$s\": expected a positive integer" >&2; exit 2; }
done
for st in ${STEPS//,/ }; do
  case $st in sbs|rerun|audit|audit-boot|report|export|grade) ;;
    *) echo "run_scale.sh: STEPS: \"$st\": expected sbs,rerun,audit,audit-boot,report,export,grade" >&2; exit 2;;
  esac
done
has_step() { [[ ",$STEPS," == *",$1,"* ]]; }
run_sbs=0 # sbs runs when any step but grade is chosen
for st in ${STEPS//,/ }; do [ "$st" = grade ] || run_sbs=1; done
[ -x "$ARB" ] || { echo "run_scale.sh: $ARB: no such binary (build first, or set ARBITER)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "run_scale.sh: /usr/bin/time is needed (Debian package time)" >&2; exit 1; }

OUT=bench/out
W=$OUT/scale
mkdir -p "$OUT"
rm -rf "$W"; mkdir -p "$W"
RES=$W/steps.tsv
: >"$RES"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/arbiter-scale.XXXXXX")
SIM=
cleanup() {
  if [ -n "$SIM" ]; then kill "$SIM" 2>/dev/null || true; fi
  rm -rf "$TMP"
  if [ "$KEEP" != 1 ]; then rm -rf "$W/data" "$W"/run-*; fi
}
trap cleanup EXIT

cur_rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# "+changes": the sources differ from HEAD (the binary is taken as built from this tree)
git diff --quiet HEAD -- src include templates cmake CMakeLists.txt 2>/dev/null || cur_rev="$cur_rev+changes"
BINS=(current)
declare -A BIN LABEL
BIN[current]=$ARB
LABEL[current]="current ($cur_rev)"

# ---- estimates ---------------------------------------------------------------------------------
# Seconds per 100,000 items for each step, as measured on this shared 2-core machine with the
# builds of 2026-11-25 (sbs 31 s, rerun 15 s, audit 6 s, audit --bootstrap 90 s, report 95 s,
# export 10 s; grade, measured 2026-11-28: 12 s); disk: about 5 KB per judgment in the store and up
# to 4.6 KB per exported line.
est_seconds() { # size -> seconds for all chosen steps and binaries
  local per=0
  [ "$run_sbs" = 1 ] && per=31
  has_step grade && per=$((per + 12))
  has_step rerun && per=$((per + 15))
  has_step audit && per=$((per + 6)); has_step audit-boot && per=$((per + 90))
  has_step report && per=$((per + 95)); has_step export && per=$((per + 10))
  echo $(( (per * $1 / 100000 + 5) * NBINS ))
}
NBINS=1; [ "$BASE" = none ] || NBINS=2
total=0
for s in "${SIZES[@]}"; do total=$((total + $(est_seconds "$s"))); done
echo "expected duration: about $((total / 60)) min $((total % 60)) s for sizes ${SIZES[*]}" \
     "and $NBINS binaries, plus about 2 min to build the previous release when there is one"
echo "  (estimated from timings on a shared 2-core machine, linear in the size)"

# ---- the previous release, built from git in this run ------------------------------------------
if [ "$BASE" != none ]; then
  base_rev=$(git rev-parse --verify --quiet "$BASE^{commit}") ||
    { echo "run_scale.sh: BASE=$BASE: not a commit of this repository" >&2; exit 2; }
  echo "previous release: $BASE ($(git log -1 --format='%h %cs %s' "$base_rev" | cut -c1-90))"
  echo "  building it in $TMP (git archive + cmake RelWithDebInfo, tests off) ..."
  mkdir -p "$TMP/src"
  git archive "$base_rev" | tar -x -C "$TMP/src"
  t0=$(date +%s)
  if ! { cmake -S "$TMP/src" -B "$TMP/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARB_TESTS=OFF &&
         cmake --build "$TMP/build" --target arbiter_cli -j "$(nproc)"; } >"$TMP/cmake.log" 2>&1; then
    tail -20 "$TMP/cmake.log" >&2; echo "run_scale.sh: building $BASE failed" >&2; exit 1
  fi
  echo "  built in $(( $(date +%s) - t0 )) s"
  BINS+=(base)
  BIN[base]=$TMP/build/arbiter
  LABEL[base]="previous ($(git rev-parse --short "$base_rev"))"
fi

wait_port() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; echo "simulator did not start" >&2; exit 1; }
start_sim() { # portfile log
  rm -f "$1"
  "$ARB" sim-server --instant --port 0 --port-file "$1" --judge bench-judge 2>"$2" &
  SIM=$!
  wait_port "$1"
  URL="http://127.0.0.1:$(cat "$1")/v1"
}
stop_sim() { # log -> REQUESTS: the simulator's request count (not in a subshell: wait needs it)
  kill -INT "$SIM"; wait "$SIM" || true; SIM=
  REQUESTS=$(sed -n 's/.*stopped after \([0-9]*\) requests.*/\1/p' "$1")
  [ -n "$REQUESTS" ] || { echo "run_scale.sh: no request count in $1" >&2; exit 1; }
}
# timed size bin step command... : runs it under /usr/bin/time, appends a row to $RES
timed() {
  local size=$1 bin=$2 step=$3; shift 3
  local log="$RUN/$step.log"
  if ! /usr/bin/time -f '%e %M' -o "$RUN/$step.time" "$@" >"$log" 2>&1; then
    tail -5 "$log" >&2; echo "run_scale.sh: $bin: $step failed (log: $log)" >&2
    printf '%s\t%s\t%s\tfailed\t0\n' "$size" "$bin" "$step" >>"$RES"
    return 1
  fi
  local sec kb; read -r sec kb <"$RUN/$step.time"
  printf '%s\t%s\t%s\t%s\t%s\n' "$size" "$bin" "$step" "$sec" "$kb" >>"$RES"
  printf '  %-8s %-11s %8.2f s %8.1f MB\n' "$bin" "$step" "$sec" "$(awk -v k="$kb" 'BEGIN {print k / 1024}')"
}
extra() { printf '%s\t%s\t%s\t%s\t0\n' "$1" "$2" "$3" "$4" >>"$RES"; }

for N in "${SIZES[@]}"; do
  calls=$((2 * N)) # sbs's
  all_calls=$((run_sbs * calls)); has_step grade && all_calls=$((all_calls + N))
  need_mb=$(( calls * 10 / 1024 + N / 200 + 100 )) # store + export of one binary + data
  avail_mb=$(df -Pm "$W" | awk 'NR==2 {print $4}')
  echo
  echo "== $N items, $all_calls judge calls; disk: about $need_mb MB needed, $avail_mb MB free"
  [ "$avail_mb" -gt "$need_mb" ] || { echo "run_scale.sh: not enough disk space under $W" >&2; exit 1; }
  rm -rf "$W/data"
  if has_step grade; then
    /usr/bin/python3 bench/gen_data.py "$W/data" "$N" en
  else
    /usr/bin/python3 bench/gen_data.py "$W/data" "$N"
  fi
  for b in "${BINS[@]}"; do
    B=${BIN[$b]}
    RUN=$W/run-$N-$b
    rm -rf "$RUN"; mkdir -p "$RUN"
    DB=$RUN/bench.db
    sbs=("$B" sbs --items "$W/data/items.jsonl" --answers "$W/data/answers.jsonl"
         --candidate model-x --baseline model-y --judge-model bench-judge --jobs "$IN_FLIGHT"
         --no-progress --db "$DB")
    if has_step grade; then
      GDB=$RUN/grade.db
      start_sim "$RUN/port-grade" "$RUN/sim-grade.log"
      if timed "$N" "$b" grade "$B" grade --items "$W/data/items.jsonl" --answers "$W/data/answers.jsonl" \
           --model model-x --judge-model bench-judge --judge-url "$URL" --jobs "$IN_FLIGHT" \
           --no-progress --db "$GDB"; then
        bytes=0
        for f in "$GDB" "$GDB-wal" "$GDB-shm"; do [ -f "$f" ] && bytes=$((bytes + $(stat -c %s "$f"))); done
        extra "$N" "$b" grade_store_bytes "$bytes"
      fi
      stop_sim "$RUN/sim-grade.log"
      extra "$N" "$b" requests_grade "$REQUESTS"
      [ "$REQUESTS" = "$N" ] || echo "  WARNING: $b: grade sent $REQUESTS requests (expected $N)"
      [ "$KEEP" = 1 ] || rm -f "$GDB" "$GDB-wal" "$GDB-shm"
    fi
    [ "$run_sbs" = 1 ] || continue
    start_sim "$RUN/port" "$RUN/sim.log"
    timed "$N" "$b" sbs "${sbs[@]}" --judge-url "$URL" || { stop_sim "$RUN/sim.log"; continue; }
    stop_sim "$RUN/sim.log"; sent=$REQUESTS
    bytes=0
    for f in "$DB" "$DB-wal" "$DB-shm"; do [ -f "$f" ] && bytes=$((bytes + $(stat -c %s "$f"))); done
    extra "$N" "$b" requests_sbs "$sent"
    extra "$N" "$b" store_bytes "$bytes"
    printf '  %-8s store %d bytes (database + -wal + -shm) = %.0f bytes per judgment; %s requests\n' \
      "$b" "$bytes" "$(awk -v b="$bytes" -v c="$calls" 'BEGIN {print b / c}')" "$sent"
    if has_step rerun; then
      start_sim "$RUN/port2" "$RUN/sim2.log"
      timed "$N" "$b" rerun "${sbs[@]}" --judge-url "$URL" || true
      stop_sim "$RUN/sim2.log"; again=$REQUESTS
      extra "$N" "$b" requests_rerun "$again"
      [ "$again" = 0 ] || echo "  WARNING: $b: the rerun sent $again requests (expected 0)"
    fi
    has_step audit && { timed "$N" "$b" audit "$B" audit --db "$DB" || true; }
    has_step audit-boot &&
      { timed "$N" "$b" audit-boot "$B" audit --db "$DB" --bootstrap "$BOOT" --seed 1 || true; }
    has_step report && { timed "$N" "$b" report "$B" report --db "$DB" --html "$RUN/report.html" || true; }
    if has_step export && timed "$N" "$b" export "$B" export --db "$DB" --format jsonl --output "$RUN/export.jsonl"; then
      lines=$(wc -l <"$RUN/export.jsonl")
      extra "$N" "$b" export_lines "$lines"
      extra "$N" "$b" export_bytes "$(stat -c %s "$RUN/export.jsonl")"
      [ "$lines" = "$calls" ] || echo "  WARNING: $b: export has $lines lines, expected $calls"
    fi
    # the next binary's run needs the disk more than these files do
    [ "$KEEP" = 1 ] || rm -f "$RUN/export.jsonl" "$DB" "$DB-wal" "$DB-shm"
  done
done

/usr/bin/python3 - "$RES" "$OUT/scale_results.json" "${LABEL[current]}" "${LABEL[base]:-}" "$BOOT" "$IN_FLIGHT" <<'PY'
import json, sys, datetime, os
res, out, lab_cur, lab_base, boot, jobs = sys.argv[1:7]
rows = {}
for line in open(res):
    size, b, step, val, kb = line.rstrip("\n").split("\t")
    rows.setdefault(int(size), {}).setdefault(b, {})[step] = (val, int(kb))
labels = {"current": lab_cur, "base": lab_base} # JSON keys: "current", "base"
steps = ["sbs", "rerun", "audit", "audit-boot", "report", "export", "grade"]
doc = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ"), "cores": os.cpu_count(),
       "bootstrap_rounds": int(boot), "in_flight": int(jobs),
       "binaries": {b: l for b, l in labels.items() if l}, "sizes": {}}
for size, by in sorted(rows.items()):
    bins = [b for b in ("current", "base") if b in by]
    print(f"\n{size} items ({2*size} judgments in sbs, {size} in grade): seconds / peak MB")
    ratio = len(bins) == 2
    print(f"{'step':<12}" + "".join(f"{labels[b]:>30}" for b in bins)
          + (f"{'previous/current (time)':>26}" if ratio else ""))
    entry = {}
    for b in bins:
        r = by[b]
        e = {"steps": {}}
        for st in steps:
            if st in r:
                v, kb = r[st]
                e["steps"][st] = None if v == "failed" else {"seconds": float(v), "peak_mb": round(kb / 1024, 1)}
        for k in ("store_bytes", "requests_sbs", "requests_rerun", "export_lines", "export_bytes",
                  "grade_store_bytes", "requests_grade"):
            if k in r: e[k] = int(r[k][0])
        if "store_bytes" in e: e["bytes_per_judgment"] = round(e["store_bytes"] / (2 * size), 1)
        if "grade_store_bytes" in e:
            e["grade_bytes_per_judgment"] = round(e["grade_store_bytes"] / size, 1)
        entry[b] = e
    for st in steps:
        if not any(st in by[b] for b in bins): continue
        cells = []
        for b in bins:
            s = entry[b]["steps"].get(st, "absent")
            cells.append("n/a" if s == "absent" else "failed" if s is None
                         else f"{s['seconds']:.2f} s / {s['peak_mb']:.0f} MB")
        t = [entry[b]["steps"].get(st) for b in bins]
        r = (f"{t[1]['seconds'] / t[0]['seconds']:>25.1f}x" if ratio and all(t)
             and t[0]["seconds"] > 0 else "")
        print(f"{st:<12}" + "".join(f"{c:>30}" for c in cells) + r)
    print(f"{'bytes/judgm.':<12}" + "".join(
        f"{entry[b].get('bytes_per_judgment', 'n/a'):>30}" for b in bins))
    print(f"{'rerun reqs':<12}" + "".join(
        f"{entry[b].get('requests_rerun', 'n/a'):>30}" for b in bins))
    if any("requests_grade" in entry[b] for b in bins):
        print(f"{'grade B/jdg.':<12}" + "".join(
            f"{entry[b].get('grade_bytes_per_judgment', 'n/a'):>30}" for b in bins))
    doc["sizes"][str(size)] = entry
json.dump(doc, open(out, "w"), indent=1)
print(f"\nwritten: {out}")
PY

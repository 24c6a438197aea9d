#!/usr/bin/env bash
# Runs every libFuzzer target in build dir $1 for FUZZ_SECONDS each, from its seed corpus in
# fuzz/corpus/<target> (copied to a scratch dir so the repo is not modified). Fails on a finding.
set -euo pipefail
dir=${1:-build-fuzz}
secs=${FUZZ_SECONDS:-15}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
found=0
for bin in "$dir"/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  mkdir -p "$work/$name"
  [ -d "$src/fuzz/corpus/$name" ] && cp "$src/fuzz/corpus/$name"/* "$work/$name"/ 2>/dev/null || true
  echo "fuzzing $name for ${secs}s"
  "$bin" -max_total_time="$secs" -max_len=65536 -print_final_stats=0 -artifact_prefix="$work/" \
      "$work/$name" >"$work/$name.log" 2>&1 || { echo "FAILED: $name"; tail -50 "$work/$name.log"; found=1; }
done
[ "$found" = 0 ] && echo "fuzzing: no findings"
exit $found

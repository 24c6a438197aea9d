#!/usr/bin/env bash
# The judging commands run with glibc's malloc on transparent huge pages (src/cli/main.c,
# restart_with_huge_pages; bench/README.md "Huge pages for the heap"): the command starts itself
# again once with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, and leaves the
# GLIBC_TUNABLES a user set (an empty one included) alone; other commands are not restarted.
# Seen through strace's execve lines; skipped where strace or glibc >= 2.35 is missing.
set -euo pipefail
ARB=${1:?usage: e2e_huge_pages.sh path/to/arbiter}
if ! command -v strace >/dev/null; then echo "SKIP: no strace"; exit 0; fi
if ! getconf GNU_LIBC_VERSION | awk '{split($2, v, "."); exit !(v[1] > 2 || (v[1] == 2 && v[2] >= 35))}'; then
  echo "SKIP: glibc older than 2.35"; exit 0
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
# How many times the command started itself again (execve of /proc/self/exe).
restarts() { strace -f -qq -e trace=execve -e signal=none -o "$T/trace" "$@" >/dev/null 2>&1 || true
             grep -c 'execve("/proc/self/exe"' "$T/trace" || true; }
expect() { # name expected actual
  if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1 (expected $2, got $3)"; fail=1; fi; }

expect "sbs starts itself again once" 1 "$(restarts env -u GLIBC_TUNABLES "$ARB" sbs --help)"
expect "grade too" 1 "$(restarts env -u GLIBC_TUNABLES "$ARB" grade --help)"
expect "a GLIBC_TUNABLES of the user's is left alone" 0 \
  "$(restarts env GLIBC_TUNABLES=glibc.malloc.top_pad=0 "$ARB" sbs --help)"
expect "an empty GLIBC_TUNABLES too" 0 "$(restarts env GLIBC_TUNABLES= "$ARB" sbs --help)"
expect "export is not restarted" 0 "$(restarts env -u GLIBC_TUNABLES "$ARB" export --help)"
exit $fail

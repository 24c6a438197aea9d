#!/usr/bin/env bash
# Installs, from Debian's packages, what arbiter needs to build, test, fuzz and benchmark.
# Does nothing when everything is already there; uses sudo only when not root.
# ARB_BENCH_DEPS=1 adds the comparison benchmarks' Python packages and wrk; ARB_BROWSER_DEPS=1 adds what
# the browser tests need (Chromium, Node.js, npm, and playwright-core from tests/browser's lock).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
need=()
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v cmake >/dev/null || need+=(cmake)
command -v make >/dev/null || need+=(make)
command -v gcc >/dev/null || need+=(gcc)
command -v clang >/dev/null || need+=(clang)
have_pc libcurl || need+=(libcurl4-openssl-dev)
have_pc sqlite3 || need+=(libsqlite3-dev)
have_pc jansson || need+=(libjansson-dev)
have_pc libmicrohttpd || need+=(libmicrohttpd-dev)
have_pc libxxhash || need+=(libxxhash-dev)
have_pc libzstd || need+=(libzstd-dev)
have_pc cmocka || need+=(libcmocka-dev)
have_pc gsl || need+=(libgsl-dev)
have_pc yaml-0.1 || need+=(libyaml-dev)
[ -f /usr/include/csv.h ] || need+=(libcsv-dev)
# libFuzzer and the sanitizer runtimes for clang.
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-dev)
if [ "${ARB_BENCH_DEPS:-0}" = 1 ]; then
  /usr/bin/python3 -c 'import httpx' 2>/dev/null || need+=(python3-httpx)
  /usr/bin/python3 -c 'import aiohttp' 2>/dev/null || need+=(python3-aiohttp)
  /usr/bin/python3 -c 'import requests' 2>/dev/null || need+=(python3-requests)
  /usr/bin/python3 -c 'import pandas' 2>/dev/null || need+=(python3-pandas)
  /usr/bin/python3 -c 'import sklearn' 2>/dev/null || need+=(python3-sklearn)
  # wrk: bench/run.sh's transport floor (a C client that only sends and receives).
  command -v wrk >/dev/null || need+=(wrk)
fi
if [ "${ARB_BROWSER_DEPS:-0}" = 1 ]; then
  [ -x /usr/bin/chromium ] || need+=(chromium)
  # A Node.js that is already there (e.g. a newer one than Debian's) is kept: Debian's npm
  # package would conflict with the npm that comes with it.
  command -v node >/dev/null || need+=(nodejs)
  command -v npm >/dev/null || need+=(npm)
fi
command -v python3 >/dev/null || need+=(python3)
command -v sqlite3 >/dev/null || need+=(sqlite3)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# playwright-core, exactly as package-lock.json pins it; it drives the Debian Chromium above and
# downloads no browser of its own.
if [ "${ARB_BROWSER_DEPS:-0}" = 1 ] && [ ! -f "$root/tests/browser/node_modules/playwright-core/package.json" ]; then
  echo "installing: playwright-core (npm ci in tests/browser)" >&2
  (cd "$root/tests/browser" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
exit 0

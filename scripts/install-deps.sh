#!/usr/bin/env bash
# Installs, from Debian's packages, what arbiter needs to build, test, fuzz and benchmark.
# Does nothing when everything is already there; uses sudo only when not root.
set -euo pipefail
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
have_pc cmocka || need+=(libcmocka-dev)
have_pc gsl || need+=(libgsl-dev)
have_pc yaml-0.1 || need+=(libyaml-dev)
[ -f /usr/include/csv.h ] || need+=(libcsv-dev)
# libFuzzer and the sanitizer runtimes for clang.
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-dev)
if [ "${ARB_BENCH_DEPS:-0}" = 1 ]; then
  /usr/bin/python3 -c 'import httpx' 2>/dev/null || need+=(python3-httpx)
  /usr/bin/python3 -c 'import requests' 2>/dev/null || need+=(python3-requests)
  /usr/bin/python3 -c 'import pandas' 2>/dev/null || need+=(python3-pandas)
  /usr/bin/python3 -c 'import sklearn' 2>/dev/null || need+=(python3-sklearn)
fi
command -v python3 >/dev/null || need+=(python3)
command -v sqlite3 >/dev/null || need+=(sqlite3)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing: ${need[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"

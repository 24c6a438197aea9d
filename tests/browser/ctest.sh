#!/usr/bin/env bash
# ctest.sh -- how ctest starts the browser tests (run.mjs) with the arbiter binary it built.
# Without Node.js the tests are skipped (exit 77, ctest's SKIP_RETURN_CODE) unless
# ARB_BROWSER_REQUIRED=1, which `make test` sets after installing what they need; run.mjs does
# the same for playwright-core and Chromium.
set -u
ARB=${1:?usage: ctest.sh path/to/arbiter}
if ! command -v node >/dev/null; then
  msg="browser tests need Node.js, Chromium and playwright-core: ARB_BROWSER_DEPS=1 bash scripts/install-deps.sh"
  if [ "${ARB_BROWSER_REQUIRED:-0}" = 1 ]; then echo "FAIL - $msg"; exit 1; fi
  echo "SKIP: $msg"
  exit 77
fi
exec node "$(dirname "$0")/run.mjs" "$ARB"

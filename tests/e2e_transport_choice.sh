#!/usr/bin/env bash
# End-to-end test of the transport choice (README "Transport"): the same run through the plain
# transport (default for http:// judges) and through libcurl (--transport curl, or
# ARBITER_TRANSPORT=curl) stores the same judgments; a proxy variable in the environment sends
# plain http:// judges through libcurl (so through the proxy: a dead one fails every call); a bad
# --transport value is a usage error.
set -euo pipefail
ARB=${1:?usage: e2e_transport_choice.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"
start_sim --judge sim-a:skill=2,tie=0.2
sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --no-progress --jobs 8 "$@"; }

sbs --db "$T/auto.db" > "$T/auto.out" 2>&1
sbs --db "$T/curl.db" --transport curl > "$T/curl.out" 2>&1
ARBITER_TRANSPORT=curl sbs --db "$T/env.db" > "$T/env.out" 2>&1
judgments "$T/auto.db" > "$T/auto.j"
judgments "$T/curl.db" > "$T/curl.j"
judgments "$T/env.db" > "$T/env.j"
check "plain transport run stores judgments" '[ "$(grep -c . "$T/auto.j")" -gt 0 ]'
check "plain and libcurl runs store the same judgments" 'cmp -s "$T/auto.j" "$T/curl.j"'
check "ARBITER_TRANSPORT=curl gives the same judgments" 'cmp -s "$T/auto.j" "$T/env.j"'

# A dead proxy in the environment: libcurl takes the calls, so they fail (not sent directly).
set +e
http_proxy=http://127.0.0.1:1 sbs --db "$T/proxy.db" --retries 0 > "$T/proxy.out" 2>&1
rc=$?
"$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-url "$URL" --judge-model sim-a --transport tcp \
  --db "$T/bad.db" > "$T/bad.out" 2>&1
bad_rc=$?
set -e
check "http_proxy routes plain judges through libcurl (dead proxy: calls fail)" \
  '[ "$rc" = 1 ] && grep -q "sent (0 ok" "$T/proxy.out"'
check "--transport tcp is a usage error" \
  '[ "$bad_rc" = 2 ] && grep -q -- "--transport expects auto or curl" "$T/bad.out"'
finish

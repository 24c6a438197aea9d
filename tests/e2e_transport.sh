#!/usr/bin/env bash
# End-to-end test of the transport's hostile cases (issue 12) through the CLI, against a small
# local HTTP server (Python's http.server) whose path picks what it does:
#   /echo/v1/...   200, the reply content repeats the Authorization header and says [[A]]
#   /echo400/v1/...  400 whose error body repeats the Authorization header
#   /slow/v1/...   429 with Retry-After: 3600
#   /nul/v1/...    200, the content holds \u0000 and the verdict [[B]]
# and GET /count/<mode> answers how many requests that mode received.
# Checked: a named key variable that is unset, empty or holds CR/LF stops the run with exit 2
# before any request, naming the variable and never its value; an invalid --judge-url (or url in
# a judges file) is refused with exit 2 and nothing sent; a Retry-After of an hour is capped by
# --max-retry-wait; an API key a server echoes, and credentials written into the URL, reach
# neither the database nor its exports; a reply with \u0000 is stored, judged and never resent;
# the summary says sent (ok, failed).
set -euo pipefail
ARB=${1:?usage: e2e_transport.sh path/to/arbiter}
source "$(dirname "$0")/support/e2e_lib.sh"

cat > "$T/server.py" <<'PY'
import http.server, json, sys, threading
counts = {}
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, status, body, headers=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers: self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        mode = self.path.strip("/").split("/")[-1]
        with lock: n = counts.get(mode, 0)
        self.reply(200, str(n))
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        mode = self.path.strip("/").split("/")[0]
        with lock: counts[mode] = counts.get(mode, 0) + 1
        auth = self.headers.get("Authorization", "(none)")
        def chat(content):
            return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                               "content": content}, "finish_reason": "stop"}]})
        if mode == "echo":
            self.reply(200, chat("You sent me: " + auth + ". Verdict: [[A]]"))
        elif mode == "echo400":
            self.reply(400, json.dumps({"error": {"message": "bad header " + auth}}))
        elif mode == "slow":
            self.reply(429, '{"error":{"message":"quota"}}', [("Retry-After", "3600")])
        elif mode == "nul":
            self.reply(200, chat("Second is right.\u0000 [[B]]"))
        else:
            self.reply(404, "{}")
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
python3 "$T/server.py" "$T/port" &
SIM_PID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
BASE="http://127.0.0.1:$PORT"
count() { python3 -c "import urllib.request,sys;print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$BASE/count/$1"; }

head -n 2 "$SRC/demo/items.jsonl" > "$T/items.jsonl"
grep -E '"demo-00[12]"' "$SRC/demo/answers.jsonl" > "$T/answers.jsonl"
sbs() { "$ARB" sbs --items "$T/items.jsonl" --answers "$T/answers.jsonl" --candidate atlas-large \
  --baseline cedar-small --judge-model m --no-progress --retries 0 "$@"; }

# ---- a named key variable that cannot be used: exit 2 before any request -----------------------
unset E2E_UNSET_KEY || true
set +e; sbs --judge-url "$BASE/echo/v1" --db "$T/k1.db" --api-key-env E2E_UNSET_KEY 2>"$T/err"; rc=$?; set -e
check "unset key variable exits 2 naming it" "[ $rc = 2 ] && grep -q 'E2E_UNSET_KEY.*is not set' '$T/err'"
export E2E_EMPTY_KEY=""
set +e; sbs --judge-url "$BASE/echo/v1" --db "$T/k2.db" --api-key-env E2E_EMPTY_KEY 2>"$T/err"; rc=$?; set -e
check "empty key variable exits 2 naming it" "[ $rc = 2 ] && grep -q 'E2E_EMPTY_KEY.*is empty' '$T/err'"
export E2E_CRLF_KEY=$'sk-CRLF-VALUE\r\n'
set +e; sbs --judge-url "$BASE/echo/v1" --db "$T/k3.db" --api-key-env E2E_CRLF_KEY 2>"$T/err"; rc=$?; set -e
check "CR/LF in the key exits 2 naming the variable, not the value" \
  "[ $rc = 2 ] && grep -q 'E2E_CRLF_KEY.*line break' '$T/err' && ! grep -q 'CRLF-VALUE' '$T/err'"
cat > "$T/judges_unset.yaml" <<EOF
judges:
  - name: j1
    url: $BASE/echo/v1
    model: m
    api_key_env: E2E_UNSET_KEY
EOF
set +e; "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --judges "$T/judges_unset.yaml" --db "$T/k4.db" --no-progress 2>"$T/err"; rc=$?; set -e
check "a judges file's unset api_key_env exits 2 naming it" "[ $rc = 2 ] && grep -q 'E2E_UNSET_KEY' '$T/err'"

# ---- an invalid URL: exit 2, nothing sent ----------------------------------------------------
set +e; sbs --judge-url "127.0.0.1:$PORT/echo/v1" --db "$T/u1.db" 2>"$T/err"; rc=$?; set -e
check "--judge-url without a scheme exits 2" "[ $rc = 2 ] && grep -q 'has no scheme' '$T/err'"
set +e; sbs --judge-url "http://127.0.0.1:99999/echo/v1" --db "$T/u2.db" 2>"$T/err"; rc=$?; set -e
check "--judge-url with a bad port exits 2" "[ $rc = 2 ] && grep -q 'bad port' '$T/err'"
cat > "$T/judges_bad.yaml" <<EOF
judges:
  - name: j1
    model: m
    url: "http://u:SECRET@127.0.0.1:0/echo/v1"
EOF
set +e; "$ARB" tournament --items "$T/items.jsonl" --answers "$T/answers.jsonl" \
  --judges "$T/judges_bad.yaml" --db "$T/u3.db" --no-progress 2>"$T/err"; rc=$?; set -e
check "a judges file's bad url exits 2 with file:line, without the URL" \
  "[ $rc = 2 ] && grep -q 'judges_bad.yaml:4:' '$T/err' && grep -q 'bad port' '$T/err' && ! grep -q SECRET '$T/err'"
check "nothing was sent for any of the refused runs" "[ \"\$(count echo)\" = 0 ]"

# ---- Retry-After: 3600 is capped by --max-retry-wait -------------------------------------------
start=$(date +%s)
set +e; sbs --judge-url "$BASE/slow/v1" --db "$T/slow.db" --retries 2 --max-retry-wait 0.2 2>"$T/err"; rc=$?; set -e
elapsed=$(( $(date +%s) - start ))
check "a server asking to wait an hour: the run ends in ${elapsed}s (< 15)" "[ $rc = 1 ] && [ $elapsed -lt 15 ]"
check "every call was tried 3 times" "[ \"\$(count slow)\" = 12 ]"
check "the summary says sent (ok, failed)" "grep -q '4 sent (0 ok, 4 failed)' '$T/err'"
check "the stored reason names the cap" \
  "[ \$(sqlite3 '$T/slow.db' \"select count(*) from calls where error like '%asked to wait 3600 s%capped at 0.2 s%'\") = 4 ]"
check "the run's stats agree: sent = ok + failed" \
  "[ \"\$(sqlite3 '$T/slow.db' \"select stats ->> '\$.sent', stats ->> '\$.ok', stats ->> '\$.failed' from runs\")\" = '4|0|4' ]"

# ---- secrets never reach the store -----------------------------------------------------------
export E2E_TRANSPORT_KEY="sk-transport-secret-$$"
set +e; sbs --judge-url "http://alice:pw-SECRET1@127.0.0.1:$PORT/echo/v1?api_key=SECRET2&tier=1" \
  --api-key-env E2E_TRANSPORT_KEY --db "$T/echo.db" 2>"$T/err"; set -e
check "the echoing server judged every call" "grep -q '4 sent (4 ok, 0 failed)' '$T/err'"
check "the judgments are those of the redacted replies" \
  "[ \$(sqlite3 '$T/echo.db' \"select count(*) from pairwise p join calls c on c.id = p.call_id where c.content like '%Bearer [REDACTED]. Verdict: [[A]]' and p.position_verdict = 'A'\") = 4 ]"
set +e; sbs --judge-url "$BASE/echo400/v1" --judge-model m400 --api-key-env E2E_TRANSPORT_KEY --db "$T/echo.db" 2>/dev/null; set -e
check "an error body echoing the key is stored redacted" \
  "[ \$(sqlite3 '$T/echo.db' \"select count(*) from calls where error like '%Bearer [REDACTED]%'\") = 4 ]"
sqlite3 "$T/echo.db" .dump > "$T/dump.sql"
"$ARB" export --db "$T/echo.db" --format jsonl > "$T/export.jsonl"
"$ARB" export --db "$T/echo.db" --format csv > "$T/export.csv"
for f in dump.sql export.jsonl export.csv; do
  check "$f holds neither the key nor the URL's credentials" \
    "! grep -qa -e \"\$E2E_TRANSPORT_KEY\" -e SECRET1 -e SECRET2 -e alice '$T/$f'"
done
check "the stored URL keeps host, path and harmless parameters" \
  "[ \"\$(sqlite3 '$T/echo.db' \"select base_url from judges where name = 'm'\")\" = 'http://127.0.0.1:$PORT/echo/v1?tier=1' ] && [ \"\$(sqlite3 '$T/echo.db' \"select params ->> '\$.judge_url' from runs order by id limit 1\")\" = 'http://127.0.0.1:$PORT/echo/v1?tier=1' ]"

# ---- a reply with \u0000: stored, judged, never resent ------------------------------------------
set +e; sbs --judge-url "$BASE/nul/v1" --db "$T/nul.db" 2>"$T/err"; set -e
check "a reply holding \\u0000 is accepted" "grep -q '4 sent (4 ok, 0 failed)' '$T/err'"
check "it is judged B with the NUL stored as U+FFFD" \
  "[ \$(sqlite3 '$T/nul.db' \"select count(*) from pairwise p join calls c on c.id = p.call_id where p.position_verdict = 'B' and instr(c.content, char(65533)) > 0\") = 4 ]"
set +e; sbs --judge-url "$BASE/nul/v1" --db "$T/nul.db" 2>"$T/err"; set -e
check "a rerun sends nothing" "grep -q '4 stored before, 0 sent' '$T/err' && [ \"\$(count nul)\" = 4 ]"

finish

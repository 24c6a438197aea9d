#!/usr/bin/env python3
# batch_engine.py -- a tiny offline batch engine for tests/e2e_batch.sh, in the manner of vLLM's
# run-batch:
# batch_engine.py URL IN OUT [fail-every-N]: answers each batch request line through URL's
# /chat/completions, writing OpenAI batch output lines; with N, every N-th line is an error line
# and the line after it a 500 (partial failures).
import json, sys, urllib.request

url, src, dst = sys.argv[1], sys.argv[2], sys.argv[3]
every = int(sys.argv[4]) if len(sys.argv) > 4 else 0
with open(dst, "w") as out:
    for i, line in enumerate(open(src), 1):
        req = json.loads(line)
        assert req["method"] == "POST" and req["url"] == "/v1/chat/completions"
        o = {"id": "batch_req_%d" % i, "custom_id": req["custom_id"], "response": None, "error": None}
        if every and i % every == 0:
            o["error"] = {"code": "server_error", "message": "simulated failure"}
        elif every and i % every == 1 and i > 1:
            o["response"] = {"status_code": 500, "request_id": "r%d" % i, "body": {"error": {"message": "boom"}}}
        else:
            r = urllib.request.Request(url + "/chat/completions", data=json.dumps(req["body"]).encode(),
                                       headers={"Content-Type": "application/json"})
            body = json.load(urllib.request.urlopen(r))
            o["response"] = {"status_code": 200, "request_id": "r%d" % i, "body": body}
        out.write(json.dumps(o) + "\n")

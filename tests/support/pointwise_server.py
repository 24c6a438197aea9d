"""A scripted OpenAI-compatible judge server for the pointwise end-to-end tests (e2e_grade.sh,
e2e_grade_hostile.sh). serve(port_file, decide) listens on a free port of 127.0.0.1, writes the
port to port_file and answers POST /<pace>/v1/chat/completions with the reply text
decide(answer, mode, body) returns: answer is the text between [ANSWER START] and [ANSWER END]
of the prompt, mode "grade" or "yesno" (by the instructions' phrase), body the request.
/slow/... waits 0.15 s first. GET /count/<pace> says how many requests that pace received, and
GET /count all of them."""
import http.server, json, re, threading, time

def serve(port_file, decide):
    counts = {}
    lock = threading.Lock()

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a): pass

        def reply(self, status, body):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try: self.wfile.write(data)
            except OSError: pass  # a client killed with -9 is gone

        def do_GET(self):
            parts = self.path.strip("/").split("/")
            with lock:
                n = counts.get(parts[1], 0) if len(parts) > 1 else sum(counts.values())
            self.reply(200, str(n))

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            pace = self.path.strip("/").split("/")[0]
            with lock: counts[pace] = counts.get(pace, 0) + 1
            if pace == "slow": time.sleep(0.15)
            user = body["messages"][-1]["content"]
            answer = re.search(r"\n\[ANSWER START\]\n(.*?)\n\[ANSWER END\]\n", user, re.S).group(1)
            mode = "grade" if "<answer>N</answer> with N from 1 to 5" in user else "yesno"
            text = decide(answer, mode, body)
            self.reply(200, json.dumps({"choices": [{"index": 0, "message": {
                "role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}}))

    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    open(port_file, "w").write(str(s.server_address[1]))
    s.serve_forever()

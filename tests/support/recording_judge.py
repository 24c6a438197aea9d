#!/usr/bin/env python3
"""recording_judge.py --port-file F --log L [--mode normal|closeafter|extra]: an OpenAI-style
judge for end-to-end tests that writes every request body it answers, as hex, to L (one per
line) and replies "req=<first 16 hex digits of the body's SHA-256> [[X]]", X from the same hash,
so a test can check that each stored request is a body that was sent and that each stored reply
is the one to its own request. Modes: closeafter closes every connection just after its reply
(without "Connection: close"); extra sends a second, unasked reply right after each reply."""
import argparse, hashlib, json, os, socket, threading

ap = argparse.ArgumentParser()
ap.add_argument("--port-file", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--mode", default="normal")
a = ap.parse_args()
lock = threading.Lock()
log = open(a.log, "a")


def reply_for(body):
    h = hashlib.sha256(body).hexdigest()
    content = "req=%s [[%s]]" % (h[:16], "ABCD"[int(h[:8], 16) % 4])
    return json.dumps({"object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()


def handle(conn):
    f = conn.makefile("rb")
    try:
        while True:
            line = f.readline()
            if not line:
                return
            n = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode().partition(":")
                if k.strip().lower() == "content-length":
                    n = int(v)
            body = f.read(n)
            out = reply_for(body)
            with lock:
                log.write(body.hex() + "\n")
                log.flush()
            msg = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(out) + out
            if a.mode == "extra":
                junk = reply_for(b"unasked")
                msg += b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(junk) + junk
            conn.sendall(msg)
            if a.mode == "closeafter":
                return
    except OSError:
        pass
    finally:
        conn.close()


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(128)
with open(a.port_file + ".tmp", "w") as pf:
    pf.write(str(s.getsockname()[1]))
os.rename(a.port_file + ".tmp", a.port_file)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()

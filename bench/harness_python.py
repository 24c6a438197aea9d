#!/usr/bin/python3
"""The same job arbiter's harness does, done the way the common Python tools do it: a thread
pool posting chat-completion requests with httpx (one pooled client), parsing the reply, taking
the verdict with a regex and appending JSONL. Both orders per item, like `arbiter sbs`.
Every connection gets TCP_NODELAY (harness_common.force_tcp_nodelay): Debian's httpcore 0.16
does not set it, and the delayed-ACK stall it causes (~40 ms a request) is not Python's cost.
Usage: harness_python.py ITEMS ANSWERS URL MODEL OUT.jsonl THREADS [TEMPLATE]"""
import concurrent.futures as cf, sys, threading, time
import harness_common as hc

hc.force_tcp_nodelay()
import httpx  # noqa: E402  (after the patch, so its connections are created through it)

items_path, answers_path, url, model, out_path, threads = sys.argv[1:7]
threads = int(threads)
items, answers, system, user = hc.load(items_path, answers_path,
                                       sys.argv[7] if len(sys.argv) > 7 else "templates/II-reason.txt")
lock = threading.Lock()
out = open(out_path, "w")
client = httpx.Client(limits=httpx.Limits(max_connections=threads, max_keepalive_connections=threads),
                      timeout=300)


def judge(item, order):
    body = hc.body(model, item, answers, system, user, order)
    for attempt in range(7):
        try:
            r = client.post(url + "/chat/completions", json=body)
            if r.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5 * 2 ** attempt)
    line = hc.record(item, order, r.json()["choices"][0]["message"]["content"])
    with lock:
        out.write(line)


t0, cpu0 = time.perf_counter(), hc.cpu_seconds()
with cf.ThreadPoolExecutor(threads) as pool:
    list(pool.map(lambda job: judge(*job), [(it, o) for it in items for o in (0, 1)]))
connections, nodelay = hc.open_connections_nodelay()
client.close()
out.close()
hc.report(len(items) * 2, t0, cpu0, {"harness": "httpx thread pool", "in_flight": threads,
                                     "connections": connections, "nodelay_connections": nodelay})

#!/usr/bin/python3
"""The same job arbiter's harness does, done the way the common Python tools do it: a thread
pool posting chat-completion requests with httpx (one pooled client), parsing the reply, taking
the verdict with a regex and appending JSONL. Both orders per item, like `arbiter sbs`.
Usage: harness_python.py ITEMS ANSWERS URL MODEL OUT.jsonl THREADS"""
import concurrent.futures as cf, json, re, sys, threading, time
import httpx

items_path, answers_path, url, model, out_path, threads = sys.argv[1:7]
threads = int(threads)
template = open(sys.argv[7] if len(sys.argv) > 7 else "templates/II-reason.txt").read()
system, user = "", template
if "=== user ===" in template:
    head, user = template.split("=== user ===", 1)
    system = head.split("=== system ===", 1)[1] if "=== system ===" in head else ""
user = user.strip("\n")
system = system.strip("\n")
items = [json.loads(l) for l in open(items_path) if l.strip()]
answers = {}
for l in open(answers_path):
    if l.strip():
        a = json.loads(l)
        answers[(a["item"], a["model"])] = a["answer"]
verdict_re = re.compile(r"\[\[([A-D])\]\]")
lock = threading.Lock()
out = open(out_path, "w")
client = httpx.Client(limits=httpx.Limits(max_connections=threads, max_keepalive_connections=threads),
                      timeout=300)

def render(text, item, a1, a2):
    values = {"question": item["question"], "answer1": a1, "answer2": a2,
              "reference": item.get("reference", ""), "language": item.get("language", ""),
              "option_list": "[[A]], [[B]], [[C]] or [[D]]", "option_letters": "A, B, C or D",
              "option_rules": "[[A]]: the first answer is better\n[[B]]: the second answer is better\n"
                              "[[C]]: both are good\n[[D]]: both are bad"}
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), text)

def judge(item, order):
    a, b = answers[(item["id"], "model-x")], answers[(item["id"], "model-y")]
    a1, a2 = (a, b) if order == 0 else (b, a)
    messages = ([{"role": "system", "content": render(system, item, a1, a2)}] if system else []) + \
               [{"role": "user", "content": render(user, item, a1, a2)}]
    body = {"model": model, "messages": messages, "max_tokens": 1024, "temperature": 0.0,
            "top_p": 0.1, "frequency_penalty": 1.0}
    for attempt in range(7):
        try:
            r = client.post(url + "/chat/completions", json=body)
            if r.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5 * 2 ** attempt)
    content = r.json()["choices"][0]["message"]["content"]
    m = verdict_re.findall(content)
    rec = {"item": item["id"], "order": order, "verdict": m[-1] if m else "E", "content": content}
    with lock:
        out.write(json.dumps(rec) + "\n")

t0 = time.perf_counter()
with cf.ThreadPoolExecutor(threads) as pool:
    list(pool.map(lambda job: judge(*job), [(it, o) for it in items for o in (0, 1)]))
out.close()
dt = time.perf_counter() - t0
n = len(items) * 2
print(json.dumps({"judgments": n, "seconds": dt, "per_second": n / dt}))

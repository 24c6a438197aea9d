"""What the Python harnesses share: reading the benchmark data, rendering arbiter's template the
way arbiter does, the request body, the verdict regex, CPU accounting, the result line, and
TCP_NODELAY on every connection (so no request waits for a delayed ACK: without it a
keep-alive client that writes headers and body separately stalls ~40 ms per request, which
would measure the kernel, not Python)."""
import json, re, resource, socket, time

VERDICT_RE = re.compile(r"\[\[([A-D])\]\]")


def load(items_path, answers_path, template_path):
    template = open(template_path).read()
    system, user = "", template
    if "=== user ===" in template:
        head, user = template.split("=== user ===", 1)
        system = head.split("=== system ===", 1)[1] if "=== system ===" in head else ""
    items = [json.loads(l) for l in open(items_path) if l.strip()]
    answers = {}
    for l in open(answers_path):
        if l.strip():
            a = json.loads(l)
            answers[(a["item"], a["model"])] = a["answer"]
    return items, answers, system.strip("\n"), user.strip("\n")


def render(text, item, a1, a2):
    values = {"question": item["question"], "answer1": a1, "answer2": a2,
              "reference": item.get("reference", ""), "language": item.get("language", ""),
              "option_list": "[[A]], [[B]], [[C]] or [[D]]", "option_letters": "A, B, C or D",
              "option_rules": "[[A]]: the first answer is better\n[[B]]: the second answer is better\n"
                              "[[C]]: both are good\n[[D]]: both are bad"}
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), text)


def body(model, item, answers, system, user, order):
    """The chat-completion request arbiter sends for this item and order (model-x vs model-y)."""
    a, b = answers[(item["id"], "model-x")], answers[(item["id"], "model-y")]
    a1, a2 = (a, b) if order == 0 else (b, a)
    messages = ([{"role": "system", "content": render(system, item, a1, a2)}] if system else []) + \
               [{"role": "user", "content": render(user, item, a1, a2)}]
    return {"model": model, "messages": messages, "max_tokens": 1024, "temperature": 0.0,
            "top_p": 0.1, "frequency_penalty": 1.0}


def record(item, order, content):
    m = VERDICT_RE.findall(content)
    return json.dumps({"item": item["id"], "order": order, "verdict": m[-1] if m else "E",
                       "content": content}) + "\n"


def force_tcp_nodelay():
    """Makes every TCP connection this process opens set TCP_NODELAY, whatever the HTTP library
    does (Debian's httpcore 0.16 never sets it). Counted in `nodelay_sockets`."""
    original = socket.create_connection
    force_tcp_nodelay.count = 0

    def create_connection(*args, **kwargs):
        sock = original(*args, **kwargs)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        force_tcp_nodelay.count += 1
        return sock
    socket.create_connection = create_connection


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def report(n, t0, cpu0, extra):
    dt = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    out = {"judgments": n, "seconds": dt, "per_second": n / dt, "cpu_seconds": cpu,
           "cpu_ms_per_call": 1000 * cpu / n}
    out.update(extra)
    print(json.dumps(out))


def open_connections_nodelay():
    """(connections, with TCP_NODELAY) over the TCP sockets this process has open now: called
    while a client's keep-alive pool is still open, it checks what the library really set."""
    import os
    total = nodelay = 0
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if s.type == socket.SOCK_STREAM and s.family in (socket.AF_INET, socket.AF_INET6):
                total += 1
                nodelay += s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        except OSError:
            pass
        finally:
            s.close()
    return total, nodelay

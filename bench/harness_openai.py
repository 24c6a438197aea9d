#!/usr/bin/python3
"""The most common way: the official `openai` package's AsyncOpenAI client (its own pooled httpx
client), IN_FLIGHT requests in flight under a semaphore, the verdict by regex, JSONL appended.
Both orders per item, like `arbiter sbs`. Before the client closes, the harness checks
TCP_NODELAY on every connection still open (harness_common.open_connections_nodelay).
Not run on this project's machine: the package is not in Debian 12 and there is no PyPI here.
Usage: harness_openai.py ITEMS ANSWERS URL MODEL OUT.jsonl IN_FLIGHT [TEMPLATE]"""
import asyncio, sys, time
import openai
import harness_common as hc

items_path, answers_path, url, model, out_path, in_flight = sys.argv[1:7]
in_flight = int(in_flight)
items, answers, system, user = hc.load(items_path, answers_path,
                                       sys.argv[7] if len(sys.argv) > 7 else "templates/II-reason.txt")


async def main():
    out = open(out_path, "w")
    gate = asyncio.Semaphore(in_flight)
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=6, timeout=300,
                                http_client=None)

    async def judge(item, order):
        body = hc.body(model, item, answers, system, user, order)
        async with gate:
            reply = await client.chat.completions.create(**body)
        out.write(hc.record(item, order, reply.choices[0].message.content))

    await asyncio.gather(*(judge(it, o) for it in items for o in (0, 1)))
    checked = hc.open_connections_nodelay()
    await client.close()
    out.close()
    return checked


t0, cpu0 = time.perf_counter(), hc.cpu_seconds()
connections, nodelay = asyncio.run(main())
hc.report(len(items) * 2, t0, cpu0, {"harness": "openai AsyncOpenAI", "in_flight": in_flight,
                                     "connections": connections, "nodelay_connections": nodelay})

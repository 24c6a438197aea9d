#!/usr/bin/python3
"""The fastest way a Python user writes this job: asyncio + aiohttp, one ClientSession whose
connector keeps up to IN_FLIGHT keep-alive connections, a semaphore holding IN_FLIGHT requests
in flight, the verdict by regex, JSONL appended. Both orders per item, like `arbiter sbs`.
aiohttp sets TCP_NODELAY on its client connections itself; the harness checks it on every
connection it opens and reports how many had it (`nodelay_connections`).
Usage: harness_aiohttp.py ITEMS ANSWERS URL MODEL OUT.jsonl IN_FLIGHT [TEMPLATE]"""
import asyncio, socket, sys, time
import aiohttp
import harness_common as hc

items_path, answers_path, url, model, out_path, in_flight = sys.argv[1:7]
in_flight = int(in_flight)
items, answers, system, user = hc.load(items_path, answers_path,
                                       sys.argv[7] if len(sys.argv) > 7 else "templates/II-reason.txt")


class CheckedConnector(aiohttp.TCPConnector):
    """aiohttp's connector, noting for each new connection whether TCP_NODELAY is on once
    aiohttp has set it up (connection_made runs inside the creation)."""
    connections = nodelay = 0

    async def _wrap_create_connection(self, *args, **kwargs):
        transport, protocol = await super()._wrap_create_connection(*args, **kwargs)
        sock = transport.get_extra_info("socket")
        CheckedConnector.connections += 1
        if sock is not None and sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY):
            CheckedConnector.nodelay += 1
        return transport, protocol


async def main():
    out = open(out_path, "w")
    gate = asyncio.Semaphore(in_flight)
    connector = CheckedConnector(limit=in_flight)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        async def judge(item, order):
            body = hc.body(model, item, answers, system, user, order)
            async with gate:
                for attempt in range(7):
                    try:
                        async with session.post(url + "/chat/completions", json=body) as r:
                            if r.status == 200:
                                reply = await r.json()
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.5 * 2 ** attempt)
            out.write(hc.record(item, order, reply["choices"][0]["message"]["content"]))

        await asyncio.gather(*(judge(it, o) for it in items for o in (0, 1)))
    out.close()
    return CheckedConnector.connections, CheckedConnector.nodelay


t0, cpu0 = time.perf_counter(), hc.cpu_seconds()
connections, nodelay = asyncio.run(main())
hc.report(len(items) * 2, t0, cpu0, {"harness": "asyncio + aiohttp", "in_flight": in_flight,
                                     "connections": connections, "nodelay_connections": nodelay})

"""Event-transport benchmark; prints one JSON line.

router_ratio_vs_raw: router_loop's forwarding rate (standard -> FIFO, aiobotocore) divided by a plain boto3
batch receive/send/delete loop doing the same against the same moto server, each on fresh queues, one after
the other (in turns first) in each of ROUNDS rounds; the median of the rounds' ratios (router_ratio_runs lists
them), so one noisy round on a shared machine neither passes nor fails it.
embedded_msgs_per_s: router_loop's forwarding rate on the embedded SQLite queue.
pickup_p50_ms / pickup_p99_ms: embedded enqueue -> handler start latency with an idle, long-polling worker.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import boto3

# The checkout this file is in, not whichever copy of the package the interpreter has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hummingbird_agent.events import (
    EmbeddedStore,
    Event,
    OutgoingMessage,
    WorkerSettings,
    encode_envelope,
    poll_loop,
    router_loop,
)
from hummingbird_agent.events.protocols import Continuations, Queue
from hummingbird_agent.events.router import RouterStats
from hummingbird_agent.events.sqs import sqs_client

# moto's FIFO send slows down as the queue grows (its dedup check scans the queue), so the moto runs stay
# short; both loops see the same server cost, which keeps the ratio fair.
MESSAGES = 150
EMBEDDED_MESSAGES = 1000
PICKUPS = 200
ROUNDS = 5
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}


def _start_moto() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    moto = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1).close()  # noqa: S310 - local server
            return proc, url
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("moto_server did not start")


def _bodies(n: int) -> list[str]:
    return [encode_envelope("gitlab", "pipeline", {"object_kind": "pipeline", "n": i}) for i in range(n)]


def _queues(sqs: Any, name: str) -> tuple[str, str]:
    src = sqs.create_queue(QueueName=f"{name}-in")["QueueUrl"]
    dst = sqs.create_queue(QueueName=f"{name}-out.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    bodies = _bodies(MESSAGES)
    for start in range(0, MESSAGES, 10):
        entries = [{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start : start + 10])]
        sqs.send_message_batch(QueueUrl=src, Entries=entries)
    return src, dst


def _raw_loop(sqs: Any, src: str, dst: str) -> float:
    start, done = time.perf_counter(), 0
    while done < MESSAGES:
        got = sqs.receive_message(QueueUrl=src, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        if not got:
            continue
        entries = [
            {
                "Id": str(i),
                "MessageBody": m["Body"],
                "MessageGroupId": m["MessageId"],
                "MessageDeduplicationId": m["MessageId"],
            }
            for i, m in enumerate(got)
        ]
        sent = sqs.send_message_batch(QueueUrl=dst, Entries=entries)["Successful"]
        ok = [got[int(s["Id"])] for s in sent]
        sqs.delete_message_batch(
            QueueUrl=src, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(ok)]
        )
        done += len(ok)
    return MESSAGES / (time.perf_counter() - start)


async def _route(ingress: Queue, work: Queue, wait_s: float, total: int = MESSAGES) -> float:
    stop, stats = asyncio.Event(), RouterStats()
    start = time.perf_counter()
    task = asyncio.create_task(router_loop(ingress, work, stop, wait_s=wait_s, stats=stats))
    while stats.forwarded < total:
        await asyncio.sleep(0.002)
    elapsed = time.perf_counter() - start
    stop.set()
    await task
    return total / elapsed


async def _router_on_moto(endpoint: str, src: str, dst: str) -> float:
    async with sqs_client("us-east-1", endpoint) as client:
        return await _route(client.queue(src), client.queue(dst), 1)


async def _embedded(directory: Path) -> tuple[float, list[float]]:
    store = EmbeddedStore(directory / "bench.sqlite")
    store.open()
    ingress, work = store.queue("ingress", fifo=False), store.queue("work", fifo=True)
    bodies = _bodies(EMBEDDED_MESSAGES)
    for start in range(0, EMBEDDED_MESSAGES, 10):
        await ingress.send_batch([OutgoingMessage(b) for b in bodies[start : start + 10]])
    rate = await _route(ingress, work, 1, EMBEDDED_MESSAGES)
    latencies = await _pickups(store.queue("pickup", fifo=True))
    store.close()
    return rate, latencies


async def _pickups(queue: Queue) -> list[float]:
    picked: asyncio.Queue[float] = asyncio.Queue()

    async def handler(event: Event, _: Continuations) -> None:
        picked.put_nowait(time.perf_counter() - event.body["t"])

    stop = asyncio.Event()
    worker = asyncio.create_task(poll_loop(queue, handler, stop, WorkerSettings(wait_s=20)))
    out = []
    for i in range(PICKUPS):
        body = encode_envelope("agent", "continuation", {"t": time.perf_counter()})
        await queue.send_batch([OutgoingMessage(body, f"g{i}", f"d{i}")])
        out.append(await picked.get() * 1000)
        await asyncio.sleep(0.005)  # let the worker go back to its long poll
    stop.set()
    await worker
    return out


def main() -> None:
    os.environ.update(CREDENTIALS)
    proc, endpoint = _start_moto()
    try:
        sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
        raws, routers = [], []
        for n in range(ROUNDS):  # which loop goes first alternates, so neither gains from the order
            raw_queues, router_queues = _queues(sqs, f"raw{n}"), _queues(sqs, f"router{n}")
            if n % 2:
                routers.append(asyncio.run(_router_on_moto(endpoint, *router_queues)))
            raws.append(_raw_loop(sqs, *raw_queues))
            if not n % 2:
                routers.append(asyncio.run(_router_on_moto(endpoint, *router_queues)))
    finally:
        proc.terminate()
        proc.wait()
    with tempfile.TemporaryDirectory() as directory:
        embedded, latencies = asyncio.run(_embedded(Path(directory)))
    quantiles = statistics.quantiles(latencies, n=100)
    ratios = [router / raw for router, raw in zip(routers, raws, strict=True)]
    figures = {
        "router_ratio_vs_raw": round(statistics.median(ratios), 3),
        "router_ratio_runs": [round(r, 3) for r in ratios],
        "embedded_msgs_per_s": round(embedded, 1),
        "pickup_p50_ms": round(statistics.median(latencies), 3),
        "pickup_p99_ms": round(quantiles[98], 3),
        "router_msgs_per_s": round(statistics.median(routers), 1),
        "raw_msgs_per_s": round(statistics.median(raws), 1),
        "load_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""The router on the embedded store: batches overlap in flight but reach the work queue in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hummingbird_agent.events import EmbeddedStore, OutgoingMessage, encode_envelope, router_loop
from hummingbird_agent.events.router import RouterStats

MESSAGES = 57  # six batches, the last one short


def note(discussion: str, n: int) -> str:
    attrs = {"discussion_id": discussion, "note": f"reply {n}"}
    return encode_envelope("gitlab", "note", {"object_kind": "note", "object_attributes": attrs, "n": n})


async def test_one_discussion_keeps_its_order_across_batches_and_nothing_stays_on_ingress(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "queue.sqlite")
    store.open()
    ingress, work = store.queue("ingress", fifo=False), store.queue("work", fifo=True)
    bodies = [note("a" * 40, n) for n in range(MESSAGES)]
    for start in range(0, MESSAGES, 10):
        await ingress.send_batch([OutgoingMessage(b) for b in bodies[start : start + 10]])
    stop, stats = asyncio.Event(), RouterStats()
    router = asyncio.create_task(router_loop(ingress, work, stop, wait_s=0.2, stats=stats))
    while stats.forwarded < MESSAGES:
        await asyncio.sleep(0.01)
    stop.set()
    await router
    forwarded = []
    while batch := await work.receive(10, 0, 30):
        forwarded += [m.body for m in batch]
        await work.delete_batch([m.receipt for m in batch])
    assert forwarded == bodies
    assert await ingress.receive(10, 0, 30) == []
    store.close()


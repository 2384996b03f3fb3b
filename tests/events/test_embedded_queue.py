"""Embedded-only properties: the dedup window survives deletion (moto lacks this), stale receipts, and
durability across a reopen."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.errors import TransientError
from hummingbird_agent.events import EmbeddedStore, OutgoingMessage


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_dedup_id_is_remembered_after_delete_for_the_whole_window(tmp_path: Path) -> None:
    clock = Clock()
    store = EmbeddedStore(tmp_path / "q.sqlite", clock=clock)
    store.open()
    queue = store.queue("work", fifo=True)
    await queue.send_batch([OutgoingMessage("a", "g", "same")])
    [m] = await queue.receive(1, 0, 30)
    await queue.delete_batch([m.receipt])
    clock.now += budgets.DEDUP_WINDOW_S - 1
    await queue.send_batch([OutgoingMessage("again", "g", "same")])
    assert await queue.receive(1, 0, 30) == []  # still inside the 5-minute window
    clock.now += 2
    await queue.send_batch([OutgoingMessage("later", "g", "same")])
    assert [x.body for x in await queue.receive(1, 0, 30)] == ["later"]
    store.close()


async def test_a_stale_receipt_cannot_delete_a_redelivered_message(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True)
    await queue.send_batch([OutgoingMessage("a", "g", "d")])
    [old] = await queue.receive(1, 0, 30)
    await queue.change_visibility_batch([old.receipt], 0)
    [new] = await queue.receive(1, 0, 30)
    result = await queue.delete_batch([old.receipt, new.receipt])
    assert result.ok == (1,) and result.failed[0][0] == 0


async def test_messages_survive_closing_and_reopening(tmp_path: Path) -> None:
    first = EmbeddedStore(tmp_path / "q.sqlite")
    first.open()
    await first.queue("ingress", fifo=False).send_batch([OutgoingMessage("kept")])
    first.close()
    second = EmbeddedStore(tmp_path / "q.sqlite")
    second.open()
    assert [m.body for m in await second.queue("ingress", fifo=False).receive(10, 0, 30)] == ["kept"]
    second.close()


async def test_standard_queue_ignores_groups_and_needs_no_dedup_id(store: EmbeddedStore) -> None:
    queue = store.queue("ingress", fifo=False)
    result = await queue.send_batch([OutgoingMessage("a"), OutgoingMessage("b", group_id="g", dedup_id="d")])
    assert result.ok == (0, 1)
    got = await queue.receive(10, 0, 30)
    assert [(m.body, m.group_id) for m in got] == [("a", None), ("b", None)]


@pytest.mark.parametrize("existing", [False, True], ids=["no file", "an empty file"])
async def test_a_new_store_carries_the_sqlite_header_from_open_on(tmp_path: Path, existing: bool) -> None:
    # The header check refuses an empty file while serving; a new store must not look like one.
    path = tmp_path / "new.sqlite"
    if existing:
        path.touch()
    store = EmbeddedStore(path)
    store.open()
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    queue = store.queue("ingress", fifo=False)
    assert (await queue.send_batch([OutgoingMessage("first")])).ok == (0,)
    assert [m.body for m in await queue.receive(10, 0, 30)] == ["first"]
    store.close()



def _open_at(path: str, start: float, results: multiprocessing.Queue[str]) -> None:
    while time.time() < start:  # all processes open at the same moment
        pass
    try:
        store = EmbeddedStore(Path(path))
        store.open()
        store.close()
        results.put("opened")
    except (TransientError, OSError) as exc:
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    """A router and a worker (or replicas) starting together on one new store: switching it to WAL and creating the
    schema gave some of them `database is locked` at once (11 of 160 opens, 8 processes x 20 new stores, before)."""
    context = multiprocessing.get_context("fork")  # spawning 80 interpreters would take a minute
    results: multiprocessing.Queue[str] = context.Queue()
    outcomes = []
    for n in range(10):
        start = time.time() + 0.3
        processes = [context.Process(target=_open_at, args=(str(tmp_path / f"q{n}.sqlite"), start, results))
                     for _ in range(8)]
        for process in processes:
            process.start()
        outcomes += [results.get(timeout=60) for _ in processes]
        for process in processes:
            process.join(60)
    assert [o for o in outcomes if o != "opened"] == [] and len(outcomes) == 80

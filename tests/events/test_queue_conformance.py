"""One conformance suite for both queue backends (embedded SQLite and SQS on moto)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from hummingbird_agent.events import OutgoingMessage


def _msg(body: str, group: str = "g1", dedup: str | None = None) -> OutgoingMessage:
    return OutgoingMessage(body, group_id=group, dedup_id=dedup or body)


async def test_send_receive_delete_round_trip(make_fifo: Any) -> None:
    queue, _ = make_fifo()
    sent = await queue.send_batch([_msg("a"), _msg("b", "g2")])
    assert sent.ok == (0, 1) and not sent.failed and len(sent.message_ids) == 2
    got = await queue.receive(10, 1, 30)
    assert [(m.body, m.group_id, m.receive_count) for m in got] == [("a", "g1", 1), ("b", "g2", 1)]
    assert {m.message_id for m in got} == set(sent.message_ids.values())
    deleted = await queue.delete_batch([m.receipt for m in got])
    assert deleted.ok == (0, 1)
    assert await queue.receive(10, 0, 30) == []
    await queue.ping()


async def test_one_group_in_flight_at_a_time_and_order_kept(make_fifo: Any) -> None:
    queue, _ = make_fifo()
    await queue.send_batch([_msg("g1-a"), _msg("g1-b"), _msg("g2-a", "g2")])
    first = await queue.receive(1, 1, 30)
    assert [m.body for m in first] == ["g1-a"]
    # g1 is blocked while g1-a is in flight; only the other group is delivered.
    assert [m.body for m in await queue.receive(10, 0, 30)] == ["g2-a"]
    assert await queue.receive(10, 0, 30) == []
    await queue.delete_batch([first[0].receipt])
    assert [m.body for m in await queue.receive(10, 1, 30)] == ["g1-b"]


async def test_visibility_timeout_expiry_redelivers_with_higher_count(make_fifo: Any) -> None:
    queue, _ = make_fifo()
    await queue.send_batch([_msg("x")])
    assert len(await queue.receive(1, 1, 1)) == 1
    assert await queue.receive(1, 0, 1) == []
    await asyncio.sleep(1.3)
    again = await queue.receive(1, 1, 30)
    assert [(m.body, m.receive_count) for m in again] == [("x", 2)]


async def test_change_visibility_extends_and_releases(make_fifo: Any) -> None:
    queue, _ = make_fifo()
    await queue.send_batch([_msg("x")])
    [m] = await queue.receive(1, 1, 1)
    assert (await queue.change_visibility_batch([m.receipt], 3)).ok == (0,)
    await asyncio.sleep(1.3)
    assert await queue.receive(1, 0, 30) == []  # extended beyond the original 1 s
    [m] = await queue.receive(1, 0, 30) or [m]
    assert (await queue.change_visibility_batch([m.receipt], 0)).ok == (0,)
    assert [x.body for x in await queue.receive(1, 1, 30)] == ["x"]


async def test_duplicate_dedup_id_within_window_is_not_delivered(make_fifo: Any) -> None:
    queue, _ = make_fifo()
    await queue.send_batch([_msg("first", dedup="d1")])
    again = await queue.send_batch([_msg("second", dedup="d1")])
    assert again.ok == (0,)  # accepted, as SQS does, but not delivered
    got = await queue.receive(10, 1, 30)
    assert [m.body for m in got] == ["first"]


async def test_dead_letter_after_max_receives(make_fifo: Any) -> None:
    queue, dlq = make_fifo(max_receives=2)
    await queue.send_batch([_msg("poison"), _msg("next", "g2")])
    counts: list[int] = []
    dead: list[Any] = []
    # Polled, not timed: a server may make an expired message visible again a little late.
    deadline = time.monotonic() + 30
    while not dead and time.monotonic() < deadline:
        got = await queue.receive(10, 1, 1)
        counts.extend(m.receive_count for m in got if m.body == "poison")
        await queue.delete_batch([m.receipt for m in got if m.body == "next"] or ["none"])
        dead = await dlq.receive(10, 0, 30)
    assert counts == [1, 2]
    assert [(m.body, m.group_id) for m in dead] == [("poison", "g1")]


async def test_long_poll_returns_as_soon_as_a_message_arrives(make_fifo: Any) -> None:
    queue, _ = make_fifo()

    async def later() -> None:
        await asyncio.sleep(0.5)
        await queue.send_batch([_msg("late")])

    sender = asyncio.create_task(later())
    start = time.monotonic()
    got = await queue.receive(1, 5, 30)
    await sender
    assert [m.body for m in got] == ["late"]
    assert time.monotonic() - start < 2.5


async def test_invalid_group_fails_only_that_entry(make_fifo: Any) -> None:
    queue, _ = make_fifo()
    result = await queue.send_batch([_msg("ok"), OutgoingMessage("bad", group_id="x" * 200, dedup_id="d")])
    assert result.ok == (0,) and [i for i, _ in result.failed] == [1]

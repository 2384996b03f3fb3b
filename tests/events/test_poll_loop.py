"""Worker semantics on the embedded queue: retry signals, drops, failures, heartbeat, drain and grace."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import pytest

from hummingbird_agent.errors import PermanentError, RetryLater
from hummingbird_agent.events import EmbeddedStore, Event, OutgoingMessage, WorkerSettings, encode_envelope, poll_loop
from hummingbird_agent.events.protocols import Continuations
from tests.events.support import Recorder, wait_for

SETTINGS = WorkerSettings(max_concurrent=4, visibility_timeout_s=1, heartbeat_interval_s=0.2, wait_s=0.1, drain=True)


async def _fill(queue: Any, n: int, group: str = "g") -> None:
    body = [OutgoingMessage(encode_envelope("gitlab", "pipeline", {"n": i}), group, f"{group}-{i}") for i in range(n)]
    await queue.send_batch(body)


async def test_drain_handles_everything_in_group_order(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True)
    await _fill(queue, 3, "a")
    await _fill(queue, 3, "b")
    recorder = Recorder()
    stats = await poll_loop(queue, recorder, asyncio.Event(), SETTINGS)
    assert stats.handled == 6
    for group in ("a", "b"):
        assert [e.body["n"] for e in recorder.events if e.group_id == group] == [0, 1, 2]
    assert queue.counts() == (0, 0)


async def test_retry_later_delays_redelivery(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True)
    await _fill(queue, 1)
    calls: list[int] = []

    async def handler(event: Event, _: Continuations) -> None:
        calls.append(event.receive_count)
        if len(calls) == 1:
            raise RetryLater("not yet", 1.0)

    stop = asyncio.Event()
    task = asyncio.create_task(poll_loop(queue, handler, stop, WorkerSettings(wait_s=0.1, visibility_timeout_s=30)))
    await wait_for(lambda: len(calls) == 2, 5, "the retry")
    stop.set()
    stats = await task
    assert calls == [1, 2] and stats.retried == 1 and stats.handled == 1


async def test_permanent_error_deletes_and_other_errors_redeliver_until_dead_letter(
    store: EmbeddedStore, caplog: pytest.LogCaptureFixture
) -> None:
    queue = store.queue("work", fifo=True, dead_letter="work-dlq", max_receives=2)
    await queue.send_batch(
        [
            OutgoingMessage(encode_envelope("gitlab", "bad", {}), "p", "p1"),
            OutgoingMessage(encode_envelope("gitlab", "boom", {}), "b", "b1"),
        ]
    )

    async def handler(event: Event, _: Continuations) -> None:
        if event.event_type == "bad":
            raise PermanentError("forbidden project")
        raise ValueError("handler bug")

    stop = asyncio.Event()
    with caplog.at_level(logging.INFO):
        task = asyncio.create_task(poll_loop(queue, handler, stop, WorkerSettings(wait_s=0.1, visibility_timeout_s=1)))
        dlq = store.queue("work-dlq", fifo=True)
        await wait_for(lambda: dlq.counts()[0] == 1, 6, "dead-lettering")
        stop.set()
        stats = await task
    assert stats.dropped == 1 and stats.failed == 2
    assert queue.counts() == (0, 0)
    assert "event dropped" in caplog.text and "event failed" in caplog.text


async def test_heartbeat_keeps_a_long_handler_from_redelivery(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True)
    await _fill(queue, 1)
    recorder = Recorder(delay_s=1.8)  # well past the 1 s visibility timeout
    second = Recorder()

    async with asyncio.TaskGroup() as tg:
        stop = asyncio.Event()
        first = tg.create_task(
            poll_loop(
                queue, recorder, stop, WorkerSettings(visibility_timeout_s=1, heartbeat_interval_s=0.3, wait_s=0.1)
            )
        )
        # A competing worker would get the message if the heartbeat did not renew it.
        other = tg.create_task(poll_loop(queue, second, stop, WorkerSettings(visibility_timeout_s=1, wait_s=0.1)))
        await wait_for(lambda: len(recorder.events) == 1, 6, "the long handler")
        stop.set()
    assert first.result().handled == 1 and other.result().handled == 0
    assert recorder.events[0].receive_count == 1


async def test_shutdown_lets_running_handlers_finish_and_releases_the_rest(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True)
    await _fill(queue, 3, "g")
    recorder = Recorder(delay_s=0.5)
    stop = asyncio.Event()
    settings = WorkerSettings(max_concurrent=1, visibility_timeout_s=30, wait_s=0.1, shutdown_grace_s=5)
    task = asyncio.create_task(poll_loop(queue, recorder, stop, settings))
    await wait_for(lambda: sum(recorder.running.values()) == 1, 5, "a running handler")
    stop.set()
    stats = await task
    assert stats.handled == 1 and len(recorder.events) == 1
    assert queue.counts() == (2, 0)  # the two unstarted messages are visible again, nothing lost


async def test_grace_exceeded_cancels_and_releases_the_message(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True)
    await _fill(queue, 1)
    recorder = Recorder(delay_s=10)
    stop = asyncio.Event()
    settings = WorkerSettings(visibility_timeout_s=30, wait_s=0.1, shutdown_grace_s=0.2)
    task = asyncio.create_task(poll_loop(queue, recorder, stop, settings))
    await wait_for(lambda: sum(recorder.running.values()) == 1, 5, "a running handler")
    stop.set()
    await asyncio.wait_for(task, 10)
    assert recorder.events == [] and queue.counts() == (1, 0)  # visible again at once, not after 30 s
    again = Recorder()
    await poll_loop(queue, again, asyncio.Event(), SETTINGS)
    assert [e.receive_count for e in again.events] == [2]


async def test_a_handler_that_ignores_cancellation_still_has_its_message_released(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True)
    await _fill(queue, 1)
    started = asyncio.Event()

    async def stubborn(event: Event, continuations: Continuations) -> None:
        started.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(30)
        await asyncio.sleep(30)  # the worker's cancellation was swallowed; a second one ends it

    stop = asyncio.Event()
    settings = WorkerSettings(visibility_timeout_s=30, wait_s=0.1, shutdown_grace_s=0.2)
    task = asyncio.create_task(poll_loop(queue, stubborn, stop, settings))
    await asyncio.wait_for(started.wait(), 5)
    stop.set()
    await asyncio.wait_for(task, 10)
    assert queue.counts() == (1, 0)


async def test_undecodable_work_message_is_left_for_the_dead_letter_queue(store: EmbeddedStore) -> None:
    queue = store.queue("work", fifo=True, dead_letter="work-dlq", max_receives=1)
    await queue.send_batch([OutgoingMessage("not an envelope", "g", "d")])
    await _fill(queue, 1, "ok")
    recorder = Recorder()
    stats = await poll_loop(queue, recorder, asyncio.Event(), SETTINGS)
    assert stats.undecodable == 1 and stats.handled == 1

"""FIFO worker: poll -> slot (max_concurrent_agents) -> one task per message group -> handler ->
delete (shielded). A heartbeat keeps every in-flight message hidden; SIGTERM stops polling and lets
running handlers finish within the grace period, then cancels them and makes their messages visible again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError, EnvelopeError, PermanentError, RetryLater, TransientError
from hummingbird_agent.events.aio import chunks, sleep_unless_stopped, until_stopped
from hummingbird_agent.events.envelope import decode_sns_message, encode_envelope, valid_queue_id
from hummingbird_agent.events.protocols import Event, Handler, OutgoingMessage, Queue, ReceivedMessage
from hummingbird_agent.observability import log_context

logger = logging.getLogger(__name__)
_MAX_VISIBILITY_S = 43_200  # SQS ceiling (12 h)


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    max_concurrent: int = 4
    visibility_timeout_s: int = budgets.VISIBILITY_TIMEOUT_S
    heartbeat_interval_s: float = budgets.HEARTBEAT_INTERVAL_S
    wait_s: float = budgets.LONG_POLL_WAIT_S
    shutdown_grace_s: float = budgets.SHUTDOWN_GRACE_S
    max_runtime_s: float = budgets.MAX_HANDLER_RUNTIME_S
    # Return once a receive comes back empty and nothing is running (tests, one-shot runs).
    drain: bool = False


@dataclass(slots=True)
class WorkerStats:
    handled: int = 0
    failed: int = 0
    retried: int = 0
    dropped: int = 0
    undecodable: int = 0


class QueueContinuations:
    """Continuations of one parent message; their dedup ids derive from the parent's id, so a
    redelivered parent that enqueues again within the dedup window enqueues nothing new."""

    def __init__(self, queue: Queue, parent_id: str) -> None:
        self._queue = queue
        self._parent_id = parent_id
        self._count = 0

    async def enqueue(self, session_id: str, body: dict[str, Any]) -> str:
        return await self.send(session_id, "continuation", body)

    async def send(self, group_id: str, event_type: str, body: dict[str, Any]) -> str:
        if not valid_queue_id(group_id):
            raise PermanentError(f"{group_id[:40]!r} cannot be a message group id")
        self._count += 1
        dedup = f"{self._parent_id}:c{self._count}"
        message = OutgoingMessage(encode_envelope("agent", event_type, body), group_id, dedup)
        result = await self._queue.send_batch([message])
        if result.failed:
            raise TransientError(f"continuation send failed: {result.failed[0][1]}")
        return result.message_ids.get(0, "")


class Worker:
    """Consumes the work queue until stopped (or drained); see module docstring for the phases."""

    def __init__(self, queue: Queue, handler: Handler, settings: WorkerSettings) -> None:
        self.queue = queue
        self.handler = handler
        self.settings = settings
        self.stats = WorkerStats()
        self._inflight: dict[str, ReceivedMessage] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._slot_freed = asyncio.Event()
        self._visibility_lock = asyncio.Lock()

    async def run(self, stop: asyncio.Event, hurry: asyncio.Event | None = None) -> WorkerStats:
        """Until `stop`; running handlers then get the grace period, which `hurry` (a second signal) ends."""
        logger.info("worker started: queue=%s slots=%d", self.queue.name, self.settings.max_concurrent)
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            await self._poll(stop)
            await self._finish(hurry or asyncio.Event())
        finally:
            heartbeat.cancel()
        s = self.stats
        logger.info(
            "worker stopped: handled=%d failed=%d retried=%d dropped=%d", s.handled, s.failed, s.retried, s.dropped
        )
        return s

    async def _poll(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            free = self.settings.max_concurrent - len(self._tasks)
            if free <= 0:
                self._slot_freed.clear()
                await until_stopped(self._slot_freed.wait(), stop)
                continue
            try:
                receive = self.queue.receive(
                    min(free, budgets.QUEUE_BATCH_MAX), self.settings.wait_s, self.settings.visibility_timeout_s
                )
                stopped, messages = await until_stopped(receive, stop)
            except AgentError as exc:
                # Outages are logged once where the queue is watched (events.watch); here every retry.
                logger.debug("worker: receive failed: %s; retrying in %.1f s", exc, budgets.TRANSPORT_ERROR_BACKOFF_S)
                await sleep_unless_stopped(budgets.TRANSPORT_ERROR_BACKOFF_S, stop)
                continue
            if not messages:
                if self.settings.drain and not self._tasks and not stopped:
                    return
                continue
            for group in group_batch(messages):
                self._start_group(group, stop)

    def _start_group(self, group: list[ReceivedMessage], stop: asyncio.Event) -> None:
        for message in group:
            self._inflight[message.receipt] = message
        task = asyncio.create_task(self._run_group(group, stop))
        self._tasks.add(task)
        task.add_done_callback(self._group_done)

    def _group_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slot_freed.set()

    async def _run_group(self, group: list[ReceivedMessage], stop: asyncio.Event) -> None:
        # Messages of one group run in order; after one that is not consumed, the rest go back.
        for index, message in enumerate(group):
            if stop.is_set():
                await self._release(group[index:])
                return
            if not await self._process(message):
                await self._release(group[index + 1 :])
                return

    async def _process(self, message: ReceivedMessage) -> bool:
        """Run the handler for one message; True when the message was consumed (deleted)."""
        with log_context(message_id=message.message_id):
            try:
                return await self._dispatch(message)
            finally:
                self._inflight.pop(message.receipt, None)

    async def _dispatch(self, message: ReceivedMessage) -> bool:
        try:
            envelope = decode_sns_message(message.body)
        except EnvelopeError as exc:
            self.stats.undecodable += 1
            logger.error(
                "event undecodable: message=%s receive=%d left for the dead-letter queue: %s",
                message.message_id,
                message.receive_count,
                exc,
            )
            return False
        event = Event(
            envelope.source,
            envelope.event_type,
            envelope.body,
            message.message_id,
            message.group_id,
            message.receive_count,
        )
        logger.info(
            "event started: %s/%s message=%s group=%s receive=%d",
            event.source,
            event.event_type,
            event.message_id,
            event.group_id,
            event.receive_count,
        )
        try:
            async with asyncio.timeout(self.settings.max_runtime_s):
                await self.handler(event, QueueContinuations(self.queue, message.message_id))
        except RetryLater as exc:
            delay = min(_MAX_VISIBILITY_S, max(0, math.ceil(exc.delay_s)))
            self.stats.retried += 1
            logger.info("event retried: message=%s in %d s: %s", message.message_id, delay, exc)
            await self._set_visibility([message.receipt], delay)
            return False
        except PermanentError as exc:
            self.stats.dropped += 1
            logger.error("event dropped: message=%s: %s", message.message_id, exc)
            await asyncio.shield(self._delete(message))
            return True
        except Exception:  # the per-message boundary: the message stays for redelivery, bounded by the DLQ
            self.stats.failed += 1
            logger.exception(
                "event failed: message=%s receive=%d left for redelivery", message.message_id, message.receive_count
            )
            return False
        await asyncio.shield(self._delete(message))
        self.stats.handled += 1
        logger.info("event finished: message=%s", message.message_id)
        return True

    async def _delete(self, message: ReceivedMessage) -> None:
        try:
            result = await self.queue.delete_batch([message.receipt])
        except AgentError as exc:
            logger.warning("delete of %s failed (it will be redelivered): %s", message.message_id, exc)
            return
        for _, reason in result.failed:
            logger.warning("delete of %s failed (it will be redelivered): %s", message.message_id, reason)

    async def _release(self, messages: Sequence[ReceivedMessage]) -> None:
        """Make received but unstarted messages visible again at once."""
        for message in messages:
            self._inflight.pop(message.receipt, None)
        if messages:
            await self._set_visibility([m.receipt for m in messages], 0)

    async def _set_visibility(self, receipts: Sequence[str], timeout_s: int) -> None:
        async with self._visibility_lock:
            for chunk in chunks(receipts, budgets.QUEUE_BATCH_MAX):
                try:
                    await self.queue.change_visibility_batch(chunk, timeout_s)
                except AgentError as exc:
                    logger.warning("change of visibility failed: %s", exc)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_interval_s)
            if self._inflight:
                await self._set_visibility(list(self._inflight), self.settings.visibility_timeout_s)

    async def _finish(self, hurry: asyncio.Event) -> None:
        if not self._tasks:
            return
        grace = self.settings.shutdown_grace_s
        logger.info("worker draining: %d groups running, grace %.0f s (signal again to cancel them now)",
                    len(self._tasks), grace)
        tasks = set(self._tasks)
        wakers = {asyncio.ensure_future(asyncio.wait(tasks)), asyncio.ensure_future(hurry.wait())}
        await asyncio.wait(wakers, timeout=grace, return_when=asyncio.FIRST_COMPLETED)
        for waker in wakers:
            waker.cancel()
        pending = {task for task in tasks if not task.done()}
        if not pending:
            return
        # Received messages of the groups still running: after cancellation nobody owns them.
        unfinished = list(self._inflight.values())
        for task in pending:
            task.cancel()
        logger.warning(
            "worker: %d handlers cancelled %s; releasing %d messages", len(pending),
            "by a second signal" if hurry.is_set() else f"after the {grace:.0f} s grace period", len(unfinished),
        )
        # A handler that swallows the cancellation (or is blocked in a thread) is not waited for, nor a
        # queue that does not answer: those messages come back after their visibility timeout instead.
        await asyncio.wait(pending, timeout=budgets.CANCEL_WAIT_S)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(budgets.CANCEL_WAIT_S):
                await self._set_visibility([m.receipt for m in unfinished], 0)
        self._inflight.clear()


def group_batch(messages: Sequence[ReceivedMessage]) -> list[list[ReceivedMessage]]:
    """Split a receive into per-group lists (order kept); ungrouped messages stand alone."""
    groups: dict[str, list[ReceivedMessage]] = {}
    for message in messages:
        groups.setdefault(message.group_id or f"\0{message.receipt}", []).append(message)
    return list(groups.values())


async def poll_loop(queue: Queue, handler: Handler, stop: asyncio.Event, settings: WorkerSettings,
                    hurry: asyncio.Event | None = None) -> WorkerStats:
    """Consume the work queue until `stop` is set (or, with settings.drain, until it is empty); `hurry` cuts the
    shutdown grace of running handlers short."""
    return await Worker(queue, handler, settings).run(stop, hurry)

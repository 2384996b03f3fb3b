"""Queue health as the service sees it: every queue call goes through WatchedQueue, which records the
last failure, so an outage is logged once at ERROR when it starts (naming the store or queue and the
cause) and once when it ends, however many webhooks, receives or pings meet it meanwhile."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from hummingbird_agent.errors import AgentError
from hummingbird_agent.events.protocols import BatchResult, OutgoingMessage, Queue, ReceivedMessage

logger = logging.getLogger(__name__)
T = TypeVar("T")


class OutageLog:
    """Problems of the queues sharing it; two queues in one embedded file report the same problem
    text, which is then logged once."""

    def __init__(self) -> None:
        self._active: dict[str, str] = {}

    def failed(self, queue: str, problem: str) -> None:
        # Logged when the queue starts failing; other calls failing meanwhile (another action, a ping)
        # only at DEBUG.
        logged = queue in self._active or problem in self._active.values()
        self._active[queue] = problem
        if logged:
            logger.debug("queue still unusable: %s", problem)
        else:
            logger.error("queue unusable, refusing new work until it is back: %s", problem)

    def ok(self, queue: str) -> None:
        problem = self._active.pop(queue, None)
        if problem is not None and problem not in self._active.values():
            logger.warning("queue usable again (was: %s)", problem)

    def problem(self, queue: str) -> str | None:
        return self._active.get(queue)


class WatchedQueue:
    """A Queue that reports each call's outcome to an OutageLog; behaves exactly like the inner queue."""

    def __init__(self, inner: Queue, outages: OutageLog) -> None:
        self.inner = inner
        self.name = inner.name
        self._outages = outages

    async def _watch(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            result = await call()
        except AgentError as exc:
            self._outages.failed(self.name, str(exc))
            raise
        self._outages.ok(self.name)
        return result

    async def receive(self, max_messages: int, wait_s: float, visibility_timeout_s: int) -> list[ReceivedMessage]:
        return await self._watch(lambda: self.inner.receive(max_messages, wait_s, visibility_timeout_s))

    async def send_batch(self, messages: Sequence[OutgoingMessage]) -> BatchResult:
        return await self._watch(lambda: self.inner.send_batch(messages))

    async def delete_batch(self, receipts: Sequence[str]) -> BatchResult:
        return await self._watch(lambda: self.inner.delete_batch(receipts))

    async def change_visibility_batch(self, receipts: Sequence[str], timeout_s: int) -> BatchResult:
        return await self._watch(lambda: self.inner.change_visibility_batch(receipts, timeout_s))

    async def ping(self) -> None:
        await self._watch(self.inner.ping)

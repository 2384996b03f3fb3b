"""The transport's small interfaces: the Queue every backend implements, and the Event/Handler seam
the conversation layer plugs into."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    """One received queue message; `receipt` is valid until its visibility timeout expires. `sequence` is a
    FIFO message's SequenceNumber where the backend reports one: new whenever the message enters a queue
    (sent, or moved to a dead-letter queue), unchanged by receives."""

    message_id: str
    receipt: str
    body: str
    group_id: str | None
    receive_count: int
    sequence: str | None = None


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """A message to send; FIFO queues need `group_id` and `dedup_id`, standard queues ignore them."""

    body: str
    group_id: str | None = None
    dedup_id: str | None = None


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Per-entry outcome of a batch call: indexes (into the request) that succeeded, and failures."""

    ok: tuple[int, ...] = ()
    failed: tuple[tuple[int, str], ...] = ()
    message_ids: dict[int, str] = field(default_factory=dict)


class Queue(Protocol):
    """Long-poll receive with visibility timeout, send with group and dedup id, delete, change
    visibility, each in batch form (at most budgets.QUEUE_BATCH_MAX entries)."""

    name: str

    async def receive(self, max_messages: int, wait_s: float, visibility_timeout_s: int) -> list[ReceivedMessage]:
        """Up to `max_messages`, waiting up to `wait_s` for the first one."""
        ...

    async def send_batch(self, messages: Sequence[OutgoingMessage]) -> BatchResult: ...

    async def delete_batch(self, receipts: Sequence[str]) -> BatchResult: ...

    async def change_visibility_batch(self, receipts: Sequence[str], timeout_s: int) -> BatchResult: ...

    async def ping(self) -> None:
        """Raise TransientError when the queue cannot be reached (readiness)."""
        ...


@dataclass(frozen=True, slots=True)
class Event:
    """A decoded work-queue message as a handler sees it."""

    source: str
    event_type: str
    body: dict[str, Any]
    message_id: str
    group_id: str | None
    receive_count: int


class Continuations(Protocol):
    """Lets a handler enqueue follow-up work before its own message is deleted."""

    async def enqueue(self, session_id: str, body: dict[str, Any]) -> str:
        """Send a continuation (source "agent", event_type "continuation", group = session_id).
        Returns its message id. Redeliveries of the same parent message are deduplicated."""
        ...

    async def send(self, group_id: str, event_type: str, body: dict[str, Any]) -> str:
        """Send follow-up work of any kind (source "agent") into `group_id`, behind that group's earlier
        messages; deduplicated like `enqueue`."""
        ...


# The conversation layer's entry point. Raise errors.RetryLater(reason, delay_s) to be retried after a
# delay, errors.PermanentError to drop the message; any other exception leaves it for redelivery.
Handler = Callable[[Event, Continuations], Awaitable[None]]

"""Operator tools over either backend: what the queues hold (stats, peek), moving dead-lettered messages
back to their source (redrive) and emptying a queue (purge).

Queues are named as the service knows them: `ingress`, `work`, `ingress-dlq`, `work-dlq`. A peek shows
where an event came from (kind, project, MR, group, receive count), never its body: webhook bodies may
carry tokens of whoever configured the hook."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hummingbird_agent import budgets
from hummingbird_agent.errors import EnvelopeError
from hummingbird_agent.events.envelope import decode_sns_message, valid_queue_id
from hummingbird_agent.events.protocols import OutgoingMessage, Queue, ReceivedMessage

SOURCES = ("ingress", "work")
NAMES = ("ingress", "work", "ingress-dlq", "work-dlq")


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue's counts; `oldest_age_s` is None where the backend cannot tell (SQS: CloudWatch only)."""

    name: str
    where: str
    depth: int
    in_flight: int
    delayed: int
    oldest_age_s: float | None


@dataclass(frozen=True, slots=True)
class Peeked:
    """What an operator may see of one message: its origin, not its body."""

    message_id: str
    queue: str
    receive_count: int
    group: str | None
    source: str
    kind: str
    project: str | None
    mr: int | None
    problem: str | None = None
    receives_left: int | None = None  # SQS: receives before the dead-letter queue (maxReceiveCount - count)


@dataclass(frozen=True, slots=True)
class Peek:
    """A peek's rows, and how many messages the dead-letter queue gained meanwhile (SQS: a peek is a receive,
    and a receive past maxReceiveCount moves a message there instead of returning it)."""

    rows: tuple[Peeked, ...]
    dead_lettered: int = 0


@dataclass(frozen=True, slots=True)
class Redriven:
    """What a redrive did: a one-line summary, and the requested ids the dead-letter queue did not hold."""

    summary: str
    not_found: frozenset[str] = frozenset()


class QueueAdmin(Protocol):
    """The operations each backend provides; `queue` is one of NAMES, `source` one of SOURCES."""

    async def stats(self) -> list[QueueStats]: ...

    async def peek(self, queue: str, limit: int, force: bool = False) -> Peek:
        """Up to `limit` messages; where a peek is a receive that counts toward a dead-letter policy, refused
        (ConfigError) unless `force`."""
        ...

    async def redrive(self, source: str, ids: frozenset[str]) -> Redriven:
        """Move the dead-letter queue's messages (those in `ids`, or all) back; those of `ids` it holds are
        moved even when others are not found."""
        ...

    async def purge(self, queue: str) -> int | None:
        """Delete every message; the count when the backend knows it."""
        ...


def summarize(
    queue: str, message_id: str, body: str, group: str | None, receives: int, max_receives: int | None = None
) -> Peeked:
    """Decode enough of a queue body to say what it is about; undecodable bodies say why instead."""
    left = None if max_receives is None else max(0, max_receives - receives)
    try:
        envelope = decode_sns_message(body)
    except EnvelopeError as exc:
        return Peeked(message_id, queue, receives, group, "?", "?", None, None, str(exc), left)
    data = envelope.body
    work_order = data.get("work_order")
    order = work_order if isinstance(work_order, dict) else {}
    update = data.get("status_update")  # a status-note update names its MR by `target`
    target = update.get("target") if isinstance(update, dict) else None
    project = _get(data, "project", "path_with_namespace") or order.get("project")
    mr = _get(data, "merge_request", "iid") or order.get("mr_iid") or (target or {}).get("iid")
    if mr is None and envelope.event_type == "merge_request":
        mr = _get(data, "object_attributes", "iid")
    return Peeked(
        message_id, queue, receives, group, envelope.source, envelope.event_type,
        project if isinstance(project, str) else None, mr if isinstance(mr, int) else None, None, left,
    )


def _get(data: dict[str, Any], outer: str, inner: str) -> Any:
    value = data.get(outer)
    return value.get(inner) if isinstance(value, dict) else None


async def peek_by_receiving(queue: Queue, name: str, limit: int, max_receives: int | None = None) -> list[Peeked]:
    """Peek where the backend has no read-only look (SQS): receive, then make visible again at once.
    Each peeked message's receive count goes up by one (`max_receives`: the queue's maxReceiveCount)."""
    seen: dict[str, ReceivedMessage] = {}
    try:
        while len(seen) < limit:
            batch = await queue.receive(min(budgets.QUEUE_BATCH_MAX, limit - len(seen)), 1, budgets.ADMIN_HOLD_S)
            fresh = [m for m in batch if m.message_id not in seen]
            if not fresh:
                break
            seen.update((m.message_id, m) for m in fresh)
    finally:
        await _release(queue, list(seen.values()))
    return [summarize(name, m.message_id, m.body, m.group_id, m.receive_count, max_receives) for m in seen.values()]


def peek_warnings(queue: str, peek: Peek) -> list[str]:
    """What a peek did to the queue that the operator must hear of: messages it dead-lettered, and messages it
    left without a receive (the worker's next receive dead-letters them unhandled)."""
    out = []
    if peek.dead_lettered:
        out.append(f"warning: {queue}-dlq gained {peek.dead_lettered} messages during the peek (a receive past "
                   f"maxReceiveCount moves a message there); redrive them with `queue redrive`")
    if spent := [p.message_id for p in peek.rows if p.receives_left == 0]:
        out.append(f"warning: {len(spent)} peeked messages have no receive left: the next receive moves them to "
                   f"{queue}-dlq unhandled; redrive them from there: {', '.join(spent)}")
    return out


@dataclass(frozen=True, slots=True)
class Copied:
    """What redrive_by_copy did: sent and deleted, not sent (left in the DLQ), sent but not deleted (still in
    the DLQ too), and the requested ids the DLQ did not hold."""

    moved: int
    unsent: int
    undeleted: int
    not_found: frozenset[str]


def redrive_dedup_id(message: ReceivedMessage) -> str:
    """The deduplication id of a redriven copy: never the original one (FIFO deduplication would drop the copy
    of a message dead-lettered within five minutes of its first send), and stable while the message waits in
    the DLQ, so a redrive interrupted between send and delete and run again within five minutes adds no
    second copy. The DLQ SequenceNumber makes it new for every dead-lettering, even of a message whose MessageId
    has not changed (dead-lettering keeps the MessageId)."""
    key = f"redrive-{message.message_id}" + (f"-{message.sequence}" if message.sequence else "")
    return key if valid_queue_id(key) else "redrive-" + hashlib.sha256(key.encode()).hexdigest()


async def redrive_by_copy(dead: Queue, source: Queue, ids: frozenset[str]) -> Copied:
    """Move messages by receive, send (a new message: fresh receive count, redrive_dedup_id), then delete;
    never delete what was not sent. Messages not moved stay hidden until the end, so each is looked at once."""
    moved = undeleted = 0
    held: list[ReceivedMessage] = []
    failed: list[ReceivedMessage] = []
    seen: set[str] = set()
    try:
        while not ids or moved + undeleted + len(failed) < len(ids):
            batch = await dead.receive(budgets.QUEUE_BATCH_MAX, 1, budgets.ADMIN_HOLD_S)
            if not batch:
                break
            chosen = [m for m in batch if not ids or m.message_id in ids]
            seen.update(m.message_id for m in chosen)
            held += [m for m in batch if m not in chosen]
            if chosen:
                ok, not_deleted, not_sent = await _move(dead, source, chosen)
                moved, undeleted, failed = moved + ok, undeleted + not_deleted, failed + not_sent
    finally:
        await _release(dead, held + failed)
    return Copied(moved, len(failed), undeleted, ids - seen)


async def _move(dead: Queue, source: Queue, batch: Sequence[ReceivedMessage]) -> tuple[int, int, list[ReceivedMessage]]:
    """(sent and deleted, sent but not deleted, not sent) of one batch."""
    outgoing = [OutgoingMessage(m.body, m.group_id, redrive_dedup_id(m)) for m in batch]
    sent = await source.send_batch(outgoing)
    deleted = len(sent.ok)
    if sent.ok:
        deleted = len((await dead.delete_batch([batch[i].receipt for i in sent.ok])).ok)
    return deleted, len(sent.ok) - deleted, [batch[i] for i, _ in sent.failed]


async def _release(queue: Queue, messages: Sequence[ReceivedMessage]) -> None:
    for start in range(0, len(messages), budgets.QUEUE_BATCH_MAX):
        chunk = messages[start : start + budgets.QUEUE_BATCH_MAX]
        await queue.change_visibility_batch([m.receipt for m in chunk], 0)


def render_stats(rows: Sequence[QueueStats]) -> str:
    lines = [f"{'queue':<12} {'depth':>7} {'in flight':>10} {'delayed':>8} {'oldest':>10}  where"]
    for r in rows:
        age = "-" if r.oldest_age_s is None else _age(r.oldest_age_s)
        lines.append(f"{r.name:<12} {r.depth:>7} {r.in_flight:>10} {r.delayed:>8} {age:>10}  {r.where}")
    return "\n".join(lines)


def render_peek(rows: Sequence[Peeked]) -> str:
    if not rows:  # embedded peeks see messages in flight too, an SQS peek (a receive) does not
        return "no messages seen"
    lines = []
    for p in rows:
        what = f"{p.source}/{p.kind}" + (f" {p.project}" if p.project else "") + (f" !{p.mr}" if p.mr else "")
        if p.problem:
            what = f"undecodable: {p.problem}"
        left = "" if p.receives_left is None else f" ({p.receives_left} left)"
        lines.append(f"{p.message_id}  {p.queue}  receives={p.receive_count}{left}  group={p.group or '-'}  {what}")
    return "\n".join(lines)


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"

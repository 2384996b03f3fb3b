"""Operator tools on SQS. Dead-letter queues are found through each source queue's RedrivePolicy.
Redrive receives, sends, then deletes each message (events.admin.redrive_by_copy), never StartMessageMoveTask:
a move task re-sends with the original deduplication id, which a FIFO queue drops within five minutes of
the first send, keeps receive counts, and reports success before anything has moved."""

from __future__ import annotations

import json

from hummingbird_agent.errors import AgentError, ConfigError
from hummingbird_agent.events.admin import Peek, QueueStats, Redriven, peek_by_receiving, redrive_by_copy
from hummingbird_agent.events.sqs import SqsClient, SqsQueue

_COUNTS = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
           "ApproximateNumberOfMessagesDelayed", "RedrivePolicy"]
_MISSING = ("NonExistentQueue", "QueueDoesNotExist")


class SqsAdmin:
    """QueueAdmin over the configured SQS queues (`urls`: ingress and/or work)."""

    def __init__(self, client: SqsClient, urls: dict[str, str]) -> None:
        self._client = client
        self._urls = urls
        self._queues: dict[str, tuple[SqsQueue, dict[str, str]]] = {}

    async def _resolve(self) -> dict[str, tuple[SqsQueue, dict[str, str]]]:
        """Each configured queue and its dead-letter queue (when it has one), with their attributes."""
        if self._queues:
            return self._queues
        for name, url in self._urls.items():
            queue = self._client.queue(url)
            attrs = await _attributes(queue)
            self._queues[name] = (queue, attrs)
            policy = json.loads(attrs.get("RedrivePolicy") or "{}")
            target = str(policy.get("deadLetterTargetArn", ""))
            if target:
                dead = self._client.queue(await queue.url_of(target.rsplit(":", 1)[-1]))
                self._queues[f"{name}-dlq"] = (dead, await _attributes(dead))
        return self._queues

    async def _get(self, name: str) -> tuple[SqsQueue, dict[str, str]]:
        queues = await self._resolve()
        if name not in queues:
            source = name.removesuffix("-dlq")
            why = (f"queues.{source}_url is not set" if source not in self._urls
                   else f"{self._urls[source]} has no RedrivePolicy")
            raise ConfigError(f"no SQS queue {name!r}: {why}")
        return queues[name]

    async def stats(self) -> list[QueueStats]:
        out = []
        for name, (queue, _) in (await self._resolve()).items():
            attrs = await _attributes(queue)  # fresh counts, not the ones cached at resolve time
            out.append(QueueStats(
                name, queue.url, int(attrs.get("ApproximateNumberOfMessages", 0)),
                int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0)),
                int(attrs.get("ApproximateNumberOfMessagesDelayed", 0)), None,
            ))
        return out

    async def peek(self, queue: str, limit: int, force: bool = False) -> Peek:
        target, attrs = await self._get(queue)
        max_receives = json.loads(attrs.get("RedrivePolicy") or "{}").get("maxReceiveCount")
        if max_receives is None:
            return Peek(tuple(await peek_by_receiving(target, queue, limit)))
        if not force:
            # A peek is a receive: repeated, it spends the receives a worker needs and dead-letters events.
            raise ConfigError(f"a peek of {queue} on SQS is a receive and counts toward its maxReceiveCount "
                              f"({max_receives}): pass --force to peek anyway")
        dead, _ = await self._get(f"{queue}-dlq")
        before = await _dead_count(dead)
        rows = await peek_by_receiving(target, queue, limit, int(max_receives))
        return Peek(tuple(rows), max(0, await _dead_count(dead) - before))

    async def redrive(self, source: str, ids: frozenset[str]) -> Redriven:
        dead, _ = await self._get(f"{source}-dlq")
        target, _ = await self._get(source)
        done = await redrive_by_copy(dead, target, ids)
        unsent = f"; {done.unsent} could not be sent and stay in {dead.name}" if done.unsent else ""
        undeleted = (f"; {done.undeleted} were sent but could not be deleted from {dead.name} (a repeat within five "
                     "minutes sends no second copy)" if done.undeleted else "")
        return Redriven(f"moved {done.moved} messages from {dead.name} to {target.name}{unsent}{undeleted}",
                        done.not_found)

    async def purge(self, queue: str) -> int | None:
        target, _ = await self._get(queue)
        await target.purge()
        return None


async def _dead_count(dead: SqsQueue) -> int:
    attrs = await dead.attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    return int(attrs.get("ApproximateNumberOfMessages", 0)) + int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0))


async def _attributes(queue: SqsQueue) -> dict[str, str]:
    try:
        return await queue.attributes(_COUNTS)
    except AgentError as exc:
        if any(code in str(exc) for code in _MISSING):
            raise ConfigError(f"SQS queue {queue.url} does not exist") from None
        raise

"""Ingress router: standard (ingress) queue -> FIFO work queue, choosing each message's group.

Forwards the raw body; deletes from ingress only after the FIFO send succeeded, so a failed send is
retried through the ingress visibility timeout. The FIFO dedup id is the notification's own id (the SNS
MessageId in the envelope), not the ingress MessageId that every delivery gets anew: it absorbs the duplicate
a crash between send and delete would cause and a notification SNS or SQS delivers twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError, EnvelopeError
from hummingbird_agent.events.aio import sleep_unless_stopped, until_stopped
from hummingbird_agent.events.envelope import decode_sns_message, group_for, notification_id
from hummingbird_agent.events.protocols import OutgoingMessage, Queue, ReceivedMessage

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class RouterStats:
    forwarded: int = 0
    undecodable: int = 0
    send_failures: int = 0


async def router_loop(
    ingress: Queue,
    work: Queue,
    stop: asyncio.Event,
    *,
    wait_s: float = budgets.LONG_POLL_WAIT_S,
    visibility_timeout_s: int = budgets.VISIBILITY_TIMEOUT_S,
    stats: RouterStats | None = None,
) -> RouterStats:
    """Route until `stop` is set (counting into `stats`, when given). Never raises for a bad message or
    a queue outage."""
    stats = stats if stats is not None else RouterStats()
    logger.info("router started: %s -> %s", ingress.name, work.name)
    while not stop.is_set():
        try:
            stopped, messages = await until_stopped(
                ingress.receive(budgets.QUEUE_BATCH_MAX, wait_s, visibility_timeout_s), stop
            )
            if stopped or not messages:
                continue
            await route_batch(ingress, work, messages, stats)
        except AgentError as exc:
            # Outages are logged once where the queue is watched (events.watch); here every retry.
            logger.debug("router: %s; retrying in %.1f s", exc, budgets.TRANSPORT_ERROR_BACKOFF_S)
            await sleep_unless_stopped(budgets.TRANSPORT_ERROR_BACKOFF_S, stop)
        except Exception:  # the loop's boundary: a bug here must not stop routing for everyone
            logger.exception("router: unexpected error; retrying in %.1f s", budgets.TRANSPORT_ERROR_BACKOFF_S)
            await sleep_unless_stopped(budgets.TRANSPORT_ERROR_BACKOFF_S, stop)
    logger.info("router stopped: forwarded=%d undecodable=%d", stats.forwarded, stats.undecodable)
    return stats


async def route_batch(ingress: Queue, work: Queue, messages: Sequence[ReceivedMessage], stats: RouterStats) -> None:
    """Forward one received batch; raises AgentError when the send or delete call itself failed."""
    outgoing: list[OutgoingMessage] = []
    sources: list[ReceivedMessage] = []
    for message in messages:
        try:
            envelope = decode_sns_message(message.body)
        except EnvelopeError as exc:
            stats.undecodable += 1
            logger.warning(
                "router: undecodable message %s (receive %d) left for the dead-letter policy: %s",
                message.message_id,
                message.receive_count,
                exc,
            )
            continue
        notification = notification_id(envelope, message.body)
        outgoing.append(OutgoingMessage(message.body, group_for(envelope, notification), notification))
        sources.append(message)
    if not outgoing:
        return
    sent = await work.send_batch(outgoing)
    for index, reason in sent.failed:
        stats.send_failures += 1
        logger.warning("router: send of %s failed, left on ingress: %s", sources[index].message_id, reason)
    if not sent.ok:
        return
    deleted = await ingress.delete_batch([sources[i].receipt for i in sent.ok])
    stats.forwarded += len(sent.ok)
    for index, reason in deleted.failed:
        # The FIFO dedup id absorbs the redelivery this causes.
        logger.warning("router: delete of %s from ingress failed: %s", sources[sent.ok[index]].message_id, reason)

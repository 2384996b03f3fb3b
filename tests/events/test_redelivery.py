"""A notification delivered twice is handled once: the router keys the FIFO deduplication id and group on
the notification (the SNS MessageId, or the webhook delivery key), not on each delivery's ingress MessageId."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from aiohttp import ClientSession

from hummingbird_agent.events import EmbeddedStore, OutgoingMessage, WorkerSettings
from hummingbird_agent.events.edge import EdgeLimits, HttpEdge
from hummingbird_agent.events.embedded_admin import EmbeddedAdmin
from hummingbird_agent.events.webhook import DedupLedger, WebhookIngress, build_app
from tests.events.support import Recorder, SqsSetup, running_loops, wait_for
from tests.servers.samples import load

FAST = WorkerSettings(max_concurrent=8, visibility_timeout_s=30, heartbeat_interval_s=5, wait_s=1, shutdown_grace_s=5)
SECRET = "s3cret-token-value"


async def test_an_sns_notification_delivered_twice_is_one_work_message(pipeline: Any, sqs: SqsSetup) -> None:
    topic, ingress, work = pipeline
    topic.publish(load("gitlab/webhooks_docs/pipeline_event.json"), "pipeline")
    topic.publish(load("gitlab/webhooks_docs/merge_request_event.json"), "merge_request")
    # SNS and SQS deliver at least once: the second delivery is the same envelope under a new SQS MessageId.
    delivered: list[Any] = []
    deadline = time.monotonic() + 60
    while len(delivered) < 2:
        assert time.monotonic() < deadline, "SNS did not deliver both notifications"
        delivered += await ingress.receive(10, 1, 30)
    await ingress.send_batch([OutgoingMessage(m.body) for m in delivered])
    await ingress.change_visibility_batch([m.receipt for m in delivered], 0)
    recorder = Recorder()
    async with running_loops(ingress, work, recorder, FAST):
        await wait_for(lambda: len(recorder.events) >= 2, 60, "both notifications")
        # Every delivery routed and every work message handled before the events are counted.
        await wait_for(lambda: sqs.depth(ingress.url) + sqs.depth(work.url) == 0, 60, "queues drained")
    assert sorted(e.event_type for e in recorder.events) == ["merge_request", "pipeline"]
    assert len({e.group_id for e in recorder.events}) == 2


async def test_a_webhook_repeated_at_another_replica_is_one_work_message(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "queue.sqlite")
    store.open()
    ingress, work = store.queue("ingress", fifo=False), store.queue("work", fifo=True)
    body = load("gitlab/webhooks_docs/pipeline_event.json")
    headers = {"X-Gitlab-Token": SECRET, "X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Event-UUID": "ev-1"}
    for _ in range(2):  # two replicas: each remembers only its own deliveries
        webhook = WebhookIngress(ingress, SECRET, 1 << 20, DedupLedger(3600, 1000))
        edge = HttpEdge(build_app([ingress], webhook, "/webhook"), EdgeLimits())
        await edge.start("127.0.0.1", 0)
        async with ClientSession(edge.url) as http, http.post("/webhook", json=body, headers=headers) as resp:
            assert resp.status == 202
        await edge.aclose()
    recorder = Recorder()
    async with running_loops(ingress, work, recorder, FAST):
        await wait_for(lambda: len(recorder.events) >= 1, 60, "the event")
        await _until_empty(EmbeddedAdmin(store))
    assert [e.event_type for e in recorder.events] == ["pipeline"]
    store.close()


async def _until_empty(admin: EmbeddedAdmin, timeout_s: float = 60.0) -> None:
    """Until every delivery is routed and every work message handled."""
    deadline = time.monotonic() + timeout_s
    while sum(q.depth + q.in_flight for q in await admin.stats()):
        assert time.monotonic() < deadline, "queues not drained"
        await asyncio.sleep(0.05)

"""Helpers of the event-transport tests: webhook samples, SQS queue set-up (moto or LocalStack), a recording
handler."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession

from hummingbird_agent.events import Event, WorkerSettings, poll_loop, router_loop
from hummingbird_agent.events.protocols import Continuations, Queue
from hummingbird_agent.events.sqs import SqsClient
from tests.servers import AwsServer
from tests.servers.samples import SAMPLES_DIR

# The fixture of each SQS `backend` parameter (tests/events/conftest.py), test credentials in the env.
AWS_FIXTURES = {"sqs-moto": "moto_server", "sqs-localstack": "localstack_server"}
WEBHOOK_DIRS = ("gitlab/webhooks_docs", "gitlab/webhooks_gogitlab", "gitlab/webhooks_captured")


def webhook_samples() -> list[tuple[str, dict[str, Any]]]:
    """(name, body) of every webhook body sample; captured deliveries carry {headers, body}."""
    out = []
    for folder in WEBHOOK_DIRS:
        for path in sorted((SAMPLES_DIR / folder).glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            body = data.get("body") if "headers" in data and "body" in data else data
            if isinstance(body, dict) and "object_kind" in body:
                out.append((f"{folder}/{path.name}", body))
    return out


@dataclass
class SqsSetup:
    """Queues on an AWS backend plus the aiobotocore client that reaches them. Queue names get a prefix of
    their own (`name()`): LocalStack is shared by every test and cannot be reset."""

    aws: AwsServer
    client: SqsClient
    boto: Any
    prefix: str = field(default_factory=lambda: "t" + uuid.uuid4().hex[:10] + "-")

    def name(self, name: str) -> str:
        return self.prefix + name

    def create(self, name: str, *, fifo: bool, visibility_s: int = 30, max_receives: int = 0) -> str:
        attrs = {"VisibilityTimeout": str(visibility_s)}
        suffix = ".fifo" if fifo else ""
        name = self.name(name)
        if fifo:
            attrs["FifoQueue"] = "true"
        if max_receives:
            dlq = self.boto.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=dict(attrs))["QueueUrl"]
            arn = self.boto.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            attrs["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": max_receives})
        return str(self.boto.create_queue(QueueName=f"{name}{suffix}", Attributes=attrs)["QueueUrl"])

    def depth(self, url: str) -> int:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attrs = self.boto.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        return sum(int(attrs[n]) for n in names)


class Topic:
    """An SNS topic subscribed by a standard SQS queue (raw delivery off, as in production)."""

    def __init__(self, sqs: SqsSetup, ingress_url: str) -> None:
        self.sns = sqs.aws.client("sns")
        self.arn = self.sns.create_topic(Name=sqs.name("gitlab-events"))["TopicArn"]
        queue_arn = sqs.boto.get_queue_attributes(QueueUrl=ingress_url, AttributeNames=["QueueArn"])["Attributes"]
        self.sns.subscribe(TopicArn=self.arn, Protocol="sqs", Endpoint=queue_arn["QueueArn"])

    def publish(self, body: dict[str, Any], event_type: str, compressed: bool = True) -> None:
        message = gzip_base64(body) if compressed else json.dumps(body)
        self.sns.publish(TopicArn=self.arn, Message=message, MessageAttributes=sns_attributes(event_type, compressed))

    def close(self) -> None:
        self.sns.close()


@dataclass
class Recorder:
    """A handler that records events, tracks concurrency per group and can sleep or enqueue."""

    delay_s: float = 0.0
    events: list[Event] = field(default_factory=list)
    running: dict[str, int] = field(default_factory=dict)
    max_running: dict[str, int] = field(default_factory=dict)
    max_total: int = 0
    continue_to: str | None = None

    async def __call__(self, event: Event, continuations: Continuations) -> None:
        key = event.group_id or event.message_id
        self.running[key] = self.running.get(key, 0) + 1
        self.max_running[key] = max(self.max_running.get(key, 0), self.running[key])
        self.max_total = max(self.max_total, sum(self.running.values()))
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            # Recorded before enqueueing: the continuation may be received and handled before the send returns.
            self.events.append(event)
            if self.continue_to and event.source != "agent":
                await continuations.enqueue(self.continue_to, {"parent": event.message_id, "kind": event.event_type})
        finally:
            self.running[key] -= 1


async def wait_for(predicate: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running_loops(
    ingress: Queue | None, work: Queue, handler: Any, settings: WorkerSettings, ingress_visibility_s: int = 30
) -> AsyncIterator[list[asyncio.Task[Any]]]:
    """Router (when `ingress` is given) and worker as tasks; stopped and awaited on exit."""
    stop = asyncio.Event()
    tasks: list[asyncio.Task[Any]] = [asyncio.create_task(poll_loop(work, handler, stop, settings))]
    if ingress is not None:
        router = router_loop(ingress, work, stop, wait_s=1, visibility_timeout_s=ingress_visibility_s)
        tasks.append(asyncio.create_task(router))
    try:
        yield tasks
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)


def gzip_base64(body: dict[str, Any]) -> str:
    """The gitlab-event-forwarder's Message encoding."""
    return base64.b64encode(gzip.compress(json.dumps(body).encode())).decode()


def sns_attributes(event_type: str, compressed: bool) -> dict[str, Any]:
    attrs = {
        "source": {"DataType": "String", "StringValue": "gitlab"},
        "event_type": {"DataType": "String", "StringValue": event_type},
    }
    if compressed:
        attrs["content_encoding"] = {"DataType": "String", "StringValue": "gzip+base64"}
    return attrs


READY_LINE = re.compile(r"listening on (http://[\d.]+:\d+)")


@contextlib.asynccontextmanager
async def http_of_service(
    task: asyncio.Task[int], stop: asyncio.Event, log_text: Callable[[], str], timeout_s: float = 60.0
) -> AsyncIterator[ClientSession]:
    """An HTTP client for a service task once it logs "listening on"; the service stops (exit 0) on leaving."""
    await wait_for(lambda: READY_LINE.search(log_text()) or task.done(), timeout_s, "serve ready")
    found = READY_LINE.search(log_text())
    assert found, log_text()
    try:
        async with ClientSession(found.group(1)) as http:
            yield http
    finally:
        stop.set()
        assert await asyncio.wait_for(task, timeout_s) == 0

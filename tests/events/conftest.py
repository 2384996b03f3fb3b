"""Fixtures of the event-transport tests: an embedded store per test and FIFO queues on either
backend (embedded SQLite, or SQS on moto and on LocalStack)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.events import EmbeddedStore
from hummingbird_agent.events.protocols import Queue
from hummingbird_agent.events.sqs import SqsClient
from tests.events.support import AWS_FIXTURES, SqsSetup, Topic
from tests.servers import AwsServer


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "queue.sqlite")
    s.open()
    yield s
    s.close()


@pytest.fixture
async def sqs(aws_server: AwsServer) -> AsyncIterator[SqsSetup]:
    """Queues on each AWS backend in turn (the test runs once per backend)."""
    client = SqsClient(aws_server.region, aws_server.endpoint)
    await client.start()
    boto = aws_server.client("sqs")
    yield SqsSetup(aws_server, client, boto)
    boto.close()
    await client.aclose()


@pytest.fixture
def pipeline(sqs: SqsSetup) -> Iterator[tuple[Topic, Queue, Queue]]:
    """An SNS topic feeding a standard ingress queue (raw delivery off), and a FIFO work queue."""
    ingress_url = sqs.create("ingress", fifo=False, visibility_s=1)
    work_url = sqs.create("work", fifo=True)
    topic = Topic(sqs, ingress_url)
    yield topic, sqs.client.queue(ingress_url), sqs.client.queue(work_url)
    topic.close()


@pytest.fixture(params=["embedded", "sqs-moto", "sqs-localstack"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_fifo(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """A factory of FIFO queues (with a dead-letter queue when max_receives > 0) on the chosen backend;
    returns (queue, dead_letter_queue_or_None)."""
    if backend == "embedded":
        s = EmbeddedStore(tmp_path / "conformance.sqlite")
        s.open()

        def embedded(max_receives: int = 0) -> tuple[Queue, Queue | None]:
            name = uuid.uuid4().hex[:8]
            dlq = s.queue(f"{name}-dlq", fifo=True) if max_receives else None
            queue = s.queue(name, fifo=True, dead_letter=f"{name}-dlq", max_receives=max_receives)
            return queue, dlq

        yield embedded
        s.close()
        return
    aws: AwsServer = request.getfixturevalue(AWS_FIXTURES[backend])
    client = SqsClient(aws.region, aws.endpoint)
    await client.start()
    setup = SqsSetup(aws, client, aws.client("sqs"))

    def on_sqs(max_receives: int = 0) -> tuple[Queue, Queue | None]:
        url = setup.create(uuid.uuid4().hex[:8], fifo=True, max_receives=max_receives)
        dlq = setup.client.queue(url.replace(".fifo", "-dlq.fifo")) if max_receives else None
        return setup.client.queue(url), dlq

    yield on_sqs
    setup.boto.close()
    await client.aclose()

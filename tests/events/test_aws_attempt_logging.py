"""Every failed SQS attempt is logged at WARNING with the status or connection error, the path without
its query and the attempt number (moto for answers, a closed port for connection failures)."""

from __future__ import annotations

import logging
import socket

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.errors import TransientError
from hummingbird_agent.events.sqs import SqsClient
from tests.events.support import SqsSetup


async def test_a_refused_call_is_logged_with_status_and_attempt(
    sqs: SqsSetup, caplog: pytest.LogCaptureFixture
) -> None:
    url = sqs.create("gone", fifo=False)
    sqs.boto.delete_queue(QueueUrl=url)
    with pytest.raises(TransientError, match="NonExistentQueue"):
        await sqs.client.queue(url).ping()
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert line.startswith("SQS GetQueueAttributes failed: status 400, path /, attempt 1")


async def test_connection_failures_are_logged_per_attempt(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = SqsClient("us-east-1", f"http://127.0.0.1:{port}")
    await client.start()
    try:
        with pytest.raises(TransientError, match="EndpointConnectionError"):
            await client.queue(f"http://127.0.0.1:{port}/123456789012/q?secret=x").ping()
    finally:
        await client.aclose()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == budgets.AWS_MAX_ATTEMPTS and all("EndpointConnectionError, path /" in x for x in lines)
    assert [int(x.rsplit(" ", 1)[1]) for x in lines] == list(range(1, len(lines) + 1))
    assert not any("secret" in x for x in lines)

"""The HTTP edge's connection handling in-process: slow request heads are closed, the connection cap
evicts idle connections so probes still get in, repeated trouble is logged once per interval."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from aiohttp import ClientSession, ClientTimeout

from hummingbird_agent.events import EmbeddedStore
from hummingbird_agent.events.edge import EdgeLimits, HttpEdge, RateLimitedLog
from hummingbird_agent.events.webhook import build_app

HALF_HEAD = b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-Gitlab-Tok"


@pytest.fixture
async def small_edge(store: EmbeddedStore) -> AsyncIterator[HttpEdge]:
    edge = HttpEdge(build_app([store.queue("ingress", fifo=False)], None, "/webhook"),
                    EdgeLimits(max_connections=4, header_timeout_s=0.5))
    await edge.start("127.0.0.1", 0)
    yield edge
    await edge.aclose()


async def _half_open(edge: HttpEdge) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = edge.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(HALF_HEAD)
    await writer.drain()
    return reader, writer


async def test_a_slow_request_head_is_closed(small_edge: HttpEdge) -> None:
    reader, writer = await _half_open(small_edge)
    # The server closes it after its 0.5 s header timeout; 30 s only bounds a failing test.
    assert await asyncio.wait_for(reader.read(), 30) == b""
    writer.close()


async def test_at_the_cap_idle_connections_are_evicted_and_probes_get_in(small_edge: HttpEdge) -> None:
    clients = [await _half_open(small_edge) for _ in range(12)]
    async with ClientSession(timeout=ClientTimeout(total=30)) as http:
        for _ in range(3):
            async with http.get(small_edge.url + "/healthz") as resp:
                assert resp.status == 200
    assert small_edge.guard.open_connections <= 4
    # The oldest half-open connections were closed by the server.
    assert await asyncio.wait_for(clients[0][0].read(), 30) == b""
    for _, writer in clients:
        writer.close()


def test_repeated_events_make_one_line_per_interval_with_the_count(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    log = RateLimitedLog("edge trouble", 60, clock=lambda: now[0])
    caplog.set_level(logging.WARNING)
    for _ in range(500):
        log.hit("[Errno 24] Too many open files")
    now[0] += 61
    log.hit("[Errno 24] Too many open files")
    log.flush()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "edge trouble: 1 since the previous line (last: [Errno 24] Too many open files)",
        "edge trouble: 500 since the previous line (last: [Errno 24] Too many open files)",
    ]

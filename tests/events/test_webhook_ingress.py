"""Webhook ingress over real HTTP: token check, dedup, size and format rejections, fast 2xx, probes."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import logging
import time
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import ClientSession

from hummingbird_agent.events import EmbeddedStore, decode_sns_message
from hummingbird_agent.events.edge import EdgeLimits, HttpEdge
from hummingbird_agent.events.webhook import (
    DedupLedger,
    WebhookIngress,
    build_app,
    delivery_key,
    event_type_of,
    json_nesting_exceeds,
)
from tests.servers.samples import load

SECRET = "s3cret-token-value"
LIMIT = 1024 * 1024  # the default webhook.max_body_bytes: a 100,000-deep body fits it


@pytest.fixture
async def hook(store: EmbeddedStore) -> AsyncIterator[Any]:
    ingress = store.queue("ingress", fifo=False)
    webhook = WebhookIngress(ingress, SECRET, LIMIT, DedupLedger(3600, 1000), body_timeout_s=0.5)
    edge = HttpEdge(build_app([ingress], webhook, "/webhook"), EdgeLimits())
    await edge.start("127.0.0.1", 0)
    async with ClientSession(edge.url) as http:
        yield http, ingress
    await edge.aclose()


def _headers(**extra: str) -> dict[str, str]:
    return {"X-Gitlab-Token": SECRET, "X-Gitlab-Event": "Pipeline Hook", "Content-Type": "application/json"} | extra


async def test_accepts_and_queues_the_envelope_fast(hook: Any) -> None:
    http, ingress = hook
    body = load("gitlab/webhooks_docs/pipeline_event.json")
    start = time.monotonic()
    async with http.post("/webhook", json=body, headers=_headers(**{"Idempotency-Key": "k1"})) as resp:
        assert resp.status == 202 and (await resp.json())["event_type"] == "pipeline"
    assert time.monotonic() - start < 0.5
    [message] = await ingress.receive(10, 0, 30)
    envelope = decode_sns_message(message.body)
    assert (envelope.source, envelope.event_type, envelope.body) == ("gitlab", "pipeline", body)


@pytest.mark.parametrize("token", [None, "", "wrong", SECRET + "x"])
async def test_wrong_or_missing_token_is_401(hook: Any, token: str | None) -> None:
    http, ingress = hook
    headers = _headers()
    if token is None:
        del headers["X-Gitlab-Token"]
    else:
        headers["X-Gitlab-Token"] = token
    async with http.post("/webhook", data=b"{}", headers=headers) as resp:
        assert resp.status == 401 and "X-Gitlab-Token" in (await resp.json())["reason"]
    assert await ingress.receive(10, 0, 30) == []


async def test_no_configured_secret_refuses_everything(store: EmbeddedStore) -> None:
    ingress = store.queue("ingress", fifo=False)
    webhook = WebhookIngress(ingress, None, LIMIT, DedupLedger(3600, 10))
    edge = HttpEdge(build_app([ingress], webhook, "/webhook"), EdgeLimits())
    await edge.start("127.0.0.1", 0)
    try:
        async with ClientSession() as http, http.post(edge.url + "/webhook", data=b"{}", headers=_headers()) as r:
            assert r.status == 401 and "not configured" in (await r.json())["reason"]
    finally:
        await edge.aclose()


@pytest.mark.parametrize("header", ["Idempotency-Key", "X-Gitlab-Event-UUID"])
async def test_redelivery_with_the_same_key_is_queued_once(hook: Any, header: str) -> None:
    http, ingress = hook
    body = load("gitlab/webhooks_gogitlab/merge_request.json")
    statuses = []
    for _ in range(3):
        async with http.post("/webhook", json=body, headers=_headers(**{header: "same-key"})) as resp:
            statuses.append((resp.status, (await resp.json())["status"]))
    assert statuses == [(202, "queued"), (200, "duplicate"), (200, "duplicate")]
    assert len(await ingress.receive(10, 0, 30)) == 1


@pytest.mark.parametrize(
    ("data", "status", "reason"),
    [
        (b"x" * (LIMIT + 1), 413, "exceeds"),
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "not a JSON object"),
        (b"{}", 400, "cannot tell the event type"),
        (b"[" * 100_000 + b"]" * 100_000, 400, "nests deeper than 64 levels"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, 400, "nests deeper than 64 levels"),
    ],
)
async def test_bad_bodies_get_a_4xx_with_the_reason(hook: Any, data: bytes, status: int, reason: str) -> None:
    http, ingress = hook
    headers = _headers()
    if reason == "cannot tell the event type":
        del headers["X-Gitlab-Event"]
    async with http.post("/webhook", data=io.BytesIO(data), headers=headers) as resp:
        assert resp.status == status and reason in (await resp.json())["reason"]
    assert await ingress.receive(10, 0, 30) == []


@pytest.mark.parametrize(("kind", "json_type"), [(5, "number"), (None, "null"), (["glpat-in-body"], "array"),
                                                 ({"k": "glpat-in-body"}, "object"), (True, "boolean")])
@pytest.mark.parametrize("header", [None, "Pipeline Hook"])
async def test_an_object_kind_that_is_not_a_string_is_400_even_beside_a_valid_header(
    hook: Any, kind: Any, json_type: str, header: str | None
) -> None:
    # The body's object_kind comes before the header whenever the body has one, so a malformed one is refused.
    http, ingress = hook
    headers = _headers()
    if header is None:
        del headers["X-Gitlab-Event"]
    async with http.post("/webhook", json={"object_kind": kind, "note": "glpat-in-body"}, headers=headers) as resp:
        answer = await resp.json()
    assert resp.status == 400 and answer == {"status": "rejected",
                                             "reason": f"object_kind is not a string (a JSON {json_type})"}
    assert await ingress.receive(10, 0, 30) == []


@pytest.mark.parametrize("kind", ["push", "build"])
async def test_unhandled_event_types_are_acknowledged_not_queued(hook: Any, kind: str) -> None:
    # 200, not 4xx: GitLab disables a webhook after four failed deliveries, which would cut off MR events too.
    http, ingress = hook
    async with http.post("/webhook", data=io.BytesIO(b'{"object_kind": "%s"}' % kind.encode()),
                         headers=_headers()) as resp:
        answer = await resp.json()
    assert resp.status == 200 and answer["status"] == "ignored"
    assert f"'{kind}' is not handled; handled: merge_request, note, pipeline" in answer["reason"]
    assert await ingress.receive(10, 0, 30) == []


async def test_deep_nesting_is_measured_not_parsed() -> None:
    assert json_nesting_exceeds(b"[" * 65 + b"]" * 65, 64)
    assert not json_nesting_exceeds(b"[" * 64 + b"]" * 64, 64)
    assert not json_nesting_exceeds(b'{"a": "[[[[[[[[[[\\"[[[[[[[["}', 3)  # brackets inside strings do not count


async def test_oversized_chunked_body_without_length_is_413(hook: Any) -> None:
    http, _ = hook

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b" " * (LIMIT // 4)

    async with http.post("/webhook", data=chunks(), headers=_headers()) as resp:
        assert resp.status == 413


async def test_health_and_readiness(hook: Any, store: EmbeddedStore) -> None:
    http, _ = hook
    async with http.get("/healthz") as resp:
        assert resp.status == 200
    async with http.get("/readyz") as resp:
        assert resp.status == 200 and (await resp.json())["status"] == "ready"
    store.close()  # the queue is gone: not ready any more, still alive
    async with http.get("/readyz") as resp:
        assert resp.status == 503 and "not open" in (await resp.json())["reason"]
    async with http.get("/healthz") as resp:
        assert resp.status == 200


def test_event_type_from_body_or_header() -> None:
    assert event_type_of({"object_kind": "note"}, {"X-Gitlab-Event": "Push Hook"}) == "note"
    assert event_type_of({}, {"X-Gitlab-Event": "Merge Request Hook"}) == "merge_request"
    assert event_type_of({}, {"X-Gitlab-Event": "Hook"}) is None
    assert event_type_of({"object_kind": 3}, {}) is None


def test_delivery_key_prefers_idempotency_key_then_event_uuid_then_body_hash() -> None:
    headers = load("gitlab/webhooks_docs/webhook_request_headers_documented_examples.json")
    assert delivery_key(headers, b"{}") == "idempotency-key:" + headers["Idempotency-Key"]
    del headers["Idempotency-Key"]
    assert delivery_key(headers, b"{}") == "x-gitlab-event-uuid:" + headers["X-Gitlab-Event-UUID"]
    assert delivery_key({}, b"{}") == delivery_key({}, b"{}") != delivery_key({}, b"{ }")


def test_ledger_expires_keys_and_stays_bounded() -> None:
    now = [0.0]
    ledger = DedupLedger(10, 3, clock=lambda: now[0])
    assert ledger.claim("a") and not ledger.claim("a")
    now[0] = 11
    assert ledger.claim("a")  # expired after the window
    assert ledger.claim("b") and ledger.claim("c")
    assert ledger.claim("d")  # the bound evicts the oldest key, "a"
    assert not ledger.claim("b") and not ledger.claim("d")
    assert ledger.claim("a")
    ledger.release("a")
    assert ledger.claim("a")


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("hummingbird_agent.events")]


async def test_junk_gzip_is_400_with_one_info_line(hook: Any, caplog: pytest.LogCaptureFixture) -> None:
    http, ingress = hook
    caplog.set_level(logging.DEBUG)
    async with http.post("/webhook", data=b"\x1f\x8b junk", headers=_headers(**{"Content-Encoding": "gzip"})) as resp:
        assert resp.status == 400 and "not valid gzip" in (await resp.json())["reason"]
    [line] = _records(caplog)
    assert line.levelno == logging.INFO and line.exc_info is None and "not valid gzip" in line.getMessage()
    assert "Traceback" not in caplog.text
    assert await ingress.receive(10, 0, 30) == []


async def test_token_is_checked_before_any_decoding(hook: Any, caplog: pytest.LogCaptureFixture) -> None:
    http, _ = hook
    caplog.set_level(logging.DEBUG)
    headers = _headers(**{"Content-Encoding": "gzip", "X-Gitlab-Token": "wrong"})
    async with http.post("/webhook", data=b"\x1f\x8b junk", headers=headers) as resp:
        assert resp.status == 401
    assert _records(caplog) == [] and "Traceback" not in caplog.text


@pytest.mark.parametrize(("encoding", "wbits"), [("gzip", 31), ("deflate", 15)])
async def test_compressed_bodies_are_decoded(hook: Any, encoding: str, wbits: int) -> None:
    http, ingress = hook
    body = load("gitlab/webhooks_docs/pipeline_event.json")
    packer = zlib.compressobj(wbits=wbits)
    data = packer.compress(json.dumps(body).encode()) + packer.flush()
    async with http.post("/webhook", data=data, headers=_headers(**{"Content-Encoding": encoding})) as resp:
        assert resp.status == 202
    [message] = await ingress.receive(10, 0, 30)
    assert decode_sns_message(message.body).body == body


@pytest.mark.parametrize(
    ("data", "encoding", "status", "reason"),
    [
        (gzip.compress(b" " * (LIMIT + 1), mtime=0), "gzip", 413, "decoded body exceeds"),  # a small gzip bomb
        (gzip.compress(b"{}", mtime=0)[:-4], "gzip", 400, "not valid gzip"),  # truncated
        (b"{}", "br", 415, "unsupported Content-Encoding"),
    ],
)
async def test_bad_encodings_are_refused(hook: Any, data: bytes, encoding: str, status: int, reason: str) -> None:
    http, ingress = hook
    headers = _headers(**{"Content-Encoding": encoding})
    async with http.post("/webhook", data=io.BytesIO(data), headers=headers) as resp:
        assert resp.status == status and reason in (await resp.json())["reason"]
    assert await ingress.receive(10, 0, 30) == []


async def test_slow_body_is_408(hook: Any) -> None:
    http, ingress = hook
    headers = _headers(**{"Content-Length": "1000"})
    async with http.post("/webhook", data=_trickle(b"{", 1000), headers=headers) as resp:
        assert resp.status == 408 and "body not received" in (await resp.json())["reason"]
    assert await ingress.receive(10, 0, 30) == []


async def _trickle(first: bytes, pause_s: float) -> AsyncIterator[bytes]:
    yield first
    await asyncio.sleep(pause_s)  # far beyond the fixture's 0.5 s body timeout; the server answers first
    yield b"}"

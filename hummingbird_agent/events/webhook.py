"""HTTP edge (aiohttp): the GitLab webhook endpoint feeding the ingress queue, plus /healthz and /readyz.

It answers fast: checks, wrap, one queue send. Everything else happens behind the queue.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiohttp import web

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError, EnvelopeError
from hummingbird_agent.events.envelope import encode_envelope, inflate
from hummingbird_agent.events.protocols import OutgoingMessage, Queue

logger = logging.getLogger(__name__)


class DedupLedger:
    """Recently accepted delivery keys, expiring after `window_s`, at most `max_keys` of them."""

    def __init__(self, window_s: float, max_keys: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._max_keys = max_keys
        self._clock = clock
        self._keys: OrderedDict[str, float] = OrderedDict()

    def claim(self, key: str) -> bool:
        """True when `key` was not seen within the window (and records it)."""
        now = self._clock()
        while self._keys and next(iter(self._keys.values())) <= now:
            self._keys.popitem(last=False)
        if key in self._keys:
            return False
        while len(self._keys) >= self._max_keys:
            self._keys.popitem(last=False)
        self._keys[key] = now + self._window_s
        return True

    def release(self, key: str) -> None:
        """Forget `key` (its delivery failed, so GitLab's retry must get through)."""
        self._keys.pop(key, None)


def event_type_of(payload: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """GitLab event type: the body's object_kind, else derived from X-Gitlab-Event ("Note Hook" -> "note").
    parse_event refuses an object_kind that is not a string before the header is looked at."""
    kind = payload.get("object_kind")
    if isinstance(kind, str) and kind:
        return kind
    header = headers.get("X-Gitlab-Event", "").strip()
    if header.lower().endswith(" hook") and len(header) > 5:
        return header[:-5].strip().lower().replace(" ", "_")
    return None


def delivery_key(headers: Mapping[str, str], body: bytes) -> str:
    """Dedup key: Idempotency-Key (stable across GitLab retries), else X-Gitlab-Event-UUID, else the body hash."""
    for name in ("Idempotency-Key", "X-Gitlab-Event-UUID"):
        value = headers.get(name, "").strip()
        if value:
            return f"{name.lower()}:{value[:200]}"
    return "sha256:" + hashlib.sha256(body).hexdigest()


def envelope_id(key: str) -> str:
    """The envelope MessageId of a delivery: the same for every repeat of its delivery key, so the router gives a
    repeat this process no longer remembers (a restart, another replica) the same FIFO dedup id and group."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"hummingbird-webhook:{key}"))


# GitLab event types the service acts on (runner.handlers.GITLAB_HANDLERS; a test holds the two equal).
# Any other kind is answered 200 "ignored" and not queued: GitLab disables a webhook after four failed
# deliveries in a row, 4xx included, so refusing a Push event an operator ticked by mistake would cut off
# the merge-request events too.
HANDLED_EVENT_TYPES = ("merge_request", "note", "pipeline")
# Content-Encoding -> zlib wbits (gzip container, zlib container). Decoding happens after the token check.
_ENCODINGS = {"gzip": 31, "x-gzip": 31, "deflate": 15}
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")


class _Ignored(Exception):
    """An authenticated, well-formed delivery of an event type the service does not act on."""


class _Refused(Exception):
    """A request answered with a 4xx: status and a one-line reason for the sender."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def json_nesting_exceeds(body: bytes, max_depth: int) -> bool:
    """True when the JSON text nests arrays/objects deeper than `max_depth` (strings are skipped).

    A linear scan without recursion, so a body nested 100,000 deep is measured, never parsed."""
    depth = 0
    for bracket in _JSON_BRACKET.finditer(_JSON_STRING.sub(b'""', body)):
        if bracket.group() in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def decode_content(raw: bytes, encoding: str, limit: int) -> bytes:
    """The body after its Content-Encoding (identity, gzip, deflate), at most `limit` bytes; else _Refused."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    wbits = _ENCODINGS.get(encoding)
    if wbits is None:
        raise _Refused(415, f"unsupported Content-Encoding {encoding[:40]!r}; use gzip, deflate or none")
    try:
        data = inflate(raw, wbits, limit)
    except EnvelopeError:
        raise _Refused(400, f"body is not valid {encoding} data") from None
    if len(data) > limit:
        raise _Refused(413, f"decoded body exceeds {limit} bytes")
    return data


def parse_event(body: bytes, headers: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    """The JSON object and its handled event type, else _Refused(400) with the reason (_Ignored for a
    well-formed event of a type the service does not act on)."""
    if json_nesting_exceeds(body, budgets.WEBHOOK_MAX_JSON_DEPTH):
        raise _Refused(400, f"body nests deeper than {budgets.WEBHOOK_MAX_JSON_DEPTH} levels")
    try:
        payload = json.loads(body)
    except ValueError:
        raise _Refused(400, "body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise _Refused(400, "body is not a JSON object")
    kind = payload.get("object_kind", "")
    if not isinstance(kind, str):
        # The body's kind comes first whenever it has one (GitLab always sends a string), so a malformed one
        # is a malformed body even beside a valid header. Only its JSON type is named, never its value.
        raise _Refused(400, f"object_kind is not a string (a JSON {_json_type(kind)})")
    event_type = event_type_of(payload, headers)
    if event_type is None:
        raise _Refused(400, "cannot tell the event type: no object_kind and no X-Gitlab-Event header")
    if event_type not in HANDLED_EVENT_TYPES:
        handled = ", ".join(HANDLED_EVENT_TYPES)
        raise _Ignored(f"event type {event_type[:40]!r} is not handled; handled: {handled}")
    return payload, event_type


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "number", float: "number", type(None): "null", list: "array", dict: "object"}
    return names.get(type(value), "value")


async def _read_limited(request: web.Request, limit: int) -> bytes:
    """The raw body; _Refused(413) once it grows past `limit` (chunked uploads have no Content-Length)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(budgets.STREAM_CHUNK_BYTES):
        size += len(chunk)
        if size > limit:
            raise _Refused(413, f"body exceeds {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


def _reject(status: int, reason: str) -> web.Response:
    return web.json_response({"status": "rejected", "reason": reason}, status=status)


class WebhookIngress:
    """The POST handler; holds the ingress queue, the secret and the dedup ledger."""

    def __init__(
        self,
        ingress: Queue,
        secret: str | None,
        max_body_bytes: int,
        ledger: DedupLedger,
        body_timeout_s: float = budgets.WEBHOOK_BODY_TIMEOUT_S,
    ) -> None:
        self._ingress = ingress
        self._secret = secret.encode() if secret else None
        self._max_body_bytes = max_body_bytes
        self._ledger = ledger
        self._body_timeout_s = body_timeout_s

    async def handle(self, request: web.Request) -> web.Response:
        if self._secret is None:
            return _reject(401, "webhook secret is not configured on this server")
        token = request.headers.get("X-Gitlab-Token", "").encode()
        if not hmac.compare_digest(token, self._secret):
            # Not logged: unauthenticated traffic must not be able to fill the log.
            return _reject(401, "missing or wrong X-Gitlab-Token")
        try:
            body = await self._body(request)
            payload, event_type = parse_event(body, request.headers)
        except _Refused as refused:
            logger.info("webhook refused (%d): %s", refused.status, refused.reason)
            return _reject(refused.status, refused.reason)
        except _Ignored as ignored:
            logger.info("webhook ignored: %s", ignored)
            return web.json_response({"status": "ignored", "reason": str(ignored)}, status=200)
        return await self._enqueue(payload, event_type, delivery_key(request.headers, body))

    async def _body(self, request: web.Request) -> bytes:
        """The decoded body of an authenticated request (the token was checked before any byte was read)."""
        limit = self._max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            raise _Refused(413, f"body exceeds {limit} bytes")
        try:
            async with asyncio.timeout(self._body_timeout_s):
                raw = await _read_limited(request, limit)
        except TimeoutError:
            raise _Refused(408, f"body not received within {self._body_timeout_s:g} s") from None
        return decode_content(raw, request.headers.get("Content-Encoding", ""), limit)

    async def _enqueue(self, payload: dict[str, Any], event_type: str, key: str) -> web.Response:
        if not self._ledger.claim(key):
            logger.info("webhook duplicate ignored: %s %s", event_type, key)
            return web.json_response({"status": "duplicate"}, status=200)
        message = OutgoingMessage(encode_envelope("gitlab", event_type, payload, message_id=envelope_id(key)))
        try:
            result = await self._ingress.send_batch([message])
            problem = result.failed[0][1] if result.failed else None
        except AgentError as exc:
            problem = str(exc)
        if problem:
            self._ledger.release(key)
            # The queue's outage is logged once where it is watched (events.watch), not per webhook.
            logger.debug("webhook not queued (GitLab will retry): %s", problem)
            return _reject(503, "queue unavailable, retry later")
        logger.info("webhook queued: %s %s", event_type, key)
        return web.json_response({"status": "queued", "event_type": event_type}, status=202)


def build_app(
    queues: Sequence[Queue],
    ingress: WebhookIngress | None,
    path: str,
    waiting: str | None = None,
    waiting_unready: bool = False,
) -> web.Application:
    """The aiohttp app: /healthz, /readyz (pings `queues`), and the webhook route when `ingress` is given.
    `waiting` says why the worker does not receive; it makes /readyz 503 when `waiting_unready` (a
    worker-only process), else it is reported beside a 200 (the webhook and router still serve)."""

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        for queue in queues:
            try:
                await queue.ping()
            except AgentError as exc:
                return web.json_response({"status": "unready", "reason": str(exc)}, status=503)
        if waiting and waiting_unready:
            return web.json_response({"status": "unready", "reason": waiting}, status=503)
        return web.json_response({"status": "ready"} | ({"worker": waiting} if waiting else {}))

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if ingress is not None:
        app.router.add_post(path, ingress.handle)
    return app

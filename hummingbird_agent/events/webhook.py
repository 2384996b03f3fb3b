"""HTTP edge (aiohttp): the GitLab webhook endpoint feeding the ingress queue, plus /healthz and /readyz.

It answers fast: checks, wrap, one queue send. Everything else happens behind the queue.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiohttp import web

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError
from hummingbird_agent.events.envelope import encode_envelope
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
    """GitLab event type: the body's object_kind, else derived from X-Gitlab-Event ("Note Hook" -> "note")."""
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


async def _read_limited(request: web.Request, limit: int) -> bytes | None:
    """The body, or None once it grows past `limit` (chunked uploads have no Content-Length)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(budgets.STREAM_CHUNK_BYTES):
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


def _reject(status: int, reason: str) -> web.Response:
    return web.json_response({"status": "rejected", "reason": reason}, status=status)


class WebhookIngress:
    """The POST handler; holds the ingress queue, the secret and the dedup ledger."""

    def __init__(self, ingress: Queue, secret: str | None, max_body_bytes: int, ledger: DedupLedger) -> None:
        self._ingress = ingress
        self._secret = secret.encode() if secret else None
        self._max_body_bytes = max_body_bytes
        self._ledger = ledger

    async def handle(self, request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > self._max_body_bytes:
            return _reject(413, f"body exceeds {self._max_body_bytes} bytes")
        if self._secret is None:
            return _reject(401, "webhook secret is not configured on this server")
        token = request.headers.get("X-Gitlab-Token", "").encode()
        if not hmac.compare_digest(token, self._secret):
            return _reject(401, "missing or wrong X-Gitlab-Token")
        body = await _read_limited(request, self._max_body_bytes)
        if body is None:
            return _reject(413, f"body exceeds {self._max_body_bytes} bytes")
        try:
            payload = json.loads(body)
        except ValueError:
            return _reject(400, "body is not valid JSON")
        if not isinstance(payload, dict):
            return _reject(400, "body is not a JSON object")
        event_type = event_type_of(payload, request.headers)
        if event_type is None:
            return _reject(400, "cannot tell the event type: no object_kind and no X-Gitlab-Event header")
        return await self._enqueue(payload, event_type, delivery_key(request.headers, body))

    async def _enqueue(self, payload: dict[str, Any], event_type: str, key: str) -> web.Response:
        if not self._ledger.claim(key):
            logger.info("webhook duplicate ignored: %s %s", event_type, key)
            return web.json_response({"status": "duplicate"}, status=200)
        message = OutgoingMessage(encode_envelope("gitlab", event_type, payload))
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

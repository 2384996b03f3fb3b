"""The HTTP side of metrics: GET /metrics, a middleware counting webhook deliveries by kind and outcome from
the responses the webhook endpoint already gives, and queue depths read into gauges at scrape time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from aiohttp.typedefs import Middleware

from hummingbird_agent.errors import AgentError
from hummingbird_agent.metrics.registry import CONTENT_TYPE, Metrics

log = logging.getLogger(__name__)
# Webhook rejection reasons by HTTP status (a bounded label set, whatever the response text says).
_REJECTIONS = {400: "bad_request", 401: "unauthorized", 408: "timeout", 413: "too_large", 415: "unsupported_encoding",
               503: "queue_unavailable"}
# GitLab event kinds exported as label values; a made-up header or object_kind is "other".
KNOWN_KINDS = frozenset({"pipeline", "merge_request", "note", "push", "tag_push", "issue", "build", "deployment",
                         "release", "wiki_page"})
DepthReader = Callable[[], Awaitable[Mapping[str, int]]]


def add_metrics_route(app: web.Application, metrics: Metrics, depth: Mapping[str, DepthReader]) -> None:
    """GET /metrics: queue depths are read at scrape time (fresh, and no background loop), then everything is
    rendered from this instance's registry."""

    async def scrape(_: web.Request) -> web.Response:
        await read_queue_depth(depth, metrics)
        body = await asyncio.to_thread(metrics.exposition)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get("/metrics", scrape)


def webhook_counter(metrics: Metrics, path: str) -> Middleware:
    """Counts every POST to the webhook path by event kind, outcome and rejection reason."""

    @web.middleware
    async def middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
        response = await handler(request)
        if request.method == "POST" and request.path == path:
            outcome, reason = _outcome(response)
            metrics.events_received.labels(_kind(request, response), outcome, reason).inc()
        return response

    return middleware


def _outcome(response: web.StreamResponse) -> tuple[str, str]:
    if response.status == 202:
        return "queued", ""
    if response.status == 200:  # a repeated delivery, or an event kind the service does not act on
        return ("ignored" if _answer(response).get("status") == "ignored" else "duplicate"), ""
    return "rejected", _REJECTIONS.get(response.status, str(response.status))


def _answer(response: web.StreamResponse) -> dict[str, object]:
    """The webhook's JSON answer (empty when there is none)."""
    if isinstance(response, web.Response) and isinstance(response.body, bytes):  # not a streamed Payload
        with contextlib.suppress(ValueError):
            answer = json.loads(response.body)
            return answer if isinstance(answer, dict) else {}
    return {}


def _kind(request: web.Request, response: web.StreamResponse) -> str:
    kind = str(_answer(response).get("event_type", "")) if response.status == 202 else ""
    if not kind:
        header = request.headers.get("X-Gitlab-Event", "").strip().lower()
        kind = header.removesuffix(" hook").replace(" ", "_")
    return kind if kind in KNOWN_KINDS else "other"


async def read_queue_depth(readers: Mapping[str, DepthReader], metrics: Metrics) -> None:
    """Each queue's depth into the gauges; an unreachable queue keeps its last values (readiness reports it)."""
    for queue, read in readers.items():
        try:
            counts = await read()
        except AgentError as exc:
            log.debug("queue depth unavailable queue=%s error=%s", queue, exc)
            continue
        for state, value in counts.items():
            metrics.queue_messages.labels(queue, state).set(value)

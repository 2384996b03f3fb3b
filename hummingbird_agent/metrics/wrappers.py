"""Recording by composition: a Model, a Sandbox and an event Handler wrapped so that their calls are counted
and timed, without a metric call inside the loop, the sandbox backends or the worker."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Self

from hummingbird_agent.errors import AgentError, PermanentError, RetryLater
from hummingbird_agent.metrics.registry import Metrics
from hummingbird_agent.models.base import Model, ModelRequest, ModelResponse
from hummingbird_agent.sandbox.base import ByteChunks, ExecResult, Sandbox, SandboxState

if TYPE_CHECKING:  # the events package imports this module (serve); annotations only, no import cycle
    from hummingbird_agent.events.protocols import Continuations, Event, Handler

# Event kinds exported as label values; anything else (a hostile or new object_kind) is "other".
KNOWN_EVENTS = frozenset({"gitlab/pipeline", "gitlab/merge_request", "gitlab/note", "agent/continuation"})


class MeteredModel:
    """Counts calls (by outcome: ok or the error class) and tokens of every model call, labelled with the
    provider each model name is configured on (`providers`, else `default_provider`) and the requested name."""

    def __init__(self, inner: Model, providers: Mapping[str, str], default_provider: str, metrics: Metrics) -> None:
        self._inner, self._metrics = inner, metrics
        self._providers, self._default = dict(providers), default_provider

    async def generate(self, request: ModelRequest) -> ModelResponse:
        calls = self._metrics.model_calls
        provider = self._providers.get(request.model, self._default)
        try:
            response = await self._inner.generate(request)
        except AgentError as exc:
            calls.labels(provider, request.model, type(exc).__name__).inc()
            raise
        calls.labels(provider, request.model, "ok").inc()
        for kind, count in zip(("input", "output", "cached"), response.usage.counts(), strict=True):
            self._metrics.model_tokens.labels(provider, request.model, kind).inc(count)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class MeteredSandbox:
    """Counts starts and times commands of one sandbox; everything else is passed through."""

    def __init__(self, inner: Sandbox, metrics: Metrics) -> None:
        self._inner, self._metrics = inner, metrics

    @property
    def state(self) -> SandboxState:
        return self._inner.state

    async def start(self) -> None:
        outcome = "error"
        try:
            await self._inner.start()
            outcome = "ok"
        finally:
            self._metrics.sandbox_starts.labels(outcome).inc()

    async def exec(self, command: str, timeout_s: float) -> ExecResult:
        with self._metrics.sandbox_exec.time():
            return await self._inner.exec(command, timeout_s)

    async def stream_exec(self, command: str, chunks: ByteChunks, *args: float) -> ExecResult:
        with self._metrics.sandbox_exec.time():
            return await self._inner.stream_exec(command, chunks, *args)

    def read_file_iter(self, path: str) -> AsyncIterator[bytes]:
        return self._inner.read_file_iter(path)

    async def write_file(self, path: str, chunks: ByteChunks) -> None:
        await self._inner.write_file(path, chunks)

    def archive(self) -> AsyncIterator[bytes]:
        return self._inner.archive()

    async def restore(self, chunks: ByteChunks) -> None:
        await self._inner.restore(chunks)

    async def close(self) -> None:
        await self._inner.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def metered_handler(handler: Handler, metrics: Metrics) -> Handler:
    """`handler`, counting each event by kind and outcome (handled, retried, dropped, failed)."""

    async def handle(event: Event, continuations: Continuations) -> None:
        kind = f"{event.source}/{event.event_type}"
        outcome = "failed"
        try:
            await handler(event, continuations)
            outcome = "handled"
        except RetryLater:
            outcome = "retried"
            raise
        except PermanentError:
            outcome = "dropped"
            raise
        finally:
            metrics.events_handled.labels(kind if kind in KNOWN_EVENTS else "other", outcome).inc()

    return handle


def elapsed_since(epoch_s: object) -> float | None:
    """Seconds since a wall-clock timestamp carried in a message, None when it is missing or malformed."""
    if not isinstance(epoch_s, int | float) or isinstance(epoch_s, bool):
        return None
    return max(0.0, time.time() - float(epoch_s))

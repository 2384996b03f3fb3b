"""The HTTP edge's connection handling: a cap on open connections (evicting idle ones first), header and
keep-alive timeouts, a listen backlog, and accept failures logged at most once per interval.

aiohttp parses and routes; this module decides which connections it gets to keep.
"""

from __future__ import annotations

import asyncio
import asyncio.constants
import contextlib
import logging
import resource
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from hummingbird_agent import budgets

logger = logging.getLogger(__name__)
# asyncio's message when accept() fails for lack of file handles or memory (base_events/selector_events).
_ACCEPT_FAILED = "socket.accept() out of system resource"


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    """Connection limits of the HTTP edge (the budgets package holds the defaults)."""

    max_connections: int = budgets.WEBHOOK_MAX_CONNECTIONS
    header_timeout_s: float = budgets.WEBHOOK_HEADER_TIMEOUT_S
    backlog: int = budgets.WEBHOOK_LISTEN_BACKLOG
    log_interval_s: float = budgets.EDGE_ERROR_LOG_INTERVAL_S


class RateLimitedLog:
    """Logs the first of a run of repeated events, then at most one line per interval with the count."""

    def __init__(self, what: str, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._what = what
        self._interval_s = interval_s
        self._clock = clock
        self._next_line_at = 0.0
        self._pending = 0
        self._detail = ""
        self._scheduled = False

    def hit(self, detail: str) -> None:
        """Count one event; log a line now when the interval since the previous line has passed, else
        once it has (when an event loop runs) or with the next event after it."""
        self._pending += 1
        self._detail = detail
        delay = self._next_line_at - self._clock()
        if delay <= 0:
            self.flush()
        elif not self._scheduled:
            with contextlib.suppress(RuntimeError):  # no running loop: the next hit or flush() reports
                asyncio.get_running_loop().call_later(delay, self.flush)
                self._scheduled = True

    def flush(self) -> None:
        """Log the events counted since the previous line, if any."""
        self._scheduled = False
        if self._pending:
            logger.warning("%s: %d since the previous line (last: %s)", self._what, self._pending, self._detail)
            self._next_line_at = self._clock() + self._interval_s
        self._pending = 0


class ConnectionGuard:
    """Tracks the edge's open connections; at the cap, a new one evicts the oldest idle one (not inside a
    request handler) or, when every connection is busy, is closed at once."""

    def __init__(self, max_connections: int, log_interval_s: float) -> None:
        self.max_connections = max_connections
        self._idle: OrderedDict[asyncio.Transport, None] = OrderedDict()
        self._busy: dict[asyncio.Transport, int] = {}
        self._shed = RateLimitedLog("webhook edge at its connection cap, connections closed", log_interval_s)

    @property
    def open_connections(self) -> int:
        return len(self._idle) + len(self._busy)

    def admit(self, transport: asyncio.Transport) -> bool:
        """Register a new connection; False (and the transport is aborted) when it cannot be kept."""
        if self.open_connections >= self.max_connections:
            if not self._idle:
                self._shed.hit(f"cap {self.max_connections}; all busy, the new connection was closed")
                transport.abort()
                return False
            oldest, _ = self._idle.popitem(last=False)
            self._shed.hit(f"cap {self.max_connections}; the oldest idle connection was closed")
            oldest.abort()
        self._idle[transport] = None
        return True

    def forget(self, transport: asyncio.Transport) -> None:
        self._idle.pop(transport, None)
        self._busy.pop(transport, None)

    def enter(self, transport: asyncio.Transport | None) -> None:
        """A request handler starts on this connection: it may not be evicted until it ends."""
        if transport is not None and (transport in self._idle or transport in self._busy):
            self._idle.pop(transport, None)
            self._busy[transport] = self._busy.get(transport, 0) + 1

    def leave(self, transport: asyncio.Transport | None) -> None:
        if transport is None or transport not in self._busy:
            return
        self._busy[transport] -= 1
        if self._busy[transport] <= 0:
            del self._busy[transport]
            self._idle[transport] = None

    def close(self) -> None:
        self._shed.flush()

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        self.enter(request.transport)
        try:
            return await handler(request)
        finally:
            self.leave(request.transport)


class _GuardedProtocol(asyncio.Protocol):
    """Wraps aiohttp's per-connection protocol: asks the guard before handing the connection over."""

    def __init__(self, inner: asyncio.Protocol, guard: ConnectionGuard) -> None:
        self._inner = inner
        self._guard = guard
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a stream server's connections (abort() sheds them)
        if self._guard.admit(transport):
            self._transport = transport
            self._inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._guard.forget(self._transport)
            self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._transport is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._transport is not None else None

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


def connection_cap(configured: int) -> int:
    """`configured`, but never more than half the soft RLIMIT_NOFILE of this process."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, soft // 2))


class HttpEdge:
    """A running aiohttp app behind the connection guard; `url` is where it listens."""

    def __init__(self, app: web.Application, limits: EdgeLimits) -> None:
        self._limits = limits
        self.guard = ConnectionGuard(limits.max_connections, limits.log_interval_s)
        app.middlewares.append(self.guard.middleware)
        # keepalive_timeout closes a connection that has not sent a complete request head in time, from
        # connect and after each response. Bodies are decoded by the handler, after its token check.
        self._runner = web.AppRunner(
            app, access_log=None, keepalive_timeout=limits.header_timeout_s, auto_decompress=False
        )
        self._server: asyncio.Server | None = None
        self._accept_log = RateLimitedLog(
            "webhook edge cannot accept connections, failed accepts", limits.log_interval_s
        )
        self._previous_handler: Any = None
        self._accept_failed = False
        self.url = ""

    async def start(self, host: str, port: int) -> None:
        """Listen on host:port; OSError (address in use, bad host) propagates after cleaning up."""
        self.guard.max_connections = connection_cap(self._limits.max_connections)
        await self._runner.setup()
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        try:
            self._server = await loop.create_server(
                lambda: _GuardedProtocol(server(), self.guard), host, port, backlog=self._limits.backlog
            )
        except OSError:
            await self._runner.cleanup()
            raise
        self._previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._on_loop_error)
        bound_host, bound_port = self._server.sockets[0].getsockname()[:2]
        self.url = f"http://{bound_host}:{bound_port}"

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == _ACCEPT_FAILED:
            self._accept_failed = True
            self._accept_log.hit(str(context.get("exception") or "unknown error"))
        elif self._server is None and "_start_serving" in repr(context.get("handle")):
            # asyncio's accept retry, scheduled before we closed the listening socket, finds it closed.
            logger.debug("webhook edge: accept retry after close ignored")
        elif self._previous_handler is not None:
            self._previous_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
            if self._accept_failed:  # let asyncio's pending accept retries (1 s after a failure) run into us
                await asyncio.sleep(asyncio.constants.ACCEPT_RETRY_DELAY)
            asyncio.get_running_loop().set_exception_handler(self._previous_handler)
        await self._runner.cleanup()
        self.guard.close()
        self._accept_log.flush()

"""External MCP servers over the official mcp SDK (1.x): streamable HTTP and stdio. The only importer of mcp.

Fail-open at connect: a missing SDK, an unreachable server or a failed subprocess is one log line and
zero tools. External tools are state-changing unless their config entry declares them read-only.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.mcp.base import McpTool, ToolCallError

log = logging.getLogger(__name__)
INSTALL_HINT = "the mcp package is not installed (pip install 'mcp>=1.20,<2')"


class ToolFilters:
    """include/exclude/read-only name patterns of one config entry (re.search)."""

    def __init__(self, include: Sequence[str], exclude: Sequence[str], read_only: bool,
                 read_only_tools: Sequence[str]) -> None:
        self._include = [re.compile(p) for p in include]
        self._exclude = [re.compile(p) for p in exclude]
        self._read_only = read_only
        self._read_only_tools = [re.compile(p) for p in read_only_tools]

    def wanted(self, name: str) -> bool:
        if self._include and not any(p.search(name) for p in self._include):
            return False
        return not any(p.search(name) for p in self._exclude)

    def read_only(self, name: str) -> bool:
        return self._read_only or any(p.search(name) for p in self._read_only_tools)


class _SdkClient(abc.ABC):
    """One MCP session owned by a background task (the SDK's anyio scopes must open and close in one task)."""

    transport_name = ""

    def __init__(self, name: str, filters: ToolFilters) -> None:
        self.name = name
        self._filters = filters
        self._tools: list[McpTool] = []
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    @abc.abstractmethod
    def _transport(self) -> AbstractAsyncContextManager[Any]:
        """The SDK transport context of this client (streamable HTTP or stdio)."""

    async def connect(self) -> None:
        if self._task is not None:
            return
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._own_session(ready), name=f"mcp-{self.name}")
        await ready

    async def _own_session(self, ready: asyncio.Future[None]) -> None:
        try:
            from mcp import ClientSession

            async with self._transport() as streams, ClientSession(streams[0], streams[1]) as session:
                async with asyncio.timeout(budgets.MCP_CONNECT_TIMEOUT_S):
                    await session.initialize()
                    listed = await session.list_tools()
                self._accept(session, listed.tools)
                ready.set_result(None)
                await self._stop.wait()
        except ImportError:
            log.warning("mcp server %s: %s; it contributes no tools", self.name, INSTALL_HINT)
        except Exception as exc:  # noqa: BLE001 - vendor edge: any SDK/transport failure (OSError, httpx
            # errors, McpError, anyio exception groups, timeouts) means "no tools", never a crash.
            self._tools = []
            if not ready.done():
                log.warning("mcp server %s (%s) unavailable; it contributes no tools: %s", self.name,
                            self.transport_name, _reason(exc))
            else:
                log.warning("mcp server %s (%s) session ended: %s", self.name, self.transport_name, _reason(exc))
        finally:
            self._session = None
            if not ready.done():
                ready.set_result(None)

    def _accept(self, session: Any, tools: Sequence[Any]) -> None:
        kept = [t for t in tools if self._filters.wanted(t.name)]
        self._tools = [McpTool(t.name, t.description or "", t.inputSchema or {"type": "object", "properties": {}},
                               self._filters.read_only(t.name), self.name) for t in kept]
        self._session = session
        log.info("mcp server %s (%s) connected tools=%d (of %d) read_only=%d", self.name, self.transport_name,
                 len(self._tools), len(tools), sum(t.read_only for t in self._tools))

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        try:
            async with asyncio.timeout(budgets.MCP_CONNECT_TIMEOUT_S):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
        self._tools = []

    def list_tools(self) -> list[McpTool]:
        return list(self._tools)

    async def call(self, name: str, args: Mapping[str, Any]) -> Any:
        session = self._session
        if session is None or not any(t.name == name for t in self._tools):
            raise ToolCallError(f"mcp server {self.name}: no tool {name!r}")
        from mcp import McpError

        try:
            result = await session.call_tool(name, dict(args),
                                             read_timeout_seconds=timedelta(seconds=budgets.MCP_CALL_TIMEOUT_S))
        except (McpError, OSError, TimeoutError) as exc:
            raise ToolCallError(f"mcp server {self.name}: {name} failed: {_reason(exc)}") from exc
        texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
        if result.isError:
            raise ToolCallError(f"mcp server {self.name}: {name} failed: {' '.join(texts)[:300]}")
        return _content_value(texts)


def _content_value(texts: list[str]) -> Any:
    """No text -> None; one text -> its JSON value when it parses, else the text; several -> the texts."""
    if not texts:
        return None
    if len(texts) > 1:
        return texts
    try:
        return json.loads(texts[0])
    except json.JSONDecodeError:
        return texts[0]


def _reason(exc: BaseException) -> str:
    """One line for a failure, unwrapping anyio's exception groups to the first real error."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class ExternalMcpClient(_SdkClient):
    """An MCP server at a URL (streamable HTTP). Header values may carry tokens: they are never logged."""

    transport_name = "http"

    def __init__(self, name: str, url: str, headers: Mapping[str, str], filters: ToolFilters) -> None:
        super().__init__(name, filters)
        self._url, self._headers = url, dict(headers)

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        return _http_transport(self._url, self._headers)


@asynccontextmanager
async def _http_transport(url: str, headers: Mapping[str, str]) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    timeout = httpx_timeout(budgets.MCP_CONNECT_TIMEOUT_S, budgets.MCP_CALL_TIMEOUT_S)
    async with create_mcp_http_client(headers=dict(headers), timeout=timeout) as http, \
            streamable_http_client(url, http_client=http) as streams:
        yield streams


def httpx_timeout(connect_s: float, read_s: float) -> Any:
    import httpx  # a dependency of mcp

    return httpx.Timeout(connect_s, read=read_s)


class StdioMcpClient(_SdkClient):
    """An MCP server we spawn; its environment is `env` (built by server_config.client_for)."""

    transport_name = "stdio"

    def __init__(self, name: str, command: str, args: Sequence[str], env: Mapping[str, str],
                 filters: ToolFilters) -> None:
        super().__init__(name, filters)
        self._command, self._args, self._env = command, list(args), dict(env)

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=self._command, args=self._args, env=self._env)
        return stdio_client(params)

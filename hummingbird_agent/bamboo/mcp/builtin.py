"""The builtin client: this service's own tools (data sources, knowledge queries) behind the MCP protocol."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.mcp.base import BUILTIN, McpTool, ToolCallError
from hummingbird_agent.tools import StreamingResponse, ToolDef, ToolResult, argument_problem
from hummingbird_agent.tools.spill import aiter_chunks

log = logging.getLogger(__name__)


class BuiltinMcpClient:
    """Tools declared as ToolDefs (handlers carry their clients); their `read_only` flags are kept."""

    def __init__(self, tools: Sequence[ToolDef], name: str = BUILTIN) -> None:
        self.name = name
        self._tools = {t.name: t for t in tools}

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def list_tools(self) -> list[McpTool]:
        return [McpTool(t.name, t.description, t.parameters, t.read_only, self.name) for t in self._tools.values()]

    async def call(self, name: str, args: Mapping[str, Any]) -> Any:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolCallError(f"unknown tool {name!r}")
        problem = argument_problem(tool.parameters, dict(args))
        if problem:
            raise ToolCallError(f"{name}: {problem}")
        try:
            return await _plain(name, await _invoke(tool, args))
        except ToolCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - tool-executor boundary: a failing tool is a failed call
            log.warning("builtin tool failed tool=%s error=%s", name, type(exc).__name__)
            raise ToolCallError(f"{name} failed: {type(exc).__name__}: {str(exc)[:200]}") from exc


async def _invoke(tool: ToolDef, args: Mapping[str, Any]) -> Any:
    handler = tool.handler
    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "func", None)):
        return await handler(**args)
    return await asyncio.to_thread(handler, **args)


async def _plain(name: str, output: Any) -> Any:
    """A handler's output as a JSON-able value: a failed ToolResult raises, a stream is read up to the cap."""
    if isinstance(output, ToolResult):
        if not output.ok:
            raise ToolCallError(f"{name}: {output.content}")
        return output.content
    if isinstance(output, StreamingResponse):
        if output.binary:
            raise ToolCallError(f"{name}: binary output cannot be used in orchestration code")
        return await _read_capped(output)
    return output


async def _read_capped(stream: StreamingResponse) -> str:
    cap = budgets.EXPLORE_RESULT_MAX_BYTES
    parts: list[bytes] = []
    size = 0
    async for chunk in aiter_chunks(stream.chunks):
        parts.append(chunk[: cap - size])
        size += len(parts[-1])
        if size >= cap:
            break
    return b"".join(parts).decode(errors="replace")

"""Procedures as tools: a procedure's identity is the set of tools its code calls; approved read-only
procedures calling at least two tools become `proc__<tools>` tools that replay their stored code
through the same sandboxed, gated path (so the read-only boundary composes)."""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import Node, NodeType, make_node
from hummingbird_agent.bamboo.mcp import McpTool, ToolCallError
from hummingbird_agent.bamboo.stores.base import NodeRow

PREFIX = "proc__"
SERVER = "procedures"
Replay = Callable[[str], Awaitable[dict[str, Any]]]


def referenced_tools(code: str) -> tuple[str, ...] | None:
    """Sorted names of every `tools.<name>` the code references; None when it does not parse."""
    try:
        tree = ast.parse("async def _fn(tools, asyncio, task):\n" + "\n".join("    " + ln for ln in code.splitlines()))
    except SyntaxError:
        return None
    names = {n.attr for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "tools"}
    return tuple(sorted(names))


def procedure_tool_name(signature: Sequence[str]) -> str:
    """`proc__` + the tool names joined by `__`, identifier-safe; long names are cut and hash-suffixed."""
    name = PREFIX + "__".join(re.sub(r"\W", "_", s) for s in signature)
    limit = budgets.PROCEDURE_TOOL_NAME_MAX_CHARS
    if len(name) <= limit:
        return name
    return name[: limit - 9] + "_" + hashlib.sha256(name.encode()).hexdigest()[:8]


def procedure_node(code: str, description: str = "") -> Node | None:
    """The Procedure node of orchestration code that ran (named by its signature), or None if it calls no tool."""
    signature = referenced_tools(code)
    if not signature:
        return None
    return make_node(NodeType.PROCEDURE, procedure_tool_name(signature), description or
                     "Investigation steps: " + ", ".join(signature), code=code, tools=list(signature))


def _exposable(row: NodeRow, read_only: Collection[str]) -> tuple[str, tuple[str, ...]] | None:
    code = row.props.get("code")
    if not isinstance(code, str) or not code.strip() or row.props.get("status") == "tentative":
        return None
    signature = referenced_tools(code)
    # Read-only is recomputed from the code: every tool it names must be read-only now.
    if signature is None or len(signature) < 2 or not set(signature) <= set(read_only):
        return None
    return code, signature


class ProcedureToolsClient:
    """McpClient of proc__ tools; `replay(code)` runs stored code through the caller's sandbox and gate."""

    name = SERVER

    def __init__(self, procedures: Sequence[NodeRow], read_only: Collection[str], replay: Replay) -> None:
        self._replay = replay
        self._codes: dict[str, str] = {}
        self._tools: list[McpTool] = []
        ranked = sorted(procedures, key=lambda r: -r.frequency)
        for row in ranked:
            found = _exposable(row, read_only)
            if found is None or len(self._tools) >= budgets.PROCEDURE_TOOLS_MAX:
                continue
            name = procedure_tool_name(found[1])
            if name in self._codes:
                continue
            self._codes[name] = found[0]
            self._tools.append(McpTool(name, _describe(row, found[1]), {"type": "object", "properties": {}},
                                       True, SERVER))

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def list_tools(self) -> list[McpTool]:
        return list(self._tools)

    async def call(self, name: str, args: Mapping[str, Any]) -> Any:
        code = self._codes.get(name)
        if code is None:
            raise ToolCallError(f"unknown procedure tool {name!r}")
        return await self._replay(code)


def _describe(row: NodeRow, signature: Sequence[str]) -> str:
    text = f"Replays a past investigation procedure calling {', '.join(signature)}"
    if row.description:
        text += f": {row.description}"
    return text + f" (used in {row.frequency} incident(s)). Takes no arguments."

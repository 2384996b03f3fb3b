"""The MCP client abstraction of the explorer: a tool descriptor and the narrow client protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hummingbird_agent.errors import PermanentError

BUILTIN = "builtin"


class ToolCallError(PermanentError):
    """One tool call failed (unknown tool, bad arguments, the tool's own error); the message is one line."""


@dataclass(frozen=True, slots=True)
class McpTool:
    """A tool as the explorer sees it. `read_only` is the security axis: only read-only tools may run in
    the automatic phases. `server` names where it lives (`builtin` or a config entry's name)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    read_only: bool
    server: str = BUILTIN


class McpClient(Protocol):
    """One source of tools. `connect` never raises for an unreachable server: it contributes no tools."""

    name: str

    async def connect(self) -> None: ...

    async def close(self) -> None: ...

    def list_tools(self) -> list[McpTool]: ...

    async def call(self, name: str, args: Mapping[str, Any]) -> Any:
        """The tool's JSON-able result; raises ToolCallError when the call fails."""

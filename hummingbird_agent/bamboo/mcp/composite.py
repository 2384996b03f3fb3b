"""CompositeMcpClient: several clients as one; the first client (the builtin one) wins a name clash."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hummingbird_agent.bamboo.mcp.base import McpClient, McpTool, ToolCallError

log = logging.getLogger(__name__)


class CompositeMcpClient:
    """Fans connect/close out to every client and routes each call to the tool's owner."""

    name = "composite"

    def __init__(self, clients: Sequence[McpClient]) -> None:
        self._clients = list(clients)

    @property
    def clients(self) -> list[McpClient]:
        return list(self._clients)

    async def connect(self) -> None:
        await asyncio.gather(*(c.connect() for c in self._clients))

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._clients))

    def _owners(self) -> dict[str, tuple[McpClient, McpTool]]:
        owners: dict[str, tuple[McpClient, McpTool]] = {}
        for client in self._clients:
            for tool in client.list_tools():
                if tool.name in owners:
                    log.info("tool %s of %s hidden by the one of %s", tool.name, client.name,
                             owners[tool.name][0].name)
                    continue
                owners[tool.name] = (client, tool)
        return owners

    def list_tools(self) -> list[McpTool]:
        return [tool for _, tool in self._owners().values()]

    async def call(self, name: str, args: Mapping[str, Any]) -> Any:
        owner = self._owners().get(name)
        if owner is None:
            raise ToolCallError(f"unknown tool {name!r}")
        return await owner[0].call(name, args)

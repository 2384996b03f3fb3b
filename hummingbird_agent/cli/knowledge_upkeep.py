"""The `bamboo` commands that keep the stores: `incidents list|show|remove`, `backup`, `restore`, `reindex`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable

from hummingbird_agent.bamboo.learn import curation
from hummingbird_agent.bamboo.stores.base import Stores, VectorStore, opened
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import AgentError


def run(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    command = args.bamboo_command
    if command == "incidents":
        return incidents(loaded, args.incidents_command, getattr(args, "incident_id", ""))
    from hummingbird_agent.cli.knowledge_backup import backup_command, reindex_command, restore_command

    if command == "backup":
        return backup_command(loaded, args.dir)
    if command == "restore":
        return restore_command(loaded, args.dir)
    return reindex_command(loaded)


def incidents(loaded: LoadedConfig, action: str, incident_id: str) -> int:
    """`bamboo incidents list|show ID|remove ID`; an unknown id is one error line and exit 2."""
    from hummingbird_agent.bamboo.factory import build_stores

    work: dict[str, Callable[[Stores], Awaitable[str]]] = {
        "list": _list,
        "show": lambda s: _show(s, incident_id),
        "remove": lambda s: _remove(s, incident_id, tool_memory(loaded, s, incident_id)),
    }
    return with_stores(build_stores(loaded), work[action], f"bamboo incidents {action}")


def with_stores(stores: Stores, work: Callable[[Stores], Awaitable[str]], command: str) -> int:
    """Open the stores, run `work`, print what it returns; an AgentError is one line on stderr (exit 2)."""

    async def go() -> str:
        async with opened(stores):
            return await work(stores)

    try:
        text = asyncio.run(go())
    except AgentError as exc:
        print(f"error: {command}: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0


async def _list(stores: Stores) -> str:
    rows = await curation.list_incidents(stores)
    lines = [f"{r.incident_id}\t{'; '.join(r.causes) or '(no cause)'}" for r in rows]
    return "\n".join([*lines, f"incidents: {len(rows)}"])


async def _show(stores: Stores, incident_id: str) -> str:
    return curation.render_detail(await curation.show_incident(stores, incident_id))


def tool_memory(loaded: LoadedConfig, stores: Stores, incident_id: str) -> list[tuple[VectorStore, str]]:
    """The tool-selection vectors and the incident's id there (`bamboo.explore` only: they remember each
    explored incident's tools), for removing it."""
    from hummingbird_agent.bamboo.explore.session import tool_namespace
    from hummingbird_agent.bamboo.explore.tool_selection import trigger_id
    from hummingbird_agent.bamboo.factory import TOOLS_COLLECTION_SUFFIX, build_vector_store

    if not loaded.config.bamboo.explore:
        return []
    tools = build_vector_store(loaded, stores.embedder.dimensions, TOOLS_COLLECTION_SUFFIX)
    return [(tools, trigger_id(tool_namespace(loaded), incident_id))]


async def _remove(stores: Stores, incident_id: str, also: list[tuple[VectorStore, str]]) -> str:
    async with contextlib.AsyncExitStack() as stack:
        for vectors, _ in also:
            await vectors.open()
            stack.push_async_callback(vectors.aclose)
        detail = await curation.remove_incident(stores, incident_id, also)
    points = sum(detail.points.values())
    return (f"removed incident {incident_id}: withdrew {len(detail.nodes)} nodes, {len(detail.edges)} edges "
            f"(deleted where no other incident supports them) and {points} vector points (checked: none left)")

"""Embedded graph backend: ladybug (the maintained Kuzu fork) in this process; the only ladybug importer.

ladybug is synchronous and one connection must not be used concurrently, so every call runs on a
single dedicated thread, and write units of work are serialised by a lock.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from hummingbird_agent.bamboo.stores import cypher
from hummingbird_agent.errors import ConfigError, TransientError

T = TypeVar("T")
log = logging.getLogger(__name__)
_PROPS = "description STRING, incidents STRING[], frequency INT64, conf_sum DOUBLE, props STRING"


def schema_statements() -> list[str]:
    """DDL: ladybug needs typed node and relationship tables; `name` is each node table's primary key."""
    ddl = [f"CREATE NODE TABLE IF NOT EXISTS {label}(name STRING, {_PROPS}, PRIMARY KEY(name))"
           for label in cypher.GRAPH_LABELS]
    ddl.append(f"CREATE NODE TABLE IF NOT EXISTS {cypher.INCIDENT_LABEL}"
               "(name STRING, digest STRING, contribution STRING, PRIMARY KEY(name))")
    pairs: dict[str, list[str]] = defaultdict(list)
    for src, rel, tgt in cypher.edge_groups():
        pairs[rel].append(f"FROM {src} TO {tgt}")
    ddl += [f"CREATE REL TABLE IF NOT EXISTS {rel}({', '.join(p)}, {_PROPS})" for rel, p in sorted(pairs.items())]
    # Added after the first release: ALTER also upgrades a store created before it (values start NULL).
    ddl += [f"ALTER TABLE {label} ADD IF NOT EXISTS causes INT64" for label in cypher.CLUE_LABELS]
    ddl.append(f"ALTER TABLE {cypher.INCIDENT_LABEL} ADD IF NOT EXISTS causes STRING[]")
    ddl.append(f"ALTER TABLE {cypher.INCIDENT_LABEL} ADD IF NOT EXISTS project STRING")
    return ddl


class _Tx:
    def __init__(self, session: LadybugSession) -> None:
        self._session = session

    async def run(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]:
        return await self._session._call(query, params)

    async def run_all(self, statements: Sequence[tuple[str, dict[str, object]]]) -> None:
        await self._session._on_thread(self._session._execute_all, statements)


class LadybugSession:
    """CypherSession over an embedded ladybug database at `path` (":memory:" for a throwaway one)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._db: Any = None
        self._conn: Any = None
        self._thread: ThreadPoolExecutor | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ladybug")
        await self._on_thread(self._open_sync)

    def _open_sync(self) -> None:
        import ladybug

        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = ladybug.Database(self._path)
        except RuntimeError as exc:  # the engine reports lock and I/O problems as RuntimeError
            raise ConfigError(_open_problem(self._path, str(exc))) from None
        self._conn = ladybug.Connection(self._db)
        # The knowledge base's statements touch a few rows each: spreading one over the engine's worker
        # threads costs more than it runs (3.2 -> 1.4 ms per MERGE statement on a busy 2-core host).
        self._conn.set_max_threads_for_exec(1)
        for statement in schema_statements():
            self._conn.execute(statement)

    async def aclose(self) -> None:
        if self._thread is None:
            return
        await self._on_thread(self._close_sync)
        self._thread.shutdown(wait=True)
        self._thread = None

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._db is not None:
            self._db.close()
        self._conn = self._db = None

    async def _on_thread(self, fn: Callable[..., T], *args: Any) -> T:
        if self._thread is None:
            raise TransientError("graph store is not open")
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    async def _call(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]:
        return await self._on_thread(self._execute, query, params)

    def _execute(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]:
        try:
            result = self._conn.execute(query, params)
        except RuntimeError as exc:
            raise TransientError(f"graph store query failed: {exc}") from exc
        columns = result.get_column_names()
        rows = []
        while result.has_next():
            rows.append(dict(zip(columns, result.get_next(), strict=True)))
        return rows

    def _execute_all(self, statements: Sequence[tuple[str, dict[str, object]]]) -> None:
        for query, params in statements:
            self._execute(query, params)

    async def write(self, work: Callable[[Any], Awaitable[T]]) -> T:
        async with self._lock:
            await self._call("BEGIN TRANSACTION", {})
            try:
                value = await work(_Tx(self))
            except BaseException:
                await self._call("ROLLBACK", {})
                raise
            await self._call("COMMIT", {})
            return value

    async def read(self, query: str, params: dict[str, object]) -> list[dict[str, Any]]:
        async with self._lock:
            return await self._call(query, params)


def _open_problem(path: str, message: str) -> str:
    """One line for an unopenable graph: for a lock, who holds it and how to share the graph instead."""
    holder = re.search(r"held by PID (\d+)", message)
    if "lock" not in message.lower():
        return f"graph store {path}: cannot open ({message.splitlines()[0]})"
    who = f"process {holder.group(1)}" if holder else "another process"
    return (f"graph store {path} is locked by {who} (the embedded graph allows one process at a time): stop it "
            "(the service or another bamboo command), or use bamboo.graph.backend: neo4j, which several processes "
            "can share")

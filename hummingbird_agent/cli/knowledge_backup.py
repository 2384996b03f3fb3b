"""`bamboo backup DIR`, `bamboo restore DIR` (the embedded stores) and `bamboo reindex`.

A backup is a copy of the embedded stores' files taken with them closed, so it is consistent: the command
first opens both stores, which fails with one line while the service (or another command) holds them, and
reads their counts; it then copies the files and opens the copy to check it holds the same counts. A restore
checks the backup the same way, puts the files in place and checks the live stores. Neo4j and a Qdrant
server have their own tools (neo4j-admin dump, collection snapshots: docs/operations.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hummingbird_agent.bamboo.factory import TOOLS_COLLECTION_SUFFIX, build_stores
from hummingbird_agent.bamboo.stores.base import Stores, opened
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import AgentError, ConfigError

MANIFEST = "manifest.json"
GRAPH, VECTORS = "graph", "qdrant"


def backup_command(loaded: LoadedConfig, target: str) -> int:
    return _report("backup", lambda: backup(loaded, Path(target)))


def restore_command(loaded: LoadedConfig, source: str) -> int:
    return _report("restore", lambda: restore(loaded, Path(source)))


def _report(command: str, work: Callable[[], str]) -> int:
    try:
        print(work())
    except (AgentError, OSError) as exc:
        print(f"error: bamboo {command}: {exc}", file=sys.stderr)
        return 2
    return 0


def embedded_paths(loaded: LoadedConfig) -> tuple[Path, Path]:
    """(graph file, vector folder) of the embedded stores; ConfigError for a server backend."""
    bamboo = loaded.config.bamboo
    if bamboo.graph.backend != "embedded" or bamboo.vectors.url or bamboo.vectors.path == ":memory:":
        raise ConfigError("backup and restore copy the embedded stores; for Neo4j use neo4j-admin database dump "
                          "and for a Qdrant server its snapshots (docs/operations.md, knowledge base)")
    return loaded.resolve(bamboo.graph.path), loaded.resolve(bamboo.vectors.path)


def at_paths(loaded: LoadedConfig, graph: Path, vectors: Path) -> LoadedConfig:
    """`loaded` with the embedded stores at other (absolute) paths."""
    bamboo = loaded.config.bamboo
    update = {"graph": bamboo.graph.model_copy(update={"path": str(graph)}),
              "vectors": bamboo.vectors.model_copy(update={"path": str(vectors)})}
    config = loaded.config.model_copy(update={"bamboo": bamboo.model_copy(update=update)})
    return dataclasses.replace(loaded, config=config)


def counts(loaded: LoadedConfig) -> dict[str, Any]:
    """What the stores hold: incidents, nodes and edges per type, vector points. Opening them takes their locks."""
    async def read() -> dict[str, Any]:
        async with opened(build_stores(loaded)) as stores:
            graph = await stores.graph.counts()
            return {"incidents": graph.incidents, "nodes": graph.nodes, "edges": graph.edges,
                    "points": await stores.vectors.count()}

    return asyncio.run(read())


def _layout(graph: Path, vectors: Path) -> dict[str, Path]:
    """Name in a backup -> where that file or folder of the stores lives (the WAL exists only while open)."""
    return {GRAPH: graph, GRAPH + ".wal": graph.with_name(graph.name + ".wal"), VECTORS: vectors,
            VECTORS + TOOLS_COLLECTION_SUFFIX: vectors.with_name(vectors.name + TOOLS_COLLECTION_SUFFIX)}


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".lock"))
    else:
        shutil.copy2(source, target)


def backup(loaded: LoadedConfig, target: Path) -> str:
    graph, vectors = embedded_paths(loaded)
    if target.exists() and any(target.iterdir()):
        raise ConfigError(f"{target} is not empty; back up into a new folder")
    held = counts(loaded)  # opens and closes both stores: nobody else has them, and the graph is checkpointed
    target.mkdir(parents=True, exist_ok=True)
    for name, path in _layout(graph, vectors).items():
        if path.exists():
            _copy(path, target / name)
    manifest = {"counts": held, "embeddings": loaded.config.bamboo.embeddings.model_dump(),
                "collection": loaded.config.bamboo.vectors.collection}
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    copied = counts(at_paths(loaded, target / GRAPH, target / VECTORS))
    if copied != held:
        raise ConfigError(f"the copy in {target} reads {copied}, the stores {held}; stop the service and retry")
    return f"backup: {_describe(held)} -> {target} (checked: the copy holds the same)"


def restore(loaded: LoadedConfig, source: Path) -> str:
    graph, vectors = embedded_paths(loaded)
    try:
        manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ConfigError(f"{source} holds no backup ({MANIFEST} missing or unreadable)") from None
    # Checked on a scratch copy beside the stores (the backup may be read-only): opening a store may write to it.
    graph.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".restore-check-", dir=graph.parent)) / "backup"
    shutil.copytree(source, scratch, ignore=shutil.ignore_patterns(".lock"))
    try:
        found = counts(at_paths(loaded, scratch / GRAPH, scratch / VECTORS))
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)
    if found != manifest["counts"]:
        raise ConfigError(f"the backup in {source} reads {found}, its manifest says {manifest['counts']}")
    counts(loaded)  # the live stores are not held by anyone (one line naming the holder otherwise)
    for name, path in _layout(graph, vectors).items():
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        if (source / name).exists():
            _copy(source / name, path)
    restored = counts(loaded)
    if restored != manifest["counts"]:
        raise ConfigError(f"the restored stores read {restored}, the backup {manifest['counts']}")
    return f"restore: {_describe(restored)} from {source} (checked: the stores hold what was backed up)"


def _describe(held: dict[str, Any]) -> str:
    return (f"{held['incidents']} incidents, {sum(held['nodes'].values())} nodes, {sum(held['edges'].values())} "
            f"edges, {held['points']} vector points")


def reindex_command(loaded: LoadedConfig) -> int:
    """`bamboo reindex`: re-embed every point with the configured embedder (after changing bamboo.embeddings)."""
    from hummingbird_agent.bamboo.factory import build_embedder, build_graph_store, build_vector_store
    from hummingbird_agent.bamboo.learn.reindex import reindex

    embedder = build_embedder(loaded)
    graph, vectors = build_graph_store(loaded), build_vector_store(loaded, None)
    tools = build_vector_store(loaded, None, TOOLS_COLLECTION_SUFFIX)
    spool = loaded.resolve(loaded.config.bamboo.vectors.path + ".reindex.jsonl")

    async def run() -> str:
        async with opened(Stores(graph, vectors, embedder)):
            done = await reindex(graph, vectors, embedder, spool)
        await tools.open()
        try:  # tool-selection memory keeps no text to re-embed: it starts again empty and refills as it learns
            await tools.reset(embedder.dimensions)
        finally:
            await tools.aclose()
        return (f"reindex: {done.embedded} vector points of {done.incidents} incidents embedded again "
                f"({done.dimensions} dimensions); {done.dropped_logs} whole-log points dropped (logs are not kept: "
                "`bamboo populate` of the incidents rebuilds them); tool-selection memory emptied")

    return _report("reindex", lambda: asyncio.run(run()))

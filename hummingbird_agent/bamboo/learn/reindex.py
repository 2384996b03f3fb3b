"""Re-embedding the vector index after the embedder changed (provider, model or dimensions).

Every learned incident's points are first spooled to a file (ids and payloads, which keep the embedded text);
only once that file is complete is the collection emptied and refilled from it with the configured embedder,
so a run that stops half-way is resumed from the file by running it again. Whole-log points keep no text
(by design: logs are not stored) and cannot be re-embedded: they are dropped and counted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.embeddings import Embedder
from hummingbird_agent.bamboo.stores.base import GraphStore, VectorPoint, VectorStore
from hummingbird_agent.bamboo.stores.records import project
from hummingbird_agent.errors import TransientError


class ResettableVectors(VectorStore, Protocol):
    async def reset(self, dimensions: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ReindexCounts:
    incidents: int
    embedded: int
    dropped_logs: int
    dimensions: int


async def reindex(graph: GraphStore, vectors: ResettableVectors, embedder: Embedder, spool: Path) -> ReindexCounts:
    """Re-embed every incident's points with `embedder`; `spool` is the work file (removed on success)."""
    if not spool.exists():
        await _spool(graph, vectors, spool)
    await vectors.reset(embedder.dimensions)
    embedded = dropped = 0
    incidents: set[str] = set()
    for batch in _batches(spool):
        kept = {gid: [p for p in rows if p["payload"].get("content")] for gid, rows in batch.items()}
        dropped += sum(len(rows) for rows in batch.values()) - sum(len(rows) for rows in kept.values())
        embedded += await _refill(vectors, embedder, kept)
        incidents |= set(batch)
    if await vectors.count() != embedded:
        raise TransientError(f"re-index: {await vectors.count()} points stored, {embedded} expected; "
                             f"run it again (it resumes from {spool})")
    spool.unlink()
    return ReindexCounts(len(incidents), embedded, dropped, embedder.dimensions)


async def _spool(graph: GraphStore, vectors: VectorStore, spool: Path) -> None:
    """Every incident's points (id and payload) as JSON lines, grouped by incident; written under another name
    and renamed when complete, so an existing spool is always whole. A point without its incident's project gets it
    from the graph's record, so re-indexing also makes points learned before projects were kept visible to theirs."""
    partial = spool.with_name(spool.name + ".partial")
    with partial.open("w", encoding="utf-8") as out:
        for gid in await graph.incident_ids():
            owner: str | None = None
            for hit in await vectors.by_incident(gid):
                payload = dict(hit.payload)
                if not payload.get("project"):  # a point written before points kept their incident's project
                    if owner is None:
                        owner = project(await graph.contribution(gid) or {"nodes": []})
                    payload["project"] = owner
                out.write(json.dumps({"gid": gid, "id": hit.id, "payload": payload}) + "\n")
    os.replace(partial, spool)


async def _refill(vectors: VectorStore, embedder: Embedder, rows: dict[str, list[dict[str, Any]]]) -> int:
    """Embed these incidents' texts and write their points; returns how many."""
    texts = [str(p["payload"]["content"]) for points in rows.values() for p in points]
    embedded = iter(await embedder.embed(texts))
    await vectors.replace_incidents({gid: [VectorPoint(p["id"], tuple(next(embedded)), p["payload"]) for p in points]
                                     for gid, points in rows.items()})
    return len(texts)


def _batches(spool: Path) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Whole incidents (their points are replaced together), about BAMBOO_EMBED_BATCH texts a batch."""
    batch: dict[str, list[dict[str, Any]]] = {}
    size = 0
    with spool.open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            if row["gid"] not in batch and size >= budgets.BAMBOO_EMBED_BATCH:
                yield batch
                batch, size = {}, 0
            batch.setdefault(row["gid"], []).append(row)
            size += 1
    if batch:
        yield batch

"""Vector backend: Qdrant through qdrant-client (server URL, or local mode at a path); the only importer.

One collection; the payload carries `section`, `incident_id` and the node name, so one incident's
points can be replaced as a whole and searches can be restricted to a section.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hummingbird_agent.bamboo.stores.base import VectorHit, VectorPoint, address
from hummingbird_agent.errors import ConfigError, PermanentError, TransientError

log = logging.getLogger(__name__)
_SCROLL_PAGE = 256
# Local mode: a section search first reads this many times `limit` unfiltered hits (the accumulator
# writes about 4 sections per incident, so most searches are answered without the slow filter).
_LOCAL_WIDEN = 8
# Payload keys a multi-section search returns: what the similarity step reads (not the stored texts,
# whose copies would cost more than the scoring in local mode).
_HIT_KEYS = ["section", "incident_id", "name"]


@asynccontextmanager
async def _mapped(action: str) -> AsyncIterator[None]:
    """Map qdrant-client exceptions to our typed errors at the adapter edge."""
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        yield
    except UnexpectedResponse as exc:
        kind = TransientError if exc.status_code in (429, 500, 502, 503, 504) else PermanentError
        raise kind(f"qdrant {action}: HTTP {exc.status_code}") from exc
    except ResponseHandlingException as exc:
        raise TransientError(f"qdrant {action}: {type(exc.source).__name__}") from exc


def _relax_local_sync(client: Any, collection: str) -> None:
    """Local mode commits each point of an upsert on its own; with the default rollback journal every
    commit waits for the disk (about 16 ms, so storing cost more than extracting). WAL with
    synchronous=NORMAL keeps the file consistent on a crash and may lose the last commits on power
    loss only, which re-running `bamboo populate` restores. Reached through the client's local
    internals (pinned version); if they move, the default journal stays and only speed is lost."""
    try:
        storage = client._client.collections[collection].storage.storage
        storage.execute("PRAGMA journal_mode=WAL")
        storage.execute("PRAGMA synchronous=NORMAL")
    except (AttributeError, KeyError, TypeError) as exc:
        log.info("vector store: local sqlite journal left as is (%s)", exc)


class QdrantVectorStore:
    """VectorStore over one Qdrant collection of `dimensions`-sized cosine vectors."""

    def __init__(self, collection: str, dimensions: int, url: str | None = None, path: str | None = None,
                 api_key: str | None = None) -> None:
        if not url and not path:
            raise ConfigError("bamboo.vectors: give a Qdrant server url or a local path")
        self._collection = collection
        self._dimensions = dimensions
        self._url, self._path, self._api_key = url, path, api_key
        self._client: Any = None
        # Local mode only: incident id -> its point ids. Local mode scans every payload in Python for a
        # filtered delete; this index (built once at open, kept on write) makes replacing one incident
        # cost its own points. Local mode locks its folder to one process, so nothing else writes.
        self._local_ids: dict[str, dict[str, str]] | None = None  # incident id -> {point id: section}
        self._sections: dict[str, set[str]] = defaultdict(set)  # local mode: section -> point ids
        # Local mode: point id -> its `_HIT_KEYS` payload, so a scan returns bare scores (copying each hit's
        # payload out of the local store costs more than scoring it).
        self._hit_keys: dict[str, dict[str, str]] = {}

    async def open(self) -> None:
        from qdrant_client import AsyncQdrantClient, models

        if self._url:
            # No version check: it runs in a background thread and prints a warning of its own when the server
            # is unreachable; open() below reports that as one line naming the address.
            self._client = AsyncQdrantClient(url=self._url, api_key=self._api_key, check_compatibility=False)
        elif self._path == ":memory:":
            self._client = AsyncQdrantClient(location=":memory:")
        else:
            Path(str(self._path)).mkdir(parents=True, exist_ok=True)
            try:
                self._client = AsyncQdrantClient(path=self._path)
            except RuntimeError:  # local mode: the folder is locked by another process
                raise ConfigError(
                    f"vector store {self._path} is locked by another process (lock file {self._path}/.lock; Qdrant "
                    "local mode allows one process at a time): stop it (the service or another bamboo command), or "
                    "set bamboo.vectors.url to a Qdrant server, which several processes can share") from None
        async with _mapped(f"open at {address(self._url)}" if self._url else "open"):
            if not await self._client.collection_exists(self._collection):
                await self._client.create_collection(
                    self._collection,
                    vectors_config=models.VectorParams(size=self._dimensions, distance=models.Distance.COSINE))
            else:
                await self._check_size()
            # Local mode ignores payload indexes (and warns); a server uses them for the section filters.
            for key in ("section", "incident_id") if self._url else ():
                await self._client.create_payload_index(self._collection, key, models.PayloadSchemaType.KEYWORD)
            if not self._url:
                self._local_ids = await self._incident_ids()
        if self._path and self._path != ":memory:":
            _relax_local_sync(self._client, self._collection)

    async def _incident_ids(self) -> dict[str, dict[str, str]]:
        ids: dict[str, dict[str, str]] = defaultdict(dict)
        offset = None
        while True:
            records, offset = await self._client.scroll(self._collection, limit=_SCROLL_PAGE * 16, offset=offset,
                                                        with_payload=_HIT_KEYS)
            for r in records:
                self._remember(str(r.id), r.payload or {})
                ids[str((r.payload or {}).get("incident_id", ""))][str(r.id)] = self._hit_keys[str(r.id)]["section"]
            if offset is None:
                return ids

    async def _check_size(self) -> None:
        info = await self._client.get_collection(self._collection)
        size = info.config.params.vectors.size
        if size != self._dimensions:
            raise ConfigError(f"vector collection {self._collection} holds {size}-d vectors, "
                              f"the embedder makes {self._dimensions}-d ones")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _filter(self, **equal: str | None) -> Any:
        from qdrant_client import models

        must = [models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in equal.items() if v]
        return models.Filter(must=must) if must else None

    async def replace_incident(self, incident_id: str, points: list[VectorPoint]) -> None:
        await self.replace_incidents({incident_id: points})

    async def replace_incidents(self, points: Mapping[str, list[VectorPoint]]) -> None:
        from qdrant_client import models

        if not points:
            return
        structs = [models.PointStruct(id=p.id, vector=list(p.vector), payload={**p.payload, "incident_id": gid})
                   for gid, batch in points.items() for p in batch]
        selector = self._selector(list(points))
        async with _mapped("replace"):
            if selector is not None:
                await self._client.delete(self._collection, points_selector=selector, wait=True)
            if structs:
                await self._client.upsert(self._collection, wait=True, points=structs)
        if self._local_ids is not None:
            for gid, batch in points.items():
                for pid, section in self._local_ids.pop(gid, {}).items():
                    self._sections[section].discard(pid)
                    self._hit_keys.pop(pid, None)
                self._local_ids[gid] = {p.id: str(p.payload.get("section", "")) for p in batch}
                for p in batch:
                    self._remember(p.id, {**p.payload, "incident_id": gid})

    def _remember(self, pid: str, payload: Mapping[str, Any]) -> None:
        self._hit_keys[pid] = {k: str(payload.get(k, "")) for k in _HIT_KEYS}
        self._sections[self._hit_keys[pid]["section"]].add(pid)

    def _selector(self, incident_ids: list[str]) -> Any:
        from qdrant_client import models

        if self._local_ids is not None:
            known = sorted(i for g in incident_ids for i in self._local_ids.get(g, ()))
            return models.PointIdsList(points=known) if known else None  # local mode refuses an empty list
        return models.FilterSelector(filter=models.Filter(must=[models.FieldCondition(
            key="incident_id", match=models.MatchAny(any=incident_ids))]))

    async def search(self, vector: list[float], section: str | None, limit: int,
                     min_score: float = 0.0) -> list[VectorHit]:
        if section and self._local_ids is not None:
            few = self._sections.get(section, set())
            if len(few) <= limit * _LOCAL_WIDEN:
                return await self._score_few(vector, sorted(few), limit, min_score)
            # Local mode tests a filter against every payload in Python (50 ms at 3,000 points, linear);
            # its unfiltered search is one matrix product. The best `limit` points of the section are
            # exactly those among the best `wide` overall whenever at least `limit` of them are there.
            for wide in (limit * _LOCAL_WIDEN, limit * _LOCAL_WIDEN ** 2):
                hits = await self._query(vector, None, wide, min_score)
                own = [h for h in hits if h.payload.get("section") == section]
                if len(own) >= limit or len(hits) < wide:
                    return own[:limit]
        return await self._query(vector, section, limit, min_score)

    async def search_sections(self, vectors: Sequence[list[float]], sections: Sequence[str],
                              limit: int) -> list[list[VectorHit]]:
        """For each vector and each of `sections` (in that order), the section's best `limit` hits, as
        `search` gives them, with the payload's section, incident id and name only. A server answers all of
        them in one batch request; local mode answers each vector with one unfiltered scan (widened until
        every section has its `limit` hits), falling back to `search` for a section still short."""
        if self._local_ids is None:
            queries = [(vector, section) for vector in vectors for section in sections]
            return await self._batch(queries, limit)
        out: list[list[VectorHit]] = []
        for vector in vectors:
            found = await self._local_sections(vector, sections, limit)
            out += [found[s] for s in sections]
        return out

    async def _local_sections(self, vector: list[float], sections: Sequence[str],
                              limit: int) -> dict[str, list[VectorHit]]:
        """Local mode: each section's best `limit` among the best `wide` overall, exact once the section has
        `limit` of them there (or all it holds), or the scan returned every point."""
        found: dict[str, list[VectorHit]] = {s: [] for s in sections if not self._sections.get(s)}
        wide = limit * _LOCAL_WIDEN
        # Widening to every point still costs less than a filter, which local mode tests payload by payload.
        while len(found) < len(sections):
            hits = [VectorHit(h.id, h.score, self._hit_keys.get(h.id, {}))
                    for h in await self._query(vector, None, wide, 0.0, False)]
            for section in sections:
                own = [h for h in hits if h.payload.get("section") == section]
                enough = min(limit, len(self._sections.get(section, ())))
                if section not in found and (len(own) >= enough or len(hits) < wide):
                    found[section] = own[:limit]
            wide *= _LOCAL_WIDEN
        return found

    async def _batch(self, queries: Sequence[tuple[list[float], str]], limit: int) -> list[list[VectorHit]]:
        from qdrant_client import models

        requests = [models.QueryRequest(query=vector, filter=self._filter(section=section), limit=limit,
                                        with_payload=_HIT_KEYS) for vector, section in queries]
        async with _mapped("search"):
            responses = await self._client.query_batch_points(self._collection, requests=requests)
        return [[VectorHit(str(p.id), float(p.score), dict(p.payload or {})) for p in r.points] for r in responses]

    async def _score_few(self, vector: list[float], ids: list[str], limit: int,
                         min_score: float) -> list[VectorHit]:
        """A small section scored directly: fetch its points by id and rank them by cosine."""
        if not ids:
            return []
        async with _mapped("retrieve"):
            records = await self._client.retrieve(self._collection, ids, with_payload=True, with_vectors=True)
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        hits = []
        for r in records:
            stored = list(r.vector or ())
            score = sum(a * b for a, b in zip(vector, stored, strict=False)) / (
                norm * (math.sqrt(sum(x * x for x in stored)) or 1.0))
            if not min_score or score >= min_score:  # as query_points: 0 means no threshold
                hits.append(VectorHit(str(r.id), score, dict(r.payload or {})))
        return sorted(hits, key=lambda h: (-h.score, h.id))[:limit]

    async def _query(self, vector: list[float], section: str | None, limit: int,
                     min_score: float, payload: bool | list[str] = True) -> list[VectorHit]:
        async with _mapped("search"):
            response = await self._client.query_points(self._collection, query=vector, limit=limit,
                                                       query_filter=self._filter(section=section),
                                                       score_threshold=min_score or None, with_payload=payload)
        return [VectorHit(str(p.id), float(p.score), dict(p.payload or {})) for p in response.points]

    async def by_incident(self, incident_id: str, section: str | None = None) -> list[VectorHit]:
        if self._local_ids is not None:  # local mode scans every payload for a filter: fetch by id instead
            ids = sorted(p for p, s in self._local_ids.get(incident_id, {}).items() if not section or s == section)
            async with _mapped("retrieve"):
                records = await self._client.retrieve(self._collection, ids, with_payload=True) if ids else []
            return sorted((VectorHit(str(r.id), 1.0, dict(r.payload or {})) for r in records), key=lambda h: h.id)
        hits: list[VectorHit] = []
        offset = None
        async with _mapped("scroll"):
            while True:
                records, offset = await self._client.scroll(
                    self._collection, scroll_filter=self._filter(incident_id=incident_id, section=section),
                    limit=_SCROLL_PAGE, offset=offset, with_payload=True)
                hits += [VectorHit(str(r.id), 1.0, dict(r.payload or {})) for r in records]
                if offset is None:
                    return sorted(hits, key=lambda h: h.id)

    async def count(self, section: str | None = None) -> int:
        async with _mapped("count"):
            result = await self._client.count(self._collection, count_filter=self._filter(section=section), exact=True)
        return int(result.count)

"""Vector backend: Qdrant through qdrant-client (server URL, or local mode at a path); the only importer.

One collection; the payload carries `section`, `incident_id` and the node name, so one incident's
points can be replaced as a whole and searches can be restricted to a section.
"""

from __future__ import annotations

import logging
import ssl
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hummingbird_agent.bamboo.stores.base import VectorHit, VectorPoint, address
from hummingbird_agent.bamboo.stores.section_matrix import SectionMatrix, unit_queries, unit_rows
from hummingbird_agent.errors import ConfigError, PermanentError, TransientError

log = logging.getLogger(__name__)
_SCROLL_PAGE = 256
# Payload keys a multi-section search returns: what the similarity step reads (not the stored texts,
# whose copies would cost more than the scoring in local mode).
_HIT_KEYS = ["section", "incident_id", "name", "project"]


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

    def __init__(self, collection: str, dimensions: int | None, url: str | None = None, path: str | None = None,
                 api_key: str | None = None, tls: ssl.SSLContext | None = None) -> None:
        """`dimensions` None takes the existing collection's size (re-indexing reads a collection of another);
        `tls` verifies an https server (the deployment's CA bundle), None the system's trust."""
        if not url and not path:
            raise ConfigError("bamboo.vectors: give a Qdrant server url or a local path")
        self._collection = collection
        self._dimensions = dimensions
        self._url, self._path, self._api_key, self._tls = url, path, api_key, tls
        self._client: Any = None
        # Local mode only: incident id -> its point ids. Local mode scans every payload in Python for a
        # filtered delete; this index (built once at open, kept on write) makes replacing one incident
        # cost its own points. Local mode locks its folder to one process, so nothing else writes.
        self._local_ids: dict[str, dict[str, str]] | None = None  # incident id -> {point id: section}
        # Local mode: section -> its unit vectors as one matrix. Local mode's filtered search tests each
        # payload in Python and makes an object per hit (seconds at 500k points); a section search here is
        # one matrix product over this second copy of the vectors (float32 rows × dimensions).
        self._sections: dict[str, SectionMatrix] = {}
        # Local mode: point id -> its `_HIT_KEYS` payload, so a scan returns bare scores (copying each hit's
        # payload out of the local store costs more than scoring it).
        self._hit_keys: dict[str, dict[str, str]] = {}

    async def open(self) -> None:
        from qdrant_client import AsyncQdrantClient

        if self._url:
            # No version check: it runs in a background thread and prints a warning of its own when the server
            # is unreachable; open() below reports that as one line naming the address.
            verify: dict[str, Any] = {"verify": self._tls} if self._tls else {}
            self._client = AsyncQdrantClient(url=self._url, api_key=self._api_key, check_compatibility=False, **verify)
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
        try:
            await self._prepare()
        except BaseException:
            await self.aclose()  # a refused open (another size, an unreachable server) keeps no lock or socket
            raise
        if self._path and self._path != ":memory:":
            _relax_local_sync(self._client, self._collection)

    async def _prepare(self) -> None:
        async with _mapped(f"open at {address(self._url)}" if self._url else "open"):
            if not await self._client.collection_exists(self._collection):
                await self._create(self._dimensions or 1)
            else:
                await self._check_size()
                await self._index()
            if not self._url:
                self._local_ids = await self._incident_ids()

    async def _incident_ids(self) -> dict[str, dict[str, str]]:
        ids: dict[str, dict[str, str]] = defaultdict(dict)
        offset = None
        while True:
            records, offset = await self._client.scroll(self._collection, limit=_SCROLL_PAGE * 16, offset=offset,
                                                        with_payload=_HIT_KEYS, with_vectors=True)
            for r in records:
                payload = r.payload or {}
                ids[str(payload.get("incident_id", ""))][str(r.id)] = self._remember(str(r.id), payload)
            self._add_rows([str(r.id) for r in records], [r.vector for r in records])
            if offset is None:
                return ids

    async def _create(self, dimensions: int) -> None:
        from qdrant_client import models

        self._dimensions = dimensions
        await self._client.create_collection(
            self._collection, vectors_config=models.VectorParams(size=dimensions, distance=models.Distance.COSINE))
        await self._index()

    async def _index(self) -> None:
        """A server's payload indexes for the section, incident and project filters (local mode ignores them, and
        warns)."""
        from qdrant_client import models

        for key in ("section", "incident_id", "project") if self._url else ():
            await self._client.create_payload_index(self._collection, key, models.PayloadSchemaType.KEYWORD)

    async def reset(self, dimensions: int) -> None:
        """Delete every point and make the collection hold `dimensions`-sized vectors (re-indexing)."""
        async with _mapped("reset"):
            await self._client.delete_collection(self._collection)
            await self._create(dimensions)
        self._sections.clear()
        self._hit_keys.clear()
        self._local_ids = {} if self._local_ids is not None else None

    async def _check_size(self) -> None:
        info = await self._client.get_collection(self._collection)
        size = info.config.params.vectors.size
        self._dimensions = self._dimensions or size
        if size != self._dimensions:
            raise ConfigError(f"vector collection {self._collection} holds {size}-d vectors, "
                              f"the embedder makes {self._dimensions}-d ones (after changing bamboo.embeddings, "
                              "run `bamboo reindex` with the service stopped)")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _filter(self, among: frozenset[str] | None = None, **equal: str | None) -> Any:
        """Payload filter: these fields equal (a None or "" value is no condition) and, with `among`, the point's
        project one of those (a point with no project matches none)."""
        from qdrant_client import models

        must: list[models.Condition] = [models.FieldCondition(key=k, match=models.MatchValue(value=v))
                                        for k, v in equal.items() if v]
        if among is not None:
            must.append(models.FieldCondition(key="project", match=models.MatchAny(any=sorted(among))))
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
                    self._sections[section].drop(pid)
                    self._hit_keys.pop(pid, None)
                self._local_ids[gid] = {p.id: self._remember(p.id, {**p.payload, "incident_id": gid}) for p in batch}
            news = [p for batch in points.values() for p in batch]
            self._add_rows([p.id for p in news], [p.vector for p in news])

    def _remember(self, pid: str, payload: Mapping[str, Any]) -> str:
        """Keep the point's `_HIT_KEYS` payload; returns its section."""
        self._hit_keys[pid] = {k: str(payload.get(k, "")) for k in _HIT_KEYS}
        return self._hit_keys[pid]["section"]

    def _add_rows(self, ids: list[str], vectors: list[Any]) -> None:
        """Local mode: put remembered points' vectors into their section's matrix. Vectors read back at open
        are normalised again: local mode reloads the vectors as written, not unit ones."""
        by_section: dict[str, list[int]] = defaultdict(list)
        for i, pid in enumerate(ids):
            by_section[self._hit_keys[pid]["section"]].append(i)
        size = self._dimensions or 0  # known once open
        for section, at in by_section.items():
            rows = unit_rows([vectors[i] for i in at], size)
            self._sections.setdefault(section, SectionMatrix(size)).add(
                [ids[i] for i in at], rows, [self._hit_keys[ids[i]]["project"] for i in at])

    def _selector(self, incident_ids: list[str]) -> Any:
        from qdrant_client import models

        if self._local_ids is not None:
            known: list[models.ExtendedPointId] = sorted(i for g in incident_ids for i in self._local_ids.get(g, ()))
            return models.PointIdsList(points=known) if known else None  # local mode refuses an empty list
        return models.FilterSelector(filter=models.Filter(must=[models.FieldCondition(
            key="incident_id", match=models.MatchAny(any=incident_ids))]))

    async def search(self, vector: list[float], section: str | None, limit: int,
                     min_score: float = 0.0, among: frozenset[str] | None = None) -> list[VectorHit]:
        if not section or self._local_ids is None:
            return await self._query(vector, section, limit, min_score, among)
        matrix = self._sections.get(section)
        [ranked] = matrix.top(unit_queries([vector]), limit, min_score, among) if matrix else [[]]
        if not ranked:
            return []
        async with _mapped("retrieve"):
            records = await self._client.retrieve(self._collection, [pid for pid, _ in ranked], with_payload=True)
        payloads = {str(r.id): dict(r.payload or {}) for r in records}
        return [VectorHit(pid, score, payloads.get(pid, {})) for pid, score in ranked]

    async def search_sections(self, vectors: Sequence[list[float]], sections: Sequence[str],
                              limit: int, among: frozenset[str] | None = None) -> list[list[VectorHit]]:
        """For each vector and each of `sections` (in that order), the section's best `limit` hits, as
        `search` gives them, with the payload's section, incident id and name only. A server answers all of
        them in one batch request; local mode with one matrix product per section for all the vectors."""
        if self._local_ids is None:
            queries = [(vector, section) for vector in vectors for section in sections]
            return await self._batch(queries, limit, among)
        if not vectors:
            return []
        queries = unit_queries(vectors)
        per_section: list[list[list[tuple[str, float]]]] = [
            self._sections[s].top(queries, limit, among=among) if s in self._sections else [[] for _ in vectors]
            for s in sections]
        return [[VectorHit(pid, score, self._hit_keys.get(pid, {})) for pid, score in per_section[k][j]]
                for j in range(len(vectors)) for k in range(len(sections))]

    async def _batch(self, queries: Sequence[tuple[list[float], str]], limit: int,
                     among: frozenset[str] | None) -> list[list[VectorHit]]:
        from qdrant_client import models

        requests = [models.QueryRequest(query=vector, filter=self._filter(among, section=section), limit=limit,
                                        with_payload=_HIT_KEYS) for vector, section in queries]
        async with _mapped("search"):
            responses = await self._client.query_batch_points(self._collection, requests=requests)
        return [[VectorHit(str(p.id), float(p.score), dict(p.payload or {})) for p in r.points] for r in responses]

    async def _query(self, vector: list[float], section: str | None, limit: int,
                     min_score: float, among: frozenset[str] | None) -> list[VectorHit]:
        async with _mapped("search"):
            response = await self._client.query_points(self._collection, query=vector, limit=limit,
                                                       query_filter=self._filter(among, section=section),
                                                       score_threshold=min_score or None, with_payload=True)
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

"""Vector backend: Qdrant through qdrant-client (server URL, or local mode at a path); the only importer.

One collection; the payload carries `section`, `incident_id` and the node name, so one incident's
points can be replaced as a whole and searches can be restricted to a section.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hummingbird_agent.bamboo.stores.base import VectorHit, VectorPoint, address
from hummingbird_agent.errors import ConfigError, PermanentError, TransientError

log = logging.getLogger(__name__)
_SCROLL_PAGE = 256


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
        from qdrant_client import models

        async with _mapped("replace"):
            await self._client.delete(self._collection, points_selector=models.FilterSelector(
                filter=self._filter(incident_id=incident_id)), wait=True)
            if points:
                structs = [models.PointStruct(id=p.id, vector=list(p.vector),
                                              payload={**p.payload, "incident_id": incident_id}) for p in points]
                await self._client.upsert(self._collection, wait=True, points=structs)

    async def search(self, vector: list[float], section: str | None, limit: int,
                     min_score: float = 0.0) -> list[VectorHit]:
        async with _mapped("search"):
            response = await self._client.query_points(self._collection, query=vector, limit=limit,
                                                       query_filter=self._filter(section=section),
                                                       score_threshold=min_score or None, with_payload=True)
        return [VectorHit(str(p.id), float(p.score), dict(p.payload or {})) for p in response.points]

    async def by_incident(self, incident_id: str, section: str | None = None) -> list[VectorHit]:
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

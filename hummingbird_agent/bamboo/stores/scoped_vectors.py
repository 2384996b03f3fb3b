"""A project's view of the vector store: searches among the points of its projects only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hummingbird_agent.bamboo.stores.base import VectorHit, VectorPoint, VectorStore


class ScopedVectors:
    """VectorStore searches among the points of `projects` only (a payload filter applied before ranking)."""

    def __init__(self, store: VectorStore, projects: frozenset[str]) -> None:
        self._store, self._projects = store, projects

    async def open(self) -> None:
        """Nothing: the stores under a view are opened and closed by their owner."""

    async def aclose(self) -> None:
        """Nothing: the stores under a view are opened and closed by their owner."""

    async def replace_incident(self, incident_id: str, points: list[VectorPoint]) -> None:
        await self._store.replace_incident(incident_id, points)

    async def replace_incidents(self, points: Mapping[str, list[VectorPoint]]) -> None:
        await self._store.replace_incidents(points)

    def _among(self, among: frozenset[str] | None) -> frozenset[str]:
        return self._projects if among is None else self._projects & among

    async def search(self, vector: list[float], section: str | None, limit: int,
                     min_score: float = 0.0, among: frozenset[str] | None = None) -> list[VectorHit]:
        return await self._store.search(vector, section, limit, min_score, self._among(among))

    async def search_sections(self, vectors: Sequence[list[float]], sections: Sequence[str],
                              limit: int, among: frozenset[str] | None = None) -> list[list[VectorHit]]:
        return await self._store.search_sections(vectors, sections, limit, self._among(among))

    async def by_incident(self, incident_id: str, section: str | None = None) -> list[VectorHit]:
        return [h for h in await self._store.by_incident(incident_id, section)
                if h.payload.get("project") in self._projects]

    async def count(self, section: str | None = None) -> int:
        return await self._store.count(section)

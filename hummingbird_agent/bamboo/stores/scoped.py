"""A project's view of the knowledge base: the stores as the incidents learned from its projects (itself and the
projects of its share groups) make them, and nothing of any other project.

An incident is its project's (the graph's incident record and every vector point of it keep the project); an
incident without one is nobody's. The vector search filters on the project before ranking; the graph's causes,
fixes and procedures are kept when a visible incident learned them, with their support cut to the visible
incidents. Writes go to the stores unchanged: a view is for the reads made on behalf of one project.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import PROJECT_FEATURE, KnowledgeGraph, NodeType
from hummingbird_agent.bamboo.stores.base import (
    CauseRow,
    ClueCause,
    EdgeRow,
    GraphCounts,
    GraphStore,
    NodeRow,
    Stores,
    VectorHit,
    VectorPoint,
    VectorStore,
)

SAMPLE = budgets.BAMBOO_CAUSE_SAMPLE_INCIDENTS


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose knowledge a run reads: `project` (the run's own, the ranking's project clue) and `projects`, every
    project it may read (itself and its share groups; empty for a run without a project)."""

    project: str
    projects: frozenset[str]

    @classmethod
    def of(cls, project: str, share_groups: Sequence[Sequence[str]] = ()) -> Scope:
        if not project:
            return cls("", frozenset())
        return cls(project, frozenset({project, *(p for group in share_groups if project in group for p in group)}))


@dataclass(frozen=True, slots=True)
class _Visible:
    incidents: frozenset[str]
    causes: Mapping[str, tuple[str, ...]]  # cause name -> its visible incidents, sorted


class ScopedGraph:
    """GraphStore reads of the incidents of `scope.projects` only. The visible incidents are read once, at the
    first read (a view lives for one run)."""

    def __init__(self, store: GraphStore, scope: Scope) -> None:
        self._store, self._scope = store, scope
        self._seen: _Visible | None = None

    async def _visible(self) -> _Visible:
        if self._seen is None:
            found = await self._store.project_incidents(sorted(self._scope.projects))
            causes: dict[str, list[str]] = {}
            for gid, names in sorted(found.items()):
                for name in names:
                    causes.setdefault(name, []).append(gid)
            self._seen = _Visible(frozenset(found), {k: tuple(v) for k, v in causes.items()})
        return self._seen

    def _cause(self, row: NodeRow, seen: _Visible) -> NodeRow | None:
        """The cause as the visible incidents make it (None when none learned it); its sample keeps the store's
        order of the visible incidents it holds, then the rest of them."""
        mine = seen.causes.get(row.name)
        if not mine:
            return None
        kept = [gid for gid in row.incidents if gid in seen.incidents]
        sample = tuple(dict.fromkeys([*kept, *mine]))[:SAMPLE]
        return dataclasses.replace(row, incidents=sample, frequency=len(mine))

    @staticmethod
    def _supported(row: Any, seen: _Visible) -> Any:
        """A node or edge row with its support cut to the visible incidents; None when none supports it."""
        kept = tuple(gid for gid in row.incidents if gid in seen.incidents)
        return dataclasses.replace(row, incidents=kept, frequency=len(kept)) if kept else None

    async def open(self) -> None:
        """Nothing: the stores under a view are opened and closed by their owner."""

    async def aclose(self) -> None:
        """Nothing: the stores under a view are opened and closed by their owner."""

    async def replace_incident(self, incident_id: str, graph: KnowledgeGraph) -> bool:
        self._seen = None
        return await self._store.replace_incident(incident_id, graph)

    async def replace_incidents(self, items: Sequence[tuple[str, KnowledgeGraph]]) -> list[bool]:
        self._seen = None
        return await self._store.replace_incidents(items)

    async def remove_incident(self, incident_id: str) -> None:
        if incident_id in (await self._visible()).incidents:
            self._seen = None
            await self._store.remove_incident(incident_id)

    async def incident_ids(self) -> list[str]:
        return sorted((await self._visible()).incidents)

    async def contribution(self, incident_id: str) -> dict[str, Any] | None:
        return await self._store.contribution(incident_id) if incident_id in (await self._visible()).incidents \
            else None

    async def counts(self) -> GraphCounts:
        return await self._store.counts()

    async def count(self, node_type: str) -> int:
        # The clues' specificity corpus (a number, not a row): as over the whole graph, as `shared_by` is.
        return await self._store.count(node_type)

    async def nodes(self, node_type: str) -> list[NodeRow]:
        seen = await self._visible()
        rows = [self._cause(r, seen) if node_type == NodeType.CAUSE.value else self._supported(r, seen)
                for r in await self._store.nodes(node_type)]
        return [r for r in rows if r is not None]

    async def names(self, node_type: str) -> list[str]:
        return [r.name for r in await self.nodes(node_type)]

    async def edges(self, rel_type: str) -> list[EdgeRow]:
        seen = await self._visible()
        return [r for r in (self._supported(r, seen) for r in await self._store.edges(rel_type)) if r is not None]

    async def top_causes(self, limit: int) -> list[CauseRow]:
        causes = sorted(await self.causes(list((await self._visible()).causes)),
                        key=lambda c: (-c.frequency, c.name))[:limit]
        fixes: dict[str, list[str]] = {}
        for cause, row in await self.linked(NodeType.CAUSE.value, "solved_by", NodeType.RESOLUTION.value,
                                            [c.name for c in causes]):
            fixes.setdefault(cause, []).append(row.name)
        return [CauseRow(c.name, c.description, c.frequency, c.confidence, tuple(sorted(fixes.get(c.name, ()))))
                for c in causes]

    async def clue_causes(self, clues: Mapping[str, Sequence[str]]) -> list[ClueCause]:
        seen = await self._visible()
        hits = [(hit, self._cause(hit.cause, seen)) for hit in await self._store.clue_causes(clues)]
        return [dataclasses.replace(hit, cause=row) for hit, row in hits if row is not None]

    async def linked_support(self, source_type: str, rel_type: str, target_type: str,
                             names: Sequence[str]) -> list[tuple[str, NodeRow, tuple[str, ...]]]:
        seen = await self._visible()
        found = await self._store.linked_support(source_type, rel_type, target_type, names)
        return [(source, row, kept) for source, row, support in found
                if (kept := tuple(g for g in support if g in seen.incidents))]

    async def linked(self, source_type: str, rel_type: str, target_type: str,
                     names: Sequence[str]) -> list[tuple[str, NodeRow]]:
        # Only along edges a visible incident learned: another project's fix of a cause of the same name is not.
        found = await self.linked_support(source_type, rel_type, target_type, names)
        return sorted(((source, row) for source, row, _ in found), key=lambda pair: (pair[0], pair[1].name))

    async def project_incidents(self, projects: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return await self._store.project_incidents(sorted(self._scope.projects.intersection(projects)))

    async def causes(self, names: Sequence[str]) -> list[NodeRow]:
        seen = await self._visible()
        rows = [self._cause(r, seen) for r in await self._store.causes([n for n in names if n in seen.causes])]
        return [r for r in rows if r is not None]

    async def feature_lines(self, feature: str, limit: int) -> list[str]:
        # Only a readable project's own feature: the symptoms of `job=build` are every project's.
        readable = feature.startswith(PROJECT_FEATURE) and feature.removeprefix(PROJECT_FEATURE) in self._scope.projects
        return await self._store.feature_lines(feature, limit) if readable else []

    async def causes_of_incidents(self, incident_ids: Sequence[str]) -> dict[str, list[NodeRow]]:
        seen = await self._visible()
        found = await self._store.causes_of_incidents([g for g in incident_ids if g in seen.incidents])
        return {gid: [r for r in (self._cause(c, seen) for c in rows) if r is not None] for gid, rows in found.items()}


class ScopedVectors:
    """VectorStore searches among the points of `scope.projects` only (a payload filter applied before ranking)."""

    def __init__(self, store: VectorStore, scope: Scope) -> None:
        self._store, self._projects = store, scope.projects

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


def scoped(stores: Stores, scope: Scope) -> Stores:
    """The stores as `scope` may read them."""
    return Stores(ScopedGraph(stores.graph, scope), ScopedVectors(stores.vectors, scope), stores.embedder)

"""A project's view of the knowledge base: the stores as the incidents learned from its projects (itself and the
projects of its share groups) make them, and nothing of any other project.

An incident is its project's (the graph's incident record and every vector point of it keep the project), and
so is every node it learned: the graph keys nodes by project (owners.py), so another project's node of the same
name, its description and properties, is another node this view never reads. An incident without a project is
nobody's. The view asks for its projects' keys, shows plain names, and joins the nodes of one name its share
group's projects learned apart. The vector search filters on the project before ranking. Writes go to the stores
unchanged (the graph keys them by the incident's own project): a view is for the reads made for one project.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import PROJECT_FEATURE, KnowledgeGraph, NodeType
from hummingbird_agent.bamboo.stores import owners
from hummingbird_agent.bamboo.stores.base import (
    CauseRow,
    ClueCause,
    EdgeRow,
    GraphCounts,
    GraphStore,
    NodeRow,
    Stores,
)
from hummingbird_agent.bamboo.stores.scoped_vectors import ScopedVectors

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
    causes: Mapping[str, tuple[str, ...]]  # plain cause name -> its visible incidents, sorted


def _joined(rows: Iterable[NodeRow]) -> list[NodeRow]:
    """Nodes of one name from several projects of a share group as one: support joined, confidence weighted by
    it, the first project's (in key order) description and properties."""
    out: dict[str, NodeRow] = {}
    for row in rows:
        first = out.get(row.name)
        if first is None:
            out[row.name] = row
            continue
        total = first.frequency + row.frequency
        mean = (first.confidence * first.frequency + row.confidence * row.frequency) / total if total else 0.0
        out[row.name] = dataclasses.replace(first, incidents=tuple(dict.fromkeys([*first.incidents, *row.incidents])),
                                            frequency=total, confidence=round(mean, 6))
    return list(out.values())


def _once(rows: Iterable[NodeRow]) -> list[NodeRow]:
    """Causes as the view makes them (support already the whole scope's): one per name, the first."""
    out: dict[str, NodeRow] = {}
    for row in rows:
        out.setdefault(row.name, row)
    return list(out.values())


class ScopedGraph:
    """GraphStore reads of the nodes of `scope.projects` only. The visible incidents are read once, at the first
    read (a view lives for one run)."""

    def __init__(self, store: GraphStore, scope: Scope) -> None:
        self._store, self._scope = store, scope
        self._seen: _Visible | None = None

    async def _visible(self) -> _Visible:
        if self._seen is None:
            found = await self._store.project_incidents(sorted(self._scope.projects))
            causes: dict[str, list[str]] = {}
            for gid, names in sorted(found.items()):
                for name in names:
                    causes.setdefault(owners.plain(name), []).append(gid)
            self._seen = _Visible(frozenset(found), {k: tuple(v) for k, v in causes.items()})
        return self._seen

    def _mine(self, stored: str) -> bool:
        return owners.owner(stored) in self._scope.projects

    def _keys(self, names: Iterable[str]) -> list[str]:
        return owners.keys(self._scope.projects, names)

    def _cause(self, row: NodeRow, seen: _Visible, sample: int = SAMPLE) -> NodeRow | None:
        """The cause as the visible incidents make it (None when it is not this scope's or none learned it); its
        sample keeps the store's order of the visible incidents it holds, then the rest of them (`sample` 0: all)."""
        mine = seen.causes.get(owners.plain(row.name)) if self._mine(row.name) else None
        if not mine:
            return None
        kept = [gid for gid in row.incidents if gid in seen.incidents]
        support = tuple(dict.fromkeys([*kept, *mine]))[:sample or None]
        return dataclasses.replace(row, name=owners.plain(row.name), incidents=support, frequency=len(mine))

    def _node(self, row: NodeRow, seen: _Visible) -> NodeRow | None:
        """A node of this scope with its support cut to the visible incidents; None when none supports it."""
        kept = tuple(gid for gid in row.incidents if gid in seen.incidents) if self._mine(row.name) else ()
        return dataclasses.replace(row, name=owners.plain(row.name), incidents=kept, frequency=len(kept)) \
            if kept else None

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
        found = await self._store.contribution(incident_id) if incident_id in (await self._visible()).incidents \
            else None
        return owners.unkeyed(found) if found is not None else None

    async def counts(self) -> GraphCounts:
        return await self._store.counts()

    async def count(self, node_type: str) -> int:
        # The clues' specificity corpus (a number, not a row): as over the whole graph, as `shared_by` is.
        return await self._store.count(node_type)

    async def nodes(self, node_type: str) -> list[NodeRow]:
        seen = await self._visible()
        rows = [r for r in await self._store.nodes(node_type) if self._mine(r.name)]
        if node_type == NodeType.CAUSE.value:
            return _once(r for r in (self._cause(r, seen, 0) for r in rows) if r is not None)  # the whole read
        return sorted(_joined(r for r in (self._node(r, seen) for r in rows) if r is not None), key=lambda r: r.name)

    async def names(self, node_type: str) -> list[str]:
        return sorted({r.name for r in await self.nodes(node_type)})

    async def edges(self, rel_type: str) -> list[EdgeRow]:
        seen = await self._visible()
        out: dict[tuple[str, str, str, str], EdgeRow] = {}
        for r in await self._store.edges(rel_type):
            kept = tuple(g for g in r.incidents if g in seen.incidents) if self._mine(r.source) else ()
            if not kept:
                continue
            row = dataclasses.replace(r, source=owners.plain(r.source), target=owners.plain(r.target), incidents=kept,
                                      frequency=len(kept))
            at = (row.source_type, row.source, row.target_type, row.target)
            first = out.setdefault(at, row)
            if first is not row:
                out[at] = dataclasses.replace(first, incidents=(*first.incidents, *kept),
                                              frequency=first.frequency + len(kept))
        return list(out.values())

    async def top_causes(self, limit: int) -> list[CauseRow]:
        causes = sorted(await self.causes(list((await self._visible()).causes)),
                        key=lambda c: (-c.frequency, c.name))[:limit]
        fixes: dict[str, list[str]] = {}
        for cause, row in await self.linked(NodeType.CAUSE.value, "solved_by", NodeType.RESOLUTION.value,
                                            [c.name for c in causes]):
            fixes.setdefault(cause, []).append(row.name)
        return [CauseRow(c.name, c.description, c.frequency, c.confidence, tuple(sorted(set(fixes.get(c.name, ())))))
                for c in causes]

    async def clue_causes(self, clues: Mapping[str, Sequence[str]]) -> list[ClueCause]:
        seen = await self._visible()
        out: dict[tuple[str, str, str], ClueCause] = {}
        for hit in await self._store.clue_causes({label: self._keys(names) for label, names in clues.items()}):
            row = self._cause(hit.cause, seen)
            if row is None:
                continue
            found = dataclasses.replace(hit, clue=owners.plain(hit.clue), cause=row)
            at = (found.clue_type, found.clue, row.name)
            # One clue of a share group's projects: the most causes any of them reaches is its specificity.
            if at not in out or out[at].shared_by < found.shared_by:
                out[at] = found
        return list(out.values())

    async def linked_support(self, source_type: str, rel_type: str, target_type: str,
                             names: Sequence[str]) -> list[tuple[str, NodeRow, tuple[str, ...]]]:
        seen = await self._visible()
        found = await self._store.linked_support(source_type, rel_type, target_type, self._keys(names))
        out: dict[tuple[str, str], tuple[str, NodeRow, tuple[str, ...]]] = {}
        for source, row, support in found:
            kept = tuple(g for g in support if g in seen.incidents)
            if not kept or not self._mine(row.name):
                continue
            at = (owners.plain(source), owners.plain(row.name))
            before = out.get(at)
            out[at] = (at[0], before[1], (*before[2], *kept)) if before else \
                (at[0], dataclasses.replace(row, name=at[1]), kept)
        return list(out.values())

    async def linked(self, source_type: str, rel_type: str, target_type: str,
                     names: Sequence[str]) -> list[tuple[str, NodeRow]]:
        # Only along edges a visible incident learned: another project's fix of a cause of the same name is not.
        found = await self.linked_support(source_type, rel_type, target_type, names)
        return sorted(((source, row) for source, row, _ in found), key=lambda pair: (pair[0], pair[1].name))

    async def project_incidents(self, projects: Sequence[str]) -> dict[str, tuple[str, ...]]:
        found = await self._store.project_incidents(sorted(self._scope.projects.intersection(projects)))
        return {gid: tuple(owners.plain(n) for n in names) for gid, names in found.items()}

    async def causes(self, names: Sequence[str]) -> list[NodeRow]:
        seen = await self._visible()
        rows = await self._store.causes(self._keys(n for n in names if n in seen.causes))
        return _once(r for r in (self._cause(r, seen) for r in rows) if r is not None)

    async def feature_lines(self, feature: str, limit: int) -> list[str]:
        # Only a readable project's own feature: the symptoms of `job=build` are every project's.
        project = feature.removeprefix(PROJECT_FEATURE)
        readable = feature.startswith(PROJECT_FEATURE) and project in self._scope.projects
        return await self._store.feature_lines(owners.key(project, feature), limit) if readable else []

    async def causes_of_incidents(self, incident_ids: Sequence[str]) -> dict[str, list[NodeRow]]:
        seen = await self._visible()
        found = await self._store.causes_of_incidents([g for g in incident_ids if g in seen.incidents])
        return {gid: _once(r for r in (self._cause(c, seen) for c in rows) if r is not None)
                for gid, rows in found.items()}


def scoped(stores: Stores, scope: Scope) -> Stores:
    """The stores as `scope` may read them."""
    return Stores(ScopedGraph(stores.graph, scope), ScopedVectors(stores.vectors, scope.projects), stores.embedder)

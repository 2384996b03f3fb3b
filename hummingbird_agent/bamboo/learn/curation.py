"""Curating what was learned: list the incidents, show one incident's contribution, remove a wrong one.

Removing withdraws the incident from the graph (elements only it supports are deleted; shared ones lose its
support, frequency and confidence, and clue specificity is recounted) and deletes its vector points; the
effect is read back before it is reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent.bamboo.incident_graph import NodeType
from hummingbird_agent.bamboo.stores import owners
from hummingbird_agent.bamboo.stores.base import Stores, VectorStore
from hummingbird_agent.errors import PermanentError, TransientError

# Incidents whose causes one lookup reads when listing (one statement per page, whatever the store's size).
_LIST_PAGE = 500


@dataclass(frozen=True, slots=True)
class IncidentSummary:
    incident_id: str
    causes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IncidentDetail:
    """One incident's contribution: its nodes (type, name), edges (source, relationship, target) and the
    number of vector points per section."""

    incident_id: str
    nodes: tuple[tuple[str, str], ...]
    edges: tuple[tuple[str, str, str], ...]
    points: dict[str, int]


async def list_incidents(stores: Stores) -> list[IncidentSummary]:
    ids = await stores.graph.incident_ids()
    out: list[IncidentSummary] = []
    for start in range(0, len(ids), _LIST_PAGE):
        page = ids[start:start + _LIST_PAGE]
        causes = await stores.graph.causes_of_incidents(page)
        out += [IncidentSummary(gid, tuple(owners.plain(c.name) for c in causes.get(gid, []))) for gid in page]
    return out


async def show_incident(stores: Stores, incident_id: str) -> IncidentDetail:
    """PermanentError (one line) when neither store knows the incident."""
    contribution = await stores.graph.contribution(incident_id)
    hits = await stores.vectors.by_incident(incident_id)
    if contribution is None and not hits:
        raise PermanentError(f"no learned incident {incident_id!r} (`bamboo incidents list` shows them)")
    return _detail(incident_id, owners.unkeyed(contribution or {"nodes": [], "edges": []}),
                   Counter(str(h.payload.get("section", "")) for h in hits))


def _detail(incident_id: str, contribution: dict[str, Any], points: Counter[str]) -> IncidentDetail:
    nodes = tuple((str(n["type"]), str(n["name"])) for n in contribution["nodes"])
    edges = tuple((str(e["src"]), str(e["group"][1]), str(e["tgt"])) for e in contribution["edges"])
    return IncidentDetail(incident_id, nodes, edges, dict(sorted(points.items())))


async def remove_incident(stores: Stores, incident_id: str,
                          also: Sequence[tuple[VectorStore, str]] = ()) -> IncidentDetail:
    """Withdraw the incident from both stores, and the points of `also`'s (store, id) pairs (its tool-selection
    memory), and check that nothing of it is left; returns what it had."""
    detail = await show_incident(stores, incident_id)
    await stores.graph.remove_incident(incident_id)
    left = [(stores.vectors, incident_id), *also]
    for vectors, key in left:
        await vectors.replace_incident(key, [])
    if await stores.graph.contribution(incident_id) is not None or any([await v.by_incident(k) for v, k in left]):
        raise TransientError(f"incident {incident_id}: still present after removal; run the command again")
    return detail


def render_detail(detail: IncidentDetail) -> str:
    causes = [name for kind, name in detail.nodes if kind == NodeType.CAUSE.value]
    lines = [f"incident {detail.incident_id}", "causes: " + ("; ".join(causes) or "none"),
             f"nodes ({len(detail.nodes)}):"]
    lines += [f"  {kind}: {name}" for kind, name in detail.nodes]
    lines.append(f"edges ({len(detail.edges)}):")
    lines += [f"  {src} -[{rel}]-> {tgt}" for src, rel, tgt in detail.edges]
    lines.append("vector points: " + (", ".join(f"{k} {v}" for k, v in detail.points.items()) or "none"))
    return "\n".join(lines)

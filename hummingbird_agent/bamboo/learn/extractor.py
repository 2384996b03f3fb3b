"""KnowledgeGraphExtractor: dispatches to the active strategy, then dedups and validates its graph.

Nobody talks to a strategy directly; every node leaves here with its stable id.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, Node, NodeType, RelType
from hummingbird_agent.bamboo.learn.incident_context import exploration_hints, with_fix_evidence
from hummingbird_agent.bamboo.strategies.base import ExtractionStrategy, IncidentInput

log = logging.getLogger(__name__)


def normalise(graph: KnowledgeGraph) -> KnowledgeGraph:
    """One node per (type, name) (the first keeps its fields, an empty description is filled in),
    every node with its stable id, and only schema-valid, non-duplicate edges between known nodes."""
    nodes: dict[tuple[NodeType, str], Node] = {}
    for node in graph.nodes:
        if not node.name:
            continue
        seen = nodes.get(node.key)
        if seen is None:
            nodes[node.key] = node.with_id()
        elif not seen.description and node.description:
            nodes[node.key] = replace(seen, description=node.description)
    edges: dict[tuple[NodeType, str, RelType, NodeType, str], Edge] = {}
    for edge in graph.edges:
        if not edge.allowed:
            log.warning("dropped edge outside the schema: %s -%s-> %s", edge.source[0], edge.type, edge.target[0])
        elif edge.source not in nodes or edge.target not in nodes:
            log.warning("dropped edge with an unknown endpoint: %s", edge.type)
        elif edge.source != edge.target:
            edges.setdefault(edge.key, edge)
    return KnowledgeGraph(tuple(nodes.values()), tuple(edges.values()))


class KnowledgeGraphExtractor:
    """The strategy resolved once; `extract` is read-only toward every store."""

    def __init__(self, strategy: ExtractionStrategy) -> None:
        self.strategy = strategy

    def incident_id(self, incident: IncidentInput) -> str:
        return self.strategy.incident_id(incident)

    async def prefetch_hints(self, incident: IncidentInput) -> dict[str, str]:
        return await self.strategy.prefetch_hints(incident)

    async def extract(self, incident: IncidentInput, doc_hints: Mapping[str, str] | None = None,
                      feedback: str = "", existing: Sequence[str] = ()) -> KnowledgeGraph:
        """The strategy's graph; exploration results reach it as hints, the fix lands on its Resolutions.
        `existing`: prompt lines of stored causes the model may reuse by name."""
        hints = {**(doc_hints or {}), **exploration_hints(incident.external_data)}
        graph = normalise(await self.strategy.extract(incident, hints, feedback, existing))
        return with_fix_evidence(graph, incident.fix)

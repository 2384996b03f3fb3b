"""The incident knowledge model: typed nodes and relationships, one incident's graph, stable ids.

Everything here is a frozen value; the stores persist it and the extractor builds it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

# Namespace of every id we derive, so ids never collide with another system's UUID5s.
_NAMESPACE = uuid.UUID("5b1f3c2e-8d4a-5e6f-9a7b-0c1d2e3f4a5b")


class NodeType(StrEnum):
    SYMPTOM = "Symptom"
    CAUSE = "Cause"
    RESOLUTION = "Resolution"
    PROCEDURE = "Procedure"
    TASK_FEATURE = "Task_Feature"
    TASK_CONTEXT = "Task_Context"
    ENVIRONMENT = "Environment"
    COMPONENT = "Component"


class RelType(StrEnum):
    INDICATE = "indicate"
    SOLVED_BY = "solved_by"
    CONTRIBUTE_TO = "contribute_to"
    ORIGINATED_FROM = "originated_from"
    ASSOCIATED_WITH = "associated_with"
    INVESTIGATED_BY = "investigated_by"
    DEPENDS_ON = "depends_on"


N, R = NodeType, RelType
# The only (source, relationship, target) triples the graph accepts; extraction drops anything else,
# and the query side (diagnosis) uses the same table, so producer and reader cannot disagree.
SCHEMA: frozenset[tuple[NodeType, RelType, NodeType]] = frozenset({
    (N.SYMPTOM, R.INDICATE, N.CAUSE),
    (N.CAUSE, R.SOLVED_BY, N.RESOLUTION),
    (N.TASK_FEATURE, R.CONTRIBUTE_TO, N.CAUSE),
    (N.TASK_FEATURE, R.CONTRIBUTE_TO, N.SYMPTOM),
    (N.COMPONENT, R.ORIGINATED_FROM, N.CAUSE),
    (N.ENVIRONMENT, R.ASSOCIATED_WITH, N.CAUSE),
    (N.TASK_FEATURE, R.ASSOCIATED_WITH, N.SYMPTOM),
    (N.CAUSE, R.INVESTIGATED_BY, N.PROCEDURE),
    (N.PROCEDURE, R.DEPENDS_ON, N.PROCEDURE),
})
# Prose nodes live in the vector store only; edges touching them are not stored in the graph.
VECTOR_ONLY: frozenset[NodeType] = frozenset({N.TASK_CONTEXT})


# The task feature the extraction strategy writes from the incident's own task data (never the model's
# text): `project=<path>`. It is what makes an incident its project's.
PROJECT_FEATURE = "project="


def incident_project(nodes: Iterable[tuple[str, str]]) -> str:
    """The project of an incident from its nodes' (type, name) pairs: the value of its only `project=` task
    feature; "" (the incident is nobody's, seen by no project) when it has none or several."""
    found = {name.removeprefix(PROJECT_FEATURE) for kind, name in nodes
             if kind == NodeType.TASK_FEATURE.value and name.startswith(PROJECT_FEATURE)}
    return found.pop() if len(found) == 1 else ""


def node_id(node_type: NodeType, name: str) -> str:
    """Stable id of a node: the same (type, name) gets the same id in every incident and run."""
    return str(uuid.uuid5(_NAMESPACE, f"node:{node_type.value}:{name}"))


def derive_id(*parts: str) -> str:
    """A stable UUID string for a tuple of strings (incident ids, vector point ids)."""
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


@dataclass(frozen=True, slots=True)
class Node:
    """One typed node. `name` is the merge key within its type; `props` holds type-specific fields."""

    type: NodeType
    name: str
    description: str = ""
    confidence: float = 1.0
    props: tuple[tuple[str, Any], ...] = ()
    id: str = ""

    @property
    def key(self) -> tuple[NodeType, str]:
        return (self.type, self.name)

    def prop(self, name: str, default: Any = None) -> Any:
        return dict(self.props).get(name, default)

    def props_json(self) -> str:
        return json.dumps(dict(self.props), sort_keys=True, default=str)

    def with_id(self) -> Node:
        return replace(self, id=node_id(self.type, self.name))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type.value, "name": self.name, "description": self.description,
                "confidence": self.confidence, "props": dict(self.props), "id": self.id}


def make_node(node_type: NodeType, name: str, description: str = "", confidence: float = 1.0,
              **props: Any) -> Node:
    """A node with its stable id; props are sorted so equal content gives equal values."""
    clean = tuple(sorted((k, v) for k, v in props.items() if v not in (None, "", [], {})))
    frozen = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in clean)
    return Node(node_type, name.strip(), description.strip(), confidence, frozen).with_id()


@dataclass(frozen=True, slots=True)
class Edge:
    """A relationship between two nodes, addressed by (type, name) of its endpoints."""

    source: tuple[NodeType, str]
    type: RelType
    target: tuple[NodeType, str]
    confidence: float = 1.0
    props: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> tuple[NodeType, str, RelType, NodeType, str]:
        return (self.source[0], self.source[1], self.type, self.target[0], self.target[1])

    @property
    def allowed(self) -> bool:
        return (self.source[0], self.type, self.target[0]) in SCHEMA

    def props_json(self) -> str:
        return json.dumps(dict(self.props), sort_keys=True, default=str)

    def to_json(self) -> dict[str, Any]:
        return {"source": [self.source[0].value, self.source[1]], "type": self.type.value,
                "target": [self.target[0].value, self.target[1]], "confidence": self.confidence,
                "props": dict(self.props)}


@dataclass(frozen=True, slots=True)
class KnowledgeGraph:
    """One incident's typed graph."""

    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()

    def of_type(self, node_type: NodeType) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.type is node_type)

    @property
    def project(self) -> str:
        return incident_project((n.type.value, n.name) for n in self.nodes)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for node in self.nodes:
            out[node.type.value] = out.get(node.type.value, 0) + 1
        return out

    def stored_part(self) -> KnowledgeGraph:
        """What the graph store keeps: no vector-only nodes and no edges touching them."""
        nodes = tuple(n for n in self.nodes if n.type not in VECTOR_ONLY)
        edges = tuple(e for e in self.edges if e.source[0] not in VECTOR_ONLY and e.target[0] not in VECTOR_ONLY)
        return KnowledgeGraph(nodes, edges)

    def to_json(self) -> dict[str, Any]:
        return {"nodes": [n.to_json() for n in self.nodes], "edges": [e.to_json() for e in self.edges]}


@dataclass(frozen=True, slots=True)
class Insight:
    """A text the vector store indexes: its section (a node type or `Summary`) and the node it describes."""

    section: str
    name: str
    content: str


@dataclass(frozen=True, slots=True)
class ExtractedKnowledge:
    """The accumulator's output for one incident."""

    incident_id: str
    graph: KnowledgeGraph
    summary: str
    insights: tuple[Insight, ...]
    metadata: tuple[tuple[str, Any], ...] = field(default=())
    log_text: str = ""
    """The incident's logs as the whole-log vector embeds them (bamboo.log_vector); only the vector is stored."""

    def meta(self) -> dict[str, Any]:
        return dict(self.metadata)

    def to_json(self) -> dict[str, Any]:
        return {"incident_id": self.incident_id, "graph": self.graph.to_json(), "summary": self.summary,
                "insights": [{"section": i.section, "name": i.name, "content": i.content} for i in self.insights],
                "metadata": self.meta()}

"""Store interfaces of the knowledge base: the incident graph and the vector index.

Backends implement these Protocols; the conformance suites in tests/bamboo run against each one.
"""

from __future__ import annotations

import contextlib
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hummingbird_agent.bamboo.embeddings import Embedder
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph
from hummingbird_agent.errors import ConfigError


@dataclass(frozen=True, slots=True)
class NodeRow:
    """A stored node: its support (incident ids) and mean confidence over them."""

    type: str
    name: str
    description: str
    incidents: tuple[str, ...]
    frequency: int
    confidence: float
    props: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EdgeRow:
    """A stored relationship with the incident ids that support it."""

    source_type: str
    source: str
    type: str
    target_type: str
    target: str
    incidents: tuple[str, ...]
    frequency: int
    confidence: float
    props: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CauseRow:
    name: str
    description: str
    frequency: int
    confidence: float
    resolutions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClueCause:
    """A cause reached from one clue; `shared_by` is how many distinct causes that clue reaches (kept
    on write, the document frequency of the clue's specificity)."""

    clue_type: str
    clue: str
    shared_by: int
    cause: NodeRow


@dataclass(frozen=True, slots=True)
class GraphCounts:
    nodes: dict[str, int]
    edges: dict[str, int]
    incidents: int
    unowned: int = 0  # incidents without a project: seen by no project's diagnosis or triage


class GraphStore(Protocol):
    """Typed incident graph. Nodes merge on (type, name); each incident's contribution is replaceable."""

    async def open(self) -> None: ...

    async def aclose(self) -> None: ...

    async def replace_incident(self, incident_id: str, graph: KnowledgeGraph) -> bool:
        """Make `graph` exactly this incident's contribution; False when it was already identical."""
        ...

    async def replace_incidents(self, items: Sequence[tuple[str, KnowledgeGraph]]) -> list[bool]:
        """`replace_incident` for each item, all in one write transaction."""
        ...

    async def remove_incident(self, incident_id: str) -> None:
        """Withdraw the incident: elements only it supports go, shared ones lose its support and confidence."""
        ...

    async def incident_ids(self) -> list[str]:
        """Every learned incident's id, sorted."""
        ...

    async def contribution(self, incident_id: str) -> dict[str, Any] | None:
        """What the incident contributed (`nodes` and `edges` rows as stored), or None when it is unknown."""
        ...

    async def counts(self) -> GraphCounts: ...

    async def count(self, node_type: str) -> int:
        """Nodes of one type (e.g. every cause: the corpus size of the clues' specificity)."""
        ...

    async def nodes(self, node_type: str) -> list[NodeRow]: ...

    async def names(self, node_type: str) -> list[str]:
        """The names of every node of a type, sorted, without their support lists (which grow with the
        store: reading them for every cause per learned incident made storing slower as the graph grew)."""
        ...

    async def edges(self, rel_type: str) -> list[EdgeRow]: ...

    async def top_causes(self, limit: int) -> list[CauseRow]: ...

    async def clue_causes(self, clues: Mapping[str, Sequence[str]]) -> list[ClueCause]:
        """Causes reached from these clue names (keyed by clue node type), by indexed lookups only:
        the cost follows the clues and what they reach, not the size of the graph. Each cause comes with
        the first BAMBOO_CAUSE_SAMPLE_INCIDENTS of its support (`frequency` counts them all)."""
        ...

    async def linked(self, source_type: str, rel_type: str, target_type: str,
                     names: Sequence[str]) -> list[tuple[str, NodeRow]]:
        """(source name, target) along one schema edge from the given source names, by key lookups
        (e.g. a candidate cause's resolutions, a project feature's symptoms). Targets come without their
        support (`incidents` empty; `frequency` and `confidence` kept): a target many sources share would
        cost as much as the graph."""
        ...

    async def linked_support(self, source_type: str, rel_type: str, target_type: str,
                             names: Sequence[str]) -> list[tuple[str, NodeRow, tuple[str, ...]]]:
        """`linked` with each edge's support: (source name, target, the incidents that learned the edge)."""
        ...

    async def project_incidents(self, projects: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The incidents learned from these projects, each with its causes' names, by a filter on the incident
        records (an incident with no project is in none)."""
        ...

    async def causes(self, names: Sequence[str]) -> list[NodeRow]:
        """The causes of these names that exist, by key lookups, each with a sample of its support."""
        ...

    async def feature_lines(self, feature: str, limit: int) -> list[str]:
        """The raw lines (descriptions) of the symptoms associated with a task feature, distinct, in the order
        of their symptoms' names, the first `limit` only (a project's symptoms grow with the store)."""
        ...

    async def causes_of_incidents(self, incident_ids: Sequence[str]) -> dict[str, list[NodeRow]]:
        """Each known incident's causes, by indexed lookups (for the similar-incident clue and the ranking's
        scored incidents); the causes come with a sample of their support, as from `clue_causes`."""
        ...


@dataclass(frozen=True, slots=True)
class VectorPoint:
    id: str
    vector: tuple[float, ...]
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class VectorHit:
    id: str
    score: float
    payload: dict[str, Any]


class VectorStore(Protocol):
    """One collection; sections and incident ids live in the payload."""

    async def open(self) -> None: ...

    async def aclose(self) -> None: ...

    async def replace_incident(self, incident_id: str, points: list[VectorPoint]) -> None:
        """Delete every point of this incident, then upsert `points`."""
        ...

    async def replace_incidents(self, points: Mapping[str, list[VectorPoint]]) -> None:
        """`replace_incident` for each incident id: one delete and one upsert for the whole batch."""
        ...

    async def search(self, vector: list[float], section: str | None, limit: int,
                     min_score: float = 0.0, among: frozenset[str] | None = None) -> list[VectorHit]:
        """The best `limit` points; with `among`, of the points whose payload `project` is one of those only
        (filtered before ranking; a point with no project is of none)."""
        ...

    async def search_sections(self, vectors: Sequence[list[float]], sections: Sequence[str],
                              limit: int, among: frozenset[str] | None = None) -> list[list[VectorHit]]:
        """`search(vector, section, limit, among=among)` for each vector and then each section, in one call; the
        hits' payload carries `section`, `incident_id`, `name` and `project` only."""
        ...

    async def by_incident(self, incident_id: str, section: str | None = None) -> list[VectorHit]: ...

    async def count(self, section: str | None = None) -> int: ...


@dataclass(frozen=True, slots=True)
class Stores:
    """The knowledge base's stores and the embedder that fills and queries the vector index."""

    graph: GraphStore
    vectors: VectorStore
    embedder: Embedder


@contextlib.asynccontextmanager
async def opened(stores: Stores) -> AsyncIterator[Stores]:
    """Both stores open for the block: the graph first, so an unopenable vector store closes it again."""
    await stores.graph.open()
    try:
        await stores.vectors.open()
        try:
            yield stores
        finally:
            await stores.vectors.aclose()
    finally:
        await stores.graph.aclose()


def address(url: str) -> str:
    """A server URL as errors name it: scheme, host, port and path, never user info."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = f"{parts.hostname}:{parts.port}" if parts.port else (parts.hostname or "")
    except ValueError:
        return "an invalid URL"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")) if host else url


def trusting(ca_file: str) -> ssl.SSLContext:
    """A verifying TLS context trusting the CA bundle file (a server's certificate); ConfigError (one line)
    when the file is unusable."""
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"CA bundle {ca_file}: cannot be used ({getattr(exc, 'strerror', None) or exc})") from None

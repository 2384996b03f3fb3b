"""One cause, one node: the existing causes an extraction is shown to reuse, and the merge of a newly named
cause into an existing one whose name embeds almost identically.

A model names the same cause differently each time; the graph merges on the name, so without this the
frequency and the ranking of one cause would split over its paraphrases. Names are normalised first
(`cause_name`), the model is shown the closest existing causes and asked to copy one, and what still comes
back new is compared by embedding with the existing names (and, through `refit`, by what the graph says of its
incident: learn/fit_merge.py).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph, Node, NodeType, incident_project
from hummingbird_agent.bamboo.retrieval.evidence import GraphIndex, Scores, incident_scores_many, symptom_lines
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.stores.scoped import Scope
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.bamboo.strategies.causal import clip
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)
# New cause names -> {new name: stored name} by evidence other than the names.
Refit = Callable[[list[str]], Awaitable[dict[str, str]]]
_NUMBER = re.compile(r"\d+")


def same_numbers(a: str, b: str) -> bool:
    """Two cause names carry the same numbers ("exit code 1" is not "exit code 137", however alike)."""
    return sorted(_NUMBER.findall(a)) == sorted(_NUMBER.findall(b))


def task_feature_names(task: Mapping[str, Any]) -> list[str]:
    """`attribute=value` of the task's scalar fields: the names strategies give their Task_Features."""
    return [f"{k}={v}" for k, v in sorted(task.items()) if isinstance(v, str | int | float) and str(v)]


def input_project(incident: IncidentInput) -> str:
    """The project an incident will be learned as: the `project=` task feature its task data gives (""; nobody's)."""
    return incident_project((NodeType.TASK_FEATURE.value, f) for f in task_feature_names(incident.task_data))


@dataclass(frozen=True, slots=True)
class ExistingCause:
    name: str
    description: str = ""

    def line(self) -> str:
        return f"- {self.name}" + (f" — {clip(self.description, 200)}" if self.description else "")


async def closest_causes(stores: Stores, incidents: Sequence[IncidentInput],
                         limit: int = budgets.BAMBOO_REUSE_CAUSES) -> list[tuple[ExistingCause, ...]]:
    """For each incident, the stored causes an extraction should consider reusing: those its error lines
    and text reach (ranked as a diagnosis ranks them), then the most frequent causes of its project.
    Read for all together (one graph read of what their clues reach, one vector search), each gets what
    it would get alone: ranking looks at its own clues and similar incidents only, and a clue's
    specificity counts every cause the clue reaches either way. Fail-open: an unreadable store gives
    none, and the model names the cause afresh."""
    if not incidents:
        return []
    features = [task_feature_names(i.task_data) for i in incidents]
    every_feature = list(dict.fromkeys(f for fs in features for f in fs))
    lines = list(dict.fromkeys(line for i in incidents for line in symptom_lines(i.task_logs.values())))
    try:
        index = await GraphIndex.reached(stores.graph, {"symptom": lines, "task_feature": every_feature},
                                         every_feature)
        if not index.known_causes:
            return [() for _ in incidents]
        clues = [{"symptom": index.known_symptoms(i.task_logs.values()), "task_feature": tuple(fs)}
                 for i, fs in zip(incidents, features, strict=True)]
        texts = [search_texts(i, c["symptom"]) for i, c in zip(incidents, clues, strict=True)]
        scores = await incident_scores_many(stores.vectors, stores.embedder, texts)
        index = await index.including(stores.graph, _best_of(scores), fixes=False)
    except AgentError as exc:
        log.warning("existing causes not read; the model names the cause without them: %s", exc)
        return [() for _ in incidents]
    return [_closest(index, c, fs, s, limit) for c, fs, s in zip(clues, features, scores, strict=True)]


def search_texts(incident: IncidentInput, symptoms: Sequence[str]) -> list[str]:
    """What the incident's similar incidents are searched with: its known error lines, logs and email."""
    return [*symptoms, *(clip(t, budgets.BAMBOO_PROMPT_LOG_CHARS) for t in incident.task_logs.values()),
            clip(incident.email_text, budgets.BAMBOO_PROMPT_LOG_CHARS)]


def _best_of(scores: Sequence[Scores]) -> Scores:
    """Each incident's best score over all the searches (one search per incident being extracted)."""
    close: Scores = {}
    for found in scores:
        for gid, best in found.items():
            close[gid] = max(close.get(gid, best), best)
    return close


def _closest(index: GraphIndex, clues: Mapping[str, Sequence[str]], features: Sequence[str], scores: Scores,
             limit: int) -> tuple[ExistingCause, ...]:
    # Half the list for the closest causes, the rest for the project's own: a cause of the same project
    # must not be crowded out by look-alikes from others.
    names = [c.name for c in index.rank(clues, (), scores, limit // 2)]
    for feature in features:
        names += index.feature_causes(feature)
    rows = [index.causes[n] for n in dict.fromkeys(names) if n in index.causes][:limit]
    return tuple(ExistingCause(r.name, r.description) for r in rows)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / ((math.sqrt(sum(x * x for x in a)) or 1.0)
                                                           * (math.sqrt(sum(y * y for y in b)) or 1.0))


def renamed(graph: KnowledgeGraph, names: Mapping[str, str]) -> KnowledgeGraph:
    """`graph` with the Cause nodes in `names` renamed (edges follow; a rename onto a present node merges)."""
    def key(k: tuple[NodeType, str]) -> tuple[NodeType, str]:
        return (k[0], names.get(k[1], k[1])) if k[0] is NodeType.CAUSE else k

    nodes: dict[tuple[NodeType, str], Node] = {}
    for node in graph.nodes:
        new = replace(node, name=key(node.key)[1]).with_id()
        nodes.setdefault(new.key, new)
    edges = {(e := replace(edge, source=key(edge.source), target=key(edge.target))).key: e for edge in graph.edges}
    return KnowledgeGraph(tuple(nodes.values()), tuple(edges.values()))


@dataclass(slots=True)
class CauseMerger:
    """Merges a new cause name into the stored cause whose name embeds most alike, at or above
    `threshold` cosine, when both names carry the same numbers ("exit code 1" and "exit code 137", "python 2"
    and "python 3" embed alike and are different causes). Keeps the vectors of names it has embedded."""

    threshold: float = budgets.BAMBOO_CAUSE_MERGE_MIN_SIMILARITY
    _vectors: dict[str, list[float]] = field(default_factory=dict)
    # Causes of incidents processed but maybe not stored yet (populate stores in batches), by project: a
    # paraphrase later in the same batch merges into those its project may read as into a stored cause.
    _pending: dict[str, set[str]] = field(default_factory=dict)
    # The stored names each set of projects reads, as last read, kept until `stored` says the store was written:
    # populate merges a whole batch against one read, as nothing is written before the batch is stored.
    _known: dict[frozenset[str], list[str]] = field(default_factory=dict)

    def stored(self) -> None:
        """The store has been written: read its cause names afresh at the next merge."""
        self._known.clear()

    async def _embed(self, stores: Stores, names: Sequence[str]) -> None:
        missing = [n for n in dict.fromkeys(names) if n not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, await stores.embedder.embed(missing), strict=True))

    async def merge(self, stores: Stores, graph: KnowledgeGraph, scope: Scope, refit: Refit | None = None,
                    ) -> tuple[KnowledgeGraph, dict[str, str]]:
        """(graph with merged cause names, {new name: existing name}); unchanged when nothing is close
        enough or the stores cannot be read. `stores` is what `scope` (the incident's project) may read: a name
        is merged only into one of those. `refit` gets the new names no stored name is close to and
        says which stored causes they are by other evidence (fit_merge)."""
        new = [n.name for n in graph.of_type(NodeType.CAUSE)]
        pending = self._pending.setdefault(scope.project, set())
        try:
            stored = await self._stored(stores, scope)
            fresh = [n for n in new if n not in set(stored)]
            if not fresh or not stored:
                pending.update(new)
                return graph, {}
            await self._embed(stores, [*stored, *fresh])
        except AgentError as exc:
            log.warning("cause names not compared with the stored ones: %s", exc)
            return graph, {}
        names = self._alike(fresh, stored)
        still = [n for n in fresh if n not in names]
        if refit is not None and still:
            names.update(await refit(still))
        pending.update(names.get(n, n) for n in new)
        return (renamed(graph, names) if names else graph), names

    async def _stored(self, stores: Stores, scope: Scope) -> list[str]:
        """The cause names `scope` reads: stored, then pending in this batch for its projects."""
        if scope.projects not in self._known:
            self._known[scope.projects] = await stores.graph.names(NodeType.CAUSE.value)
        batch = sorted({n for p in scope.projects for n in self._pending.get(p, ())})
        return list(dict.fromkeys([*self._known[scope.projects], *batch]))

    def _alike(self, fresh: Sequence[str], stored: Sequence[str]) -> dict[str, str]:
        """{new name: the stored name with the same numbers it embeds most alike, when at `threshold` or above}."""
        names: dict[str, str] = {}
        for name in fresh:
            alike = [(_cosine(self._vectors[name], self._vectors[s]), s) for s in stored if same_numbers(name, s)]
            score, best = max(alike, default=(0.0, ""))
            if score >= self.threshold:
                log.info("cause %r merged into %r (cosine %.3f)", name, best, score)
                names[name] = best
        return names

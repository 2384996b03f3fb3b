"""Diagnosis queries over what the accumulator writes: candidate causes from the graph (ranked by
how many clue types reach them, then frequency, then confidence), novel leads, and the two-step vector
retrieval (similar texts -> incident ids -> their narrative summaries).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import TypeVar

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.analysis import CandidateCause, PastIncident, Resolution
from hummingbird_agent.bamboo.embeddings import Embedder
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph, NodeType, RelType
from hummingbird_agent.bamboo.retrieval.fit import ReachedCause, Weights, cause_fits
from hummingbird_agent.bamboo.stores.base import GraphStore, NodeRow, VectorStore
from hummingbird_agent.logs import signature

# Clue node type -> (relationship to a Cause, clue-type name). Read from the same schema the
# extraction writes, so the query side cannot look for edges nobody produces.
CLUE_EDGES: dict[NodeType, tuple[RelType, str]] = {
    NodeType.SYMPTOM: (RelType.INDICATE, "symptom"),
    NodeType.TASK_FEATURE: (RelType.CONTRIBUTE_TO, "task_feature"),
    NodeType.COMPONENT: (RelType.ORIGINATED_FROM, "component"),
    NodeType.ENVIRONMENT: (RelType.ASSOCIATED_WITH, "environment"),
}
SIMILAR_CLUE = "similar_incident"
Scores = dict[str, tuple[float, str]]  # incident id -> (best score, name of the matched text)
K = TypeVar("K")
V = TypeVar("V")
# Vector sections the accumulator writes that describe a failure (searched with the new failure's text).
FAILURE_SECTIONS = ("Symptom", "Task_Context", "Summary")
SUMMARY_SECTION = "Summary"


def clues_of(graph: KnowledgeGraph) -> dict[str, tuple[str, ...]]:
    """Clue names per clue type from a read-only extraction of the new failure."""
    return {name: tuple(n.name for n in graph.of_type(kind)) for kind, (_, name) in CLUE_EDGES.items()}


@dataclass(frozen=True, slots=True)
class GraphIndex:
    """One consistent read of the graph's causal part, queried in memory for one diagnosis."""

    causes: Mapping[str, NodeRow]
    links: Mapping[tuple[str, str], tuple[str, ...]]  # (clue type, clue name) -> cause names
    resolutions: Mapping[str, tuple[Resolution, ...]]
    procedures: Mapping[str, tuple[NodeRow, ...]]
    feature_symptoms: Mapping[str, tuple[str, ...]]  # Task_Feature name -> Symptom names
    symptoms: Mapping[str, NodeRow]
    known_causes: int = 0  # causes in the whole graph (the IDF's corpus size); 0: those in `causes`

    @classmethod
    async def load(cls, store: GraphStore) -> GraphIndex:
        causes = {r.name: r for r in await store.nodes(NodeType.CAUSE.value)}
        links, feature_symptoms = await _clue_links(store)
        resolutions = await _stored_resolutions(store)
        procedures = await _stored_procedures(store)
        symptoms = {r.name: r for r in await store.nodes(NodeType.SYMPTOM.value)}
        return cls(causes, _frozen(links), _frozen(resolutions), _frozen(procedures), _frozen(feature_symptoms),
                   symptoms)

    @classmethod
    async def reached(cls, store: GraphStore, clues: Mapping[str, Sequence[str]],
                      features: Sequence[str] = ()) -> GraphIndex:
        """The part of the graph these clues reach, by indexed lookups bounded by the failure, not by the
        graph: every cause each clue reaches (so a clue's specificity is as over the whole graph), and the
        symptoms of `features` with the causes they indicate (for `feature_causes`). `including` adds the
        causes of similar incidents and the scored incidents of every cause; `rank` then gives what it gives
        over `load` for these clues."""
        symptoms: dict[str, NodeRow] = {}
        feature_symptoms: dict[str, list[str]] = defaultdict(list)
        found = await store.linked(NodeType.TASK_FEATURE.value, RelType.ASSOCIATED_WITH.value,
                                   NodeType.SYMPTOM.value, features) if features else []
        for feature, row in found:
            feature_symptoms[feature].append(row.name)
            symptoms[row.name] = row
        wanted = {kind.value: [*clues.get(name, ()), *(symptoms if kind is NodeType.SYMPTOM else ())]
                  for kind, (_, name) in CLUE_EDGES.items()}
        causes: dict[str, NodeRow] = {}
        links: dict[tuple[str, str], list[str]] = defaultdict(list)
        clue_names = {kind.value: name for kind, (_, name) in CLUE_EDGES.items()}
        for hit in await store.clue_causes(wanted):
            causes[hit.cause.name] = hit.cause
            links[(clue_names[hit.clue_type], hit.clue)].append(hit.cause.name)
        return cls(causes, _frozen(links), {}, {}, _frozen(feature_symptoms), symptoms,
                   await store.count(NodeType.CAUSE.value))

    async def including(self, store: GraphStore, scores: Scores, fixes: bool = True,
                        logs: Mapping[str, float] | None = None) -> GraphIndex:
        """This index with the causes of the incidents `scores` rates similar enough to count, each cause with
        the incidents `scores` and `logs` rate among its incidents (the graph reads a sample of a cause's
        support, not all of it), and with `fixes` the resolutions and investigation procedures of every cause
        it holds."""
        rated = {gid: max(score, (logs or {}).get(gid, 0.0)) for gid, (score, _) in scores.items()}
        rated.update((gid, score) for gid, score in (logs or {}).items() if gid not in rated)
        found = await store.causes_of_incidents(sorted(rated)) if rated else {}
        causes = dict(self.causes)
        for gid, rows in found.items():
            if scores.get(gid, (0.0, ""))[0] >= budgets.BAMBOO_SIMILAR_MIN_SCORE:
                causes.update((r.name, r) for r in rows)
        causes = _with_rated(causes, found, rated)
        names = sorted(causes)
        resolutions: dict[str, list[Resolution]] = defaultdict(list)
        procedures: dict[str, list[NodeRow]] = defaultdict(list)
        if names and fixes:
            for cause, row in await store.linked(NodeType.CAUSE.value, RelType.SOLVED_BY.value,
                                                 NodeType.RESOLUTION.value, names):
                resolutions[cause].append(_resolution(row.name, row))
            for cause, row in await store.linked(NodeType.CAUSE.value, RelType.INVESTIGATED_BY.value,
                                                 NodeType.PROCEDURE.value, names):
                procedures[cause].append(row)
        return replace(self, causes=causes, resolutions=_frozen(resolutions), procedures=_frozen(procedures))

    def rank(self, clues: Mapping[str, Sequence[str]], similar: Sequence[PastIncident],
             scores: Mapping[str, tuple[float, str]] | None = None,
             limit: int = budgets.BAMBOO_CANDIDATE_CAUSES,
             logs: Mapping[str, float] | None = None) -> tuple[CandidateCause, ...]:
        """Causes reached by the clues or by similar past incidents, by their fit score (`cause_fits`):
        each clue type weighted by its most specific clue (a clue shared by many causes, like a generic
        "rake aborted!", tells them apart less), the best similarity of any of their incidents, their share
        of the incidents the task's features reach, and how much closer their incidents' whole logs are
        than the typical one (`logs`: incident id -> whole-log similarity); then frequency, then
        confidence."""
        reached, weight = self._reached_by_clues(clues)
        self._reach_similar(reached, similar, scores)
        scores = {**{p.incident_id: (p.score, p.matched) for p in similar}, **(scores or {})}
        best, fit = cause_fits(reached, weight, scores, logs or {})
        ranked = sorted(reached.values(), key=lambda c: (-fit[c.row.name], -c.row.frequency, -c.row.confidence,
                                                         c.row.name))
        return tuple(self._candidate(c, best[c.row.name], fit[c.row.name]) for c in ranked[:limit])

    def _reached_by_clues(self, clues: Mapping[str, Sequence[str]]) -> tuple[dict[str, ReachedCause], Weights]:
        """The causes the clues reach, and per (cause, clue type) the specificity of its most specific clue."""
        reached: dict[str, ReachedCause] = {}
        weight: Weights = defaultdict(float)
        for clue, names in clues.items():
            for name in names:
                causes = [c for c in dict.fromkeys(self.links.get((clue, name), ())) if c in self.causes]
                for cause in causes:
                    reached.setdefault(cause, ReachedCause(self.causes[cause])).reached[clue].add(name)
                    weight[(cause, clue)] = max(weight[(cause, clue)], self._specificity(len(causes)))
        return reached, weight

    def _reach_similar(self, reached: dict[str, ReachedCause], similar: Sequence[PastIncident],
                       scores: Mapping[str, tuple[float, str]] | None) -> None:
        """Adds to `reached` the causes of the similar incidents, with those incidents as their clues."""
        # Every incident above the "similar" bar counts, not only the few listed as similar incidents:
        # one cause with many near-identical incidents must not crowd the others out of this clue.
        close = {p.incident_id for p in similar}
        close |= {gid for gid, (score, _) in (scores or {}).items() if score >= budgets.BAMBOO_SIMILAR_MIN_SCORE}
        for cause, row in self.causes.items():
            for gid in close.intersection(row.incidents):
                reached.setdefault(cause, ReachedCause(row)).reached[SIMILAR_CLUE].add(gid)

    def _specificity(self, shared_by: int) -> float:
        """1 for a clue that reaches one cause, falling like an IDF as more known causes share it."""
        known = max(self.known_causes or len(self.causes), 1)
        return math.log(1 + known / max(shared_by, 1)) / math.log(1 + known)

    def known_symptoms(self, texts: Iterable[str]) -> tuple[str, ...]:
        """Stored symptoms that are a line of `texts`, also past the first strong lines extraction keeps."""
        known = {name for clue, name in self.links if clue == "symptom"}
        return tuple(name for name in symptom_lines(texts) if name in known)

    def _candidate(self, cause: ReachedCause, similarity: float, fit: float) -> CandidateCause:
        row = cause.row
        clue_types = tuple(sorted(cause.reached))
        matched = tuple(sorted({n for t, names in cause.reached.items() if t != SIMILAR_CLUE for n in names}))
        return CandidateCause(row.name, row.description, clue_types, matched, row.frequency, row.confidence,
                              similarity, row.incidents[: budgets.BAMBOO_CANDIDATE_INCIDENTS],
                              self.resolutions.get(row.name, ()), fit)

    def novel_leads(self, symptoms: Iterable[str]) -> tuple[str, ...]:
        """Symptoms of the new failure that indicate no known cause (a new kind of incident)."""
        return tuple(s for s in symptoms if not any(c in self.causes for c in self.links.get(("symptom", s), ())))

    def feature_causes(self, feature: str) -> list[str]:
        """Causes of earlier incidents that share `feature` (e.g. `project=g/app`), most frequent first."""
        names = set(self.links.get(("task_feature", feature), ()))
        names.update(c for s in self.feature_symptoms.get(feature, ()) for c in self.links.get(("symptom", s), ()))
        known = [self.causes[n] for n in names if n in self.causes]
        return [r.name for r in sorted(known, key=lambda r: (-r.frequency, r.name))]


def _with_rated(causes: Mapping[str, NodeRow], found: Mapping[str, Sequence[NodeRow]],
                rated: Mapping[str, float]) -> dict[str, NodeRow]:
    """Each cause with its incidents as read (a sample) and then its rated incidents, most rated first."""
    members: dict[str, list[str]] = defaultdict(list)
    for gid in sorted(found, key=lambda g: (-rated[g], g)):
        for row in found[gid]:
            members[row.name].append(gid)
    return {name: replace(row, incidents=tuple(dict.fromkeys((*row.incidents, *members.get(name, ())))))
            for name, row in causes.items()}


def _frozen(grouped: Mapping[K, list[V]]) -> dict[K, tuple[V, ...]]:
    return {k: tuple(v) for k, v in grouped.items()}


async def _clue_links(store: GraphStore) -> tuple[dict[tuple[str, str], list[str]], dict[str, list[str]]]:
    """(clue type, clue name) -> the causes it reaches, and Task_Feature name -> its symptoms."""
    links: dict[tuple[str, str], list[str]] = defaultdict(list)
    feature_symptoms: dict[str, list[str]] = defaultdict(list)
    for kind, (rel, clue) in CLUE_EDGES.items():
        for edge in await store.edges(rel.value):
            if edge.source_type == kind.value and edge.target_type == NodeType.CAUSE.value:
                links[(clue, edge.source)].append(edge.target)
            elif kind is NodeType.ENVIRONMENT and edge.target_type == NodeType.SYMPTOM.value:
                feature_symptoms[edge.source].append(edge.target)
    return links, feature_symptoms


async def _stored_resolutions(store: GraphStore) -> dict[str, list[Resolution]]:
    fixes = {r.name: r for r in await store.nodes(NodeType.RESOLUTION.value)}
    resolutions: dict[str, list[Resolution]] = defaultdict(list)
    for edge in await store.edges(RelType.SOLVED_BY.value):
        resolutions[edge.source].append(_resolution(edge.target, fixes.get(edge.target)))
    return resolutions


async def _stored_procedures(store: GraphStore) -> dict[str, list[NodeRow]]:
    procs = {r.name: r for r in await store.nodes(NodeType.PROCEDURE.value)}
    procedures: dict[str, list[NodeRow]] = defaultdict(list)
    for edge in await store.edges(RelType.INVESTIGATED_BY.value):
        if edge.target in procs:
            procedures[edge.source].append(procs[edge.target])
    return procedures


def _resolution(name: str, row: NodeRow | None) -> Resolution:
    steps = tuple(str(s) for s in (row.props.get("steps") or ())) if row else ()
    return Resolution(name, row.description if row else "", steps)


def symptom_lines(texts: Iterable[str]) -> tuple[str, ...]:
    """Each distinct line of `texts` as a stored Symptom would be named (its signature)."""
    found = (signature(line)[: budgets.BAMBOO_SYMPTOM_MAX_CHARS] for text in texts for line in text.splitlines())
    return tuple(dict.fromkeys(found))


async def failure_lines(store: GraphStore, feature: str, limit: int = budgets.EXCERPT_MAX_EXAMPLES) -> list[str]:
    """Raw error lines of earlier incidents that share `feature` (e.g. `project=g/app`), by key lookups."""
    return await store.feature_lines(feature, limit)


async def incident_scores(vectors: VectorStore, embedder: Embedder, texts: Sequence[str],
                          exclude: str = "") -> Scores:
    """Step one: stored texts like the failure's -> incident ids with their best scores."""
    return (await incident_scores_many(vectors, embedder, [texts], exclude))[0]


async def incident_scores_many(vectors: VectorStore, embedder: Embedder, texts: Sequence[Sequence[str]],
                               exclude: str = "") -> list[Scores]:
    """Step one for several failures with one embedding call and one search: for each, what
    `incident_scores` gives it alone."""
    queries = [[t for t in dict.fromkeys(t.strip() for t in group) if t][: budgets.BAMBOO_VECTOR_QUERIES]
               for group in texts]
    flat = [q for group in queries for q in group]
    embedded = await embedder.embed(flat) if flat else []
    found = iter(await vectors.search_sections(embedded, FAILURE_SECTIONS, budgets.BAMBOO_VECTOR_HITS) if flat else [])
    out: list[Scores] = []
    for group in queries:  # the hit lists come per query, per section, in order
        best: Scores = {}
        for hits in islice(found, len(group) * len(FAILURE_SECTIONS)):
            for hit in hits:
                gid = str(hit.payload.get("incident_id", ""))
                if gid and gid != exclude and hit.score > best.get(gid, (0.0, ""))[0]:
                    best[gid] = (hit.score, str(hit.payload.get("name", "")))
        out.append(best)
    return out


async def similar_incidents(vectors: VectorStore, scores: Scores) -> tuple[PastIncident, ...]:
    """Step two: the incidents similar enough to count, with their stored narrative summaries."""
    ranked = sorted(((gid, v) for gid, v in scores.items() if v[0] >= budgets.BAMBOO_SIMILAR_MIN_SCORE),
                    key=lambda kv: (-kv[1][0], kv[0]))[: budgets.BAMBOO_SIMILAR_INCIDENTS]
    out = []
    for gid, (score, matched) in ranked:
        summaries = await vectors.by_incident(gid, SUMMARY_SECTION)
        summary = str(summaries[0].payload.get("content", "")) if summaries else ""
        out.append(PastIncident(gid, score, summary, matched))
    return tuple(out)

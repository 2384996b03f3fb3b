"""KnowledgeAccumulator: closest existing causes -> extract -> review (-> enrich once -> re-extract)* -> drop
names the prompt supplied -> merge near-identical cause names, or a new name into the stored cause its incident fits
-> store graph and vectors.

After `max_review_retries` rejected re-extractions the best result is stored with a warning; the
enricher fires at most once, after the first rejection. When an approved run used the enricher's
orchestration code, that code is stored as a Procedure and its tools are remembered for tool selection.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import (
    Edge,
    ExtractedKnowledge,
    Insight,
    KnowledgeGraph,
    NodeType,
    RelType,
    derive_id,
)
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.causes import CauseMerger, ExistingCause, Refit, closest_causes, input_project
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.fit_merge import FitMerger
from hummingbird_agent.bamboo.learn.prompt_echo import without_echoes
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer, ReviewResult, ToolInfo, render_graph
from hummingbird_agent.bamboo.mcp.procedures import procedure_node
from hummingbird_agent.bamboo.prompts import load_prompt, render
from hummingbird_agent.bamboo.retrieval.log_vector import LOG_SECTION, log_payload, log_text
from hummingbird_agent.bamboo.stores.base import Stores, VectorPoint
from hummingbird_agent.bamboo.stores.scoped import Scope, scoped
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.bamboo.strategies.causal import clip, cut_at_sentence
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)
SUMMARY_SECTION = "Summary"
# Node types whose text goes to the vector store (what the diagnosis side searches).
INSIGHT_TYPES = (NodeType.SYMPTOM, NodeType.CAUSE, NodeType.RESOLUTION, NodeType.TASK_CONTEXT)


@dataclass(frozen=True, slots=True)
class Enrichment:
    task_logs: Mapping[str, str] = field(default_factory=dict)
    external_data: Mapping[str, Any] = field(default_factory=dict)
    capability_gaps: tuple[Mapping[str, str], ...] = ()
    code: str = ""
    """The orchestration code that ran (empty when nothing ran)."""


class Enricher(Protocol):
    """Fetches what a rejected review says is missing (ContextEnricher)."""

    def available_tools(self) -> list[ToolInfo]: ...

    async def enrich(self, incident: IncidentInput, issues: Sequence[str], doc_hints: Mapping[str, str]) -> Enrichment:
        ...


class ToolMemory(Protocol):
    """Where approved investigations are remembered for tool selection (ToolSelector's first source)."""

    async def remember(self, key: str, query: str, tools: Sequence[str], weight: float = 1.0,
                       project: str = "") -> None:
        """`project`: whose investigation it was; only its scope's selections rank by it ("": none's)."""
        ...


class NoEnricher:
    """No tools configured: nothing to fetch, so re-extraction proceeds unenriched."""

    def available_tools(self) -> list[ToolInfo]:
        return []

    async def enrich(self, incident: IncidentInput, issues: Sequence[str], doc_hints: Mapping[str, str]) -> Enrichment:
        return Enrichment()


@dataclass(frozen=True, slots=True)
class AccumulationResult:
    knowledge: ExtractedKnowledge
    approved: bool
    attempts: int
    review: ReviewResult
    stored: bool


def key_insights(graph: KnowledgeGraph) -> list[Insight]:
    return [Insight(n.type.value, n.name, f"{n.name}\n{n.description}".strip())
            for n in graph.nodes if n.type in INSIGHT_TYPES]


def fallback_summary(graph: KnowledgeGraph) -> str:
    """A plain summary when the summary call fails: the incident's symptoms, causes and resolutions."""
    parts = [f"{t.value}: " + "; ".join(n.name for n in graph.of_type(t))
             for t in (NodeType.SYMPTOM, NodeType.CAUSE, NodeType.RESOLUTION) if graph.of_type(t)]
    return ". ".join(parts)


class KnowledgeAccumulator:
    def __init__(self, extractor: KnowledgeGraphExtractor, reviewer: KnowledgeReviewer, llm: JsonLLM,
                 stores: Stores | None, enricher: Enricher | None = None,
                 max_review_retries: int = budgets.BAMBOO_MAX_REVIEW_RETRIES,
                 tool_memory: ToolMemory | None = None, share_groups: Sequence[Sequence[str]] = ()) -> None:
        self._extractor, self._reviewer, self._llm = extractor, reviewer, llm
        self._stores = stores
        self._groups = share_groups
        self._enricher = enricher or NoEnricher()
        self._max_retries = max_review_retries
        self._memory = tool_memory
        self._merger = CauseMerger()
        self._fit = FitMerger()

    async def existing_causes(self, incidents: Sequence[IncidentInput]) -> list[tuple[ExistingCause, ...]]:
        """The closest stored causes of each incident, read together (populate reads once a batch)."""
        if self._stores is None:
            return [() for _ in incidents]
        found: dict[int, tuple[ExistingCause, ...]] = {}
        by_project: dict[str, list[int]] = {}
        for at, incident in enumerate(incidents):
            by_project.setdefault(input_project(incident), []).append(at)
        for project, ats in by_project.items():
            view = scoped(self._stores, self._scope(project))
            found.update(zip(ats, await closest_causes(view, [incidents[at] for at in ats]), strict=True))
        return [found[at] for at in range(len(incidents))]

    def _scope(self, project: str) -> Scope:
        """What learning an incident of `project` reads, as its diagnosis would: its own project's knowledge and
        its share groups', never another's (writes through a scoped view reach the stores unchanged)."""
        return Scope.of(project, self._groups)

    async def process(self, incident: IncidentInput, dry_run: bool = False, max_review_retries: int | None = None,
                      existing: Sequence[ExistingCause] | None = None) -> AccumulationResult:
        """Extract, review and (unless `dry_run`) store one incident; `existing`: its closest stored causes
        when already read (`existing_causes`), else read here."""
        limit = self._max_retries if max_review_retries is None else max_review_retries
        gid = self._extractor.incident_id(incident)
        hints = await self._extractor.prefetch_hints(incident)
        if existing is None:
            existing = (await self.existing_causes([incident]))[0]
        graph, review, attempts, found = await self._review_loop(incident, hints, limit,
                                                                 [c.line() for c in existing])
        graph, dropped = without_echoes(graph)  # still there after the re-extractions: never stored
        if dropped:
            log.warning("incident %s: dropped %d name(s) copied from the prompt: %s", gid, len(dropped),
                        "; ".join(f"{n.type.value} {n.name!r}" for n in dropped)[:300])
        if self._stores is not None:
            scope = self._scope(graph.project)
            view = scoped(self._stores, scope)
            graph, _ = await self._merger.merge(view, graph, scope, self._refit(view, incident, graph, gid))
        enriched = found is not None
        if not review.approved:
            log.warning("incident %s: still rejected after %d re-extractions; storing the best result (%s)",
                        gid, attempts - 1, "; ".join(review.issues)[:300])
        elif found is not None and found.code:
            graph = with_procedure(graph, found.code)
        summary = await self._summary(graph, incident.email_text)
        knowledge = ExtractedKnowledge(gid, graph, summary, tuple(key_insights(graph)), (
            ("attempts", attempts), ("approved", review.approved), ("explorer_ran", enriched),
            ("has_email", bool(incident.email_text)), ("has_task_logs", bool(incident.task_logs))),
            log_text(incident.full_logs or incident.task_logs))
        result = AccumulationResult(knowledge, review.approved, attempts, review, False)
        if not dry_run and self._stores is not None:
            await self.store([result])
            result = replace(result, stored=True)
        return result

    def _refit(self, stores: Stores, incident: IncidentInput, graph: KnowledgeGraph, gid: str) -> Refit:
        async def refit(fresh: list[str]) -> dict[str, str]:
            return await self._fit.names(stores, incident, graph, fresh, gid)
        return refit

    async def store(self, results: Sequence[AccumulationResult]) -> None:
        """Store processed incidents as one batch, then remember the tools of the approved ones."""
        if self._stores is None or not results:
            return
        try:
            await store_knowledge(self._stores, [r.knowledge for r in results])
        finally:
            self._merger.stored()
        for r in results:
            if r.approved:
                await self._remember(r.knowledge)

    async def _review_loop(self, incident: IncidentInput, hints: Mapping[str, str], limit: int,
                           existing: Sequence[str]) -> tuple[KnowledgeGraph, ReviewResult, int, Enrichment | None]:
        feedback, enriched = "", None
        best: tuple[KnowledgeGraph, ReviewResult] | None = None
        tools = self._enricher.available_tools()
        for attempt in range(limit + 1):
            graph = await self._extractor.extract(incident, hints, feedback, existing)
            review = await self._reviewer.review(graph, self._extractor.strategy.task_summary(incident),
                                                 _sources(incident), tools)
            if best is None or review.approved or review.confidence >= best[1].confidence:
                best = (graph, review)
            if review.approved or attempt == limit:
                break
            if attempt == 0:
                enriched = await self._enricher.enrich(incident, review.issues, hints)
                incident = _enriched(incident, enriched)
            feedback = "\n".join([review.feedback, *review.issues]).strip()
        assert best is not None  # the loop runs at least once
        return best[0], best[1], attempt + 1, enriched

    async def _remember(self, knowledge: ExtractedKnowledge) -> None:
        """Feed tool selection: this incident's symptoms -> the tools its procedures call. Fail-open: the
        incident is stored already, and selection without this memory still works."""
        graph = knowledge.graph
        tools = sorted({str(t) for p in graph.of_type(NodeType.PROCEDURE) for t in p.prop("tools") or ()})
        symptoms = [n.name for n in graph.of_type(NodeType.SYMPTOM)]
        if self._memory is None or not tools or not symptoms:
            return
        try:
            await self._memory.remember(knowledge.incident_id, "\n".join(symptoms), tools, project=graph.project)
        except AgentError as exc:
            log.warning("incident %s: tools used not remembered for tool selection: %s", knowledge.incident_id, exc)

    async def _summary(self, graph: KnowledgeGraph, email: str) -> str:
        try:
            user = render("summary_user", graph=render_graph(graph),
                          email=clip(email, budgets.BAMBOO_PROMPT_EMAIL_CHARS) or "(none)")
            text = await self._llm.complete_text(load_prompt("summary_system"), user,
                                                 budgets.BAMBOO_SUMMARY_MAX_OUTPUT_TOKENS)
        except AgentError as exc:
            log.warning("summary call failed; using the plain summary: %s", exc)
            text = ""
        capped = cut_at_sentence(text, budgets.BAMBOO_SUMMARY_MAX_CHARS)
        if capped != text:
            log.warning("summary of %d characters cut to %d (at most %d, whole sentences)", len(text), len(capped),
                        budgets.BAMBOO_SUMMARY_MAX_CHARS)
        return capped or fallback_summary(graph)

async def store_knowledge(stores: Stores, batch: Sequence[ExtractedKnowledge]) -> None:
    """Write incidents to both stores: one graph transaction, one embedding call and one vector
    replace for the whole batch (the accumulator writes batches of one)."""
    if not batch:
        return
    await stores.graph.replace_incidents([(k.incident_id, k.graph) for k in batch])
    items = [[Insight(SUMMARY_SECTION, SUMMARY_SECTION, k.summary), *k.insights,
              *([Insight(LOG_SECTION, LOG_SECTION, k.log_text)] if k.log_text else [])] for k in batch]
    vectors = iter(await stores.embedder.embed([i.content for group in items for i in group]))
    points: dict[str, list[VectorPoint]] = {}
    for k, group in zip(batch, items, strict=True):  # a later copy of an incident replaces an earlier one
        owner = {"project": k.graph.project}  # what a project's searches filter on ("": nobody's)
        points[k.incident_id] = [VectorPoint(derive_id(k.incident_id, i.section, i.name), tuple(next(vectors)),
                                             {**(log_payload(i.content) if i.section == LOG_SECTION else
                                                 {"section": i.section, "name": i.name, "content": i.content}),
                                              **owner})
                                 for i in group]
    await stores.vectors.replace_incidents(points)


def _enriched(incident: IncidentInput, found: Enrichment) -> IncidentInput:
    if not found.task_logs and not found.external_data:
        return incident
    return replace(incident, task_logs={**incident.task_logs, **found.task_logs},
                   external_data={**incident.external_data, **found.external_data})


def with_procedure(graph: KnowledgeGraph, code: str) -> KnowledgeGraph:
    """`graph` plus the Procedure of the orchestration code that ran, investigating each of its causes."""
    node = procedure_node(code)
    if node is None or node.key in {n.key for n in graph.nodes}:
        return graph
    edges = tuple(Edge(c.key, RelType.INVESTIGATED_BY, node.key) for c in graph.of_type(NodeType.CAUSE))
    return KnowledgeGraph((*graph.nodes, node), (*graph.edges, *edges))


def _sources(incident: IncidentInput) -> dict[str, str]:
    sources = {"discussion": incident.email_text}
    sources.update({f"log:{k}": v for k, v in incident.task_logs.items()})
    return sources

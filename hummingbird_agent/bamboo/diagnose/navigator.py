"""ReasoningNavigator: diagnose a new failure from the knowledge base (seed: Reasoning Navigation).

Clues (read-only extraction) -> ranked candidate causes + novel leads (graph) -> similar past incidents
(vectors) -> LLM diagnosis (always runs) -> exploratory / procedure hooks -> draft for the submitter.
Every optional step fails open: what is missing becomes a note, never an aborted diagnosis.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.analysis import NO_EXPLORER, AnalysisResult, CandidateCause, Evidence, PastIncident
from hummingbird_agent.bamboo.diagnose.diagnosis import Diagnosis, diagnose, draft_email, fallback_diagnosis
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph, NodeType
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.retrieval.evidence import (
    GraphIndex,
    Scores,
    clues_of,
    failure_lines,
    incident_scores,
    similar_incidents,
    symptom_lines,
)
from hummingbird_agent.bamboo.retrieval.log_vector import log_scores
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.stores.scoped import Scope, scoped
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.bamboo.strategies.causal import cause_name, clip
from hummingbird_agent.errors import AgentError
from hummingbird_agent.logs import Example, excerpt_lines

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Exploration:
    """What an explorer gathered (filled by the ContextEnricher of a later issue)."""

    external_data: Mapping[str, Any] = field(default_factory=dict)
    capability_gaps: tuple[dict[str, str], ...] = ()
    tool_calls: tuple[str, ...] = ()


class Explorer(Protocol):
    """Runs read-only tools for a diagnosis: `mode` is "exploratory" or "procedure"."""

    async def explore(self, incident: IncidentInput, issues: Sequence[str], mode: str) -> Exploration | None: ...


class NoExplorer:
    """No tools configured: both investigation hooks are skipped and say so."""

    async def explore(self, incident: IncidentInput, issues: Sequence[str], mode: str) -> Exploration | None:
        return None


def with_examples(incident: IncidentInput, lines: Sequence[str]) -> IncidentInput:
    """Replace each log by its failure excerpt, localised with the project's earlier failure lines as
    examples when there are any (general failure cues otherwise)."""
    if not incident.task_logs:
        return incident
    examples = [Example(line) for line in lines]
    logs = {source: _excerpt(text, examples) for source, text in incident.task_logs.items()}
    return replace(incident, task_logs=logs)


def _excerpt(text: str, examples: Sequence[Example]) -> str:
    # The general-cue excerpt is kept beside the examples one: a failure unlike every earlier one
    # (a novel lead) must not be hidden by a search tuned to the earlier ones.
    lines = text.splitlines()
    chosen = dict(excerpt_lines(lines).lines)
    if examples:
        chosen.update(excerpt_lines(lines, examples=examples).lines)
    return "\n".join(chosen[n] for n in sorted(chosen))


class ReasoningNavigator:
    """Diagnoses incidents against the stores; `explorer` runs the investigation hooks (none by default)."""

    def __init__(self, extractor: KnowledgeGraphExtractor, llm: JsonLLM, stores: Stores,
                 explorer: Explorer | None = None, threshold: float = 0.5, guidance: str = "",
                 share_groups: Sequence[Sequence[str]] = ()) -> None:
        self._extractor, self._llm, self._stores = extractor, llm, stores
        self._explorer = explorer or NoExplorer()
        self._threshold, self._guidance, self._groups = threshold, guidance, share_groups
        self._scope: Scope | None = None

    def scoped(self, scope: Scope) -> ReasoningNavigator:
        """This navigator over the stores as `scope` (a run's project and its share groups) may read them."""
        view = ReasoningNavigator(self._extractor, self._llm, scoped(self._stores, scope), self._explorer,
                                  self._threshold, self._guidance, self._groups)
        view._scope = scope
        return view

    def _of(self, incident: IncidentInput) -> ReasoningNavigator | None:
        """Unscoped, a diagnosis reads as the incident's project may (None: already scoped)."""
        project = str(incident.task_data.get("project") or "")
        return None if self._scope is not None else self.scoped(Scope.of(project, self._groups))

    async def gather(self, incident: IncidentInput, notes: list[str] | None = None) -> tuple[Evidence, GraphIndex]:
        """Clues, candidates, novel leads and similar incidents: no LLM beyond the clue extraction."""
        if (view := self._of(incident)) is not None:
            return await view.gather(incident, notes)
        notes = notes if notes is not None else []
        project = str(incident.task_data.get("project") or "")
        local = with_examples(incident, await self._failure_lines(f"project={project}") if project else [])
        graph = await self._clues(local, notes)
        clues = clues_of(graph)
        # Error lines the graph knows are looked up in the whole log too, not only in the excerpt: a localiser
        # led astray by look-alike lines (a passing test's line like a failing one's) can miss the line that
        # names the failure, and a stored symptom is an exact line, specific when few causes share it.
        texts = [*local.task_logs.values(), *(incident.full_logs or incident.task_logs).values()]
        reached = await self._reached({**clues, "symptom": (*clues["symptom"], *symptom_lines(texts))}, notes)
        known = reached.known_symptoms(texts)
        clues["symptom"] = tuple(dict.fromkeys(clues["symptom"] + known))
        specific = sorted(known, key=lambda s: len(reached.links.get(("symptom", s), ())))
        scores, similar = await self._similar(graph, local, notes, specific)
        logs = await self._log_scores(incident, notes)
        index = await self._including(reached, scores, logs, notes)
        candidates = index.rank(clues, similar, scores, logs=logs)
        evidence = Evidence(clues, candidates, index.novel_leads(clues["symptom"]), similar)
        return evidence, index

    async def analyze(self, incident: IncidentInput) -> AnalysisResult:
        if (view := self._of(incident)) is not None:
            return await view.analyze(incident)
        notes: list[str] = []
        evidence, index = await self.gather(incident, notes)
        task = self._extractor.strategy.task_summary(incident)
        result = await self._diagnose(task, evidence, {}, notes)
        gaps: list[dict[str, str]] = []
        if result.confidence < self._threshold:
            extra, found = await self._investigate(incident, _exploratory_issues(result, evidence), "exploratory",
                                                   notes)
            gaps += found
            if extra:
                result = await self._diagnose(task, evidence, extra, notes)
        chosen = _chosen(result.root_cause, evidence.candidates)
        if chosen is not None:
            procedures = index.procedures.get(chosen.name, ())
            if not procedures:
                notes.append("no investigation procedure is known for this cause: manual investigation recommended")
            else:
                issues = [f"procedure {p.name}: {p.description} (parameters {p.props.get('parameters') or '{}'})"
                          for p in procedures]
                extra, found = await self._investigate(incident, issues, "procedure", notes)
                gaps += found
                if extra:
                    result = await self._diagnose(task, evidence, extra, notes)
        return await self._result(incident, task, evidence, result, chosen, gaps, notes)

    async def _failure_lines(self, feature: str) -> list[str]:
        try:
            return await failure_lines(self._stores.graph, feature)
        except AgentError as exc:  # the graph read below says so in the notes
            log.warning("the project's earlier failure lines not read: %s", exc)
            return []

    async def _reached(self, clues: Mapping[str, Sequence[str]], notes: list[str]) -> GraphIndex:
        """The part of the graph this diagnosis's clues reach (`_including` adds the incidents the searches
        rated): bounded by the clues and those incidents, never a whole cause's support list."""
        try:
            return await GraphIndex.reached(self._stores.graph, clues)
        except AgentError as exc:
            log.warning("diagnosis without the graph: %s", exc)
            notes.append(f"the knowledge graph could not be read ({exc})")
            return GraphIndex({}, {}, {}, {}, {}, {})

    async def _including(self, index: GraphIndex, scores: Scores, logs: Mapping[str, float],
                         notes: list[str]) -> GraphIndex:
        try:
            return await index.including(self._stores.graph, scores, logs=logs)
        except AgentError as exc:
            log.warning("diagnosis without the graph: %s", exc)
            notes.append(f"the knowledge graph could not be read ({exc})")
            return GraphIndex({}, {}, {}, {}, {}, {})

    async def _clues(self, incident: IncidentInput, notes: list[str]) -> KnowledgeGraph:
        try:
            return await self._extractor.extract(incident)
        except AgentError as exc:
            log.warning("clue extraction failed; diagnosing without clues: %s", exc)
            notes.append(f"clue extraction failed ({exc})")
            return KnowledgeGraph()

    async def _similar(self, graph: KnowledgeGraph, incident: IncidentInput, notes: list[str],
                       known: Sequence[str] = ()) -> tuple[Scores, tuple[PastIncident, ...]]:
        """Past incidents like the failure: searched with its error lines, its excerpt, then the error lines of
        its whole log the graph knows (`known`, most specific first)."""
        symptoms = graph.of_type(NodeType.SYMPTOM)
        texts = [s.description or s.name for s in symptoms] + [s.name for s in symptoms]
        texts += [clip(t, budgets.BAMBOO_PROMPT_LOG_CHARS) for t in incident.task_logs.values()]
        texts += known
        texts += [n.description for n in graph.of_type(NodeType.TASK_CONTEXT)]
        try:
            scores = await incident_scores(self._stores.vectors, self._stores.embedder, texts,
                                           exclude=self._extractor.incident_id(incident))
            return scores, await similar_incidents(self._stores.vectors, scores)
        except AgentError as exc:
            log.warning("vector retrieval failed; diagnosing from the graph only: %s", exc)
            notes.append(f"similar past incidents could not be searched ({exc})")
            return {}, ()

    async def _log_scores(self, incident: IncidentInput, notes: list[str]) -> dict[str, float]:
        """Past incidents by the similarity of their whole logs to the new failure's (not its excerpt)."""
        try:
            return await log_scores(self._stores.vectors, self._stores.embedder,
                                    incident.full_logs or incident.task_logs,
                                    exclude=self._extractor.incident_id(incident))
        except AgentError as exc:
            log.warning("whole-log retrieval failed; ranking without it: %s", exc)
            notes.append(f"past incidents' whole logs could not be searched ({exc})")
            return {}

    async def _diagnose(self, task: Mapping[str, Any], evidence: Evidence, extra: Mapping[str, Any],
                        notes: list[str]) -> Diagnosis:
        try:
            return await diagnose(self._llm, self._guidance, task, evidence, extra)
        except AgentError as exc:
            log.warning("diagnosis call failed; using the ranked evidence: %s", exc)
            notes.append(f"the diagnosis call failed ({exc}); the result is the knowledge base's ranking")
            return fallback_diagnosis(evidence)

    async def _investigate(self, incident: IncidentInput, issues: Sequence[str], mode: str,
                           notes: list[str]) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """(external data gathered, capability gaps); ({}, []) when no explorer is configured."""
        try:
            found = await self._explorer.explore(incident, issues, mode)
        except AgentError as exc:
            log.warning("%s investigation failed: %s", mode, exc)
            notes.append(f"{mode} investigation failed ({exc})")
            return {}, []
        if found is None:
            log.info("%s investigation skipped: %s", mode, NO_EXPLORER)
            notes.append(f"{mode} investigation skipped: {NO_EXPLORER}")
            return {}, []
        return dict(found.external_data), list(found.capability_gaps)

    async def _result(self, incident: IncidentInput, task: Mapping[str, Any], evidence: Evidence, dx: Diagnosis,
                      chosen: CandidateCause | None, gaps: list[dict[str, str]], notes: list[str]) -> AnalysisResult:
        cited = list(chosen.incidents if chosen else ())
        cited += [p.incident_id for p in evidence.similar if chosen is None or p.incident_id in chosen.incidents]
        cited = list(dict.fromkeys(cited))
        summaries = {p.incident_id: p.summary for p in evidence.similar}
        support = list(dx.supporting_evidence) + [
            {"source": "past_incident", "incident_id": gid, "evidence": summaries.get(gid, "")} for gid in cited]
        result = AnalysisResult(
            self._extractor.incident_id(incident), dx.root_cause, dx.confidence,
            dx.resolution or (chosen.resolutions[0].name if chosen and chosen.resolutions else ""),
            dx.explanation, tuple(support), tuple(gaps), "", evidence.candidates, evidence.novel_leads,
            tuple(cited), evidence.known, tuple(notes))
        try:
            email = await draft_email(self._llm, self._guidance, task, result)
        except AgentError as exc:
            log.warning("draft call failed; no draft for the submitter: %s", exc)
            email = ""
        return replace(result, email_content=email)


def _chosen(root_cause: str, candidates: Sequence[CandidateCause]) -> CandidateCause | None:
    """The known cause the diagnosis names (matched on its canonical wording)."""
    wanted = cause_name(root_cause)
    return next((c for c in candidates if cause_name(c.name) == wanted), None)


def _exploratory_issues(dx: Diagnosis, evidence: Evidence) -> list[str]:
    issues = [f"low-confidence hypothesis ({dx.confidence:.2f}): {dx.root_cause}"]
    issues += [f"candidate cause not confirmed: {c.name}" for c in evidence.candidates[:3]]
    issues += [f"symptom with no known cause: {s}" for s in evidence.novel_leads[:5]]
    return issues

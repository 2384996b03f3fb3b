"""Graph evidence over names: a newly named cause whose incident the knowledge base already diagnoses as a
stored cause, with a confident fit, is that cause.

A model that does not recognise a shown cause in other words ("build error, class 3" for "failure category 3")
names it afresh, and the name merge by embedding cannot see that the two wordings mean one thing. The
diagnosis ranking can: the new incident's error lines, its similar incidents and its whole log are read as a
diagnosis reads a new failure, and when the best stored cause fits at or above `threshold` (and its name
carries the same numbers, as in the name merge), the new name is dropped for it. A failure unlike every
stored one fits none that well and keeps its name; a wrong merge is possible when a different cause's
incidents look alike, so it is logged with the fit that made it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.analysis import CandidateCause
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph, NodeType
from hummingbird_agent.bamboo.learn.causes import same_numbers, search_texts, task_feature_names
from hummingbird_agent.bamboo.retrieval.evidence import GraphIndex, incident_scores, symptom_lines
from hummingbird_agent.bamboo.retrieval.log_vector import log_scores
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)


def fitted_name(fresh: str, best: CandidateCause | None, threshold: float) -> str | None:
    """The stored cause `fresh` is taken for: the best-fitting one when its fit reaches `threshold` and both
    names carry the same numbers ("exit code 1" is not "exit code 137" however alike the logs)."""
    if best is None or best.name == fresh or best.score < threshold:
        return None
    return best.name if same_numbers(fresh, best.name) else None


async def best_fit(stores: Stores, incident: IncidentInput, exclude: str) -> CandidateCause | None:
    """The stored cause that fits `incident` best, ranked as a diagnosis ranks a new failure (its error lines,
    task features, similar incidents and whole log); None when nothing is reached."""
    features = task_feature_names(incident.task_data)
    lines = symptom_lines(incident.task_logs.values())
    index = await GraphIndex.reached(stores.graph, {"symptom": lines, "task_feature": features}, features)
    if not index.causes:
        return None
    clues = {"symptom": index.known_symptoms(incident.task_logs.values()), "task_feature": tuple(features)}
    scores = await incident_scores(stores.vectors, stores.embedder, search_texts(incident, clues["symptom"]),
                                   exclude=exclude)
    logs = await log_scores(stores.vectors, stores.embedder, incident.full_logs or incident.task_logs,
                            exclude=exclude)
    index = await index.including(stores.graph, scores, fixes=False, logs=logs)  # as the diagnosis reads it
    ranked = index.rank(clues, (), scores, 1, logs=logs)
    return ranked[0] if ranked else None


@dataclass(frozen=True, slots=True)
class FitMerger:
    """Takes an extraction's one cause that no stored cause has by name for the stored cause its incident
    fits at or above `threshold`. An extraction naming several causes is left alone: the incident's evidence
    cannot say which of them it speaks for."""

    threshold: float = budgets.BAMBOO_CAUSE_FIT_MERGE_MIN

    async def names(self, stores: Stores, incident: IncidentInput, graph: KnowledgeGraph, fresh: Sequence[str],
                    exclude: str) -> dict[str, str]:
        """{new name: stored name}; empty when nothing fits well enough or the stores cannot be read."""
        if len(fresh) != 1 or len(graph.of_type(NodeType.CAUSE)) != 1:
            return {}
        try:
            best = await best_fit(stores, incident, exclude)
        except AgentError as exc:
            log.warning("a new cause name not checked against the causes its incident fits: %s", exc)
            return {}
        stored = fitted_name(fresh[0], best, self.threshold)
        if best is None or stored is None:
            return {}
        log.info("cause %r merged into %r (fit %.3f)", fresh[0], stored, best.score)
        return {fresh[0]: stored}

"""The knowledge base as read-only tools for the analyze-failures workflow (projects with knowledge_tools):
similar past incidents, candidate causes for error lines, known procedures for a cause. Every tool reads the run's
project's view of the stores, bound in at registration: no argument of the model names a project.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import NodeType, RelType
from hummingbird_agent.bamboo.retrieval.evidence import GraphIndex, incident_scores, similar_incidents
from hummingbird_agent.bamboo.retrieval.log_vector import log_scores
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.stores.scoped import Scope, scoped
from hummingbird_agent.logs import signature
from hummingbird_agent.tools.base import ToolDef, ToolResult
from hummingbird_agent.tools.registry import ToolRegistry

SOURCE = "knowledge"
_LINES = {"type": "array", "minItems": 1, "maxItems": budgets.BAMBOO_VECTOR_QUERIES,
          "items": {"type": "string", "minLength": 1, "maxLength": 2000},
          "description": "Error lines copied verbatim from the failing job's log."}


async def similar_past_incidents(stores: Stores, error_lines: list[str]) -> dict[str, Any]:
    scores = await incident_scores(stores.vectors, stores.embedder, error_lines)
    found = await similar_incidents(stores.vectors, scores)
    return {"incidents": [p.to_json() for p in found],
            "note": "" if found else "No similar past incident is known."}


async def candidate_causes(stores: Stores, error_lines: list[str], project: str = "",
                           features: tuple[str, ...] = (), log_tail: str = "") -> dict[str, Any]:
    """Known causes for these error lines; `features` adds task features (`job=build`, ...) as clues, `log_tail`
    the failing log's last lines, compared with learned incidents' whole logs as a diagnosis does."""
    symptoms = [signature(line)[: budgets.BAMBOO_SYMPTOM_MAX_CHARS] for line in error_lines]
    clues = {"symptom": tuple(symptoms), "task_feature": ((f"project={project}",) if project else ()) + features}
    scores = await incident_scores(stores.vectors, stores.embedder, error_lines)
    similar = await similar_incidents(stores.vectors, scores)
    logs = await log_scores(stores.vectors, stores.embedder, {"log": log_tail}) if log_tail else {}
    index = await (await GraphIndex.reached(stores.graph, clues)).including(stores.graph, scores, logs=logs)
    ranked = [c for c in index.rank(clues, similar, scores, logs=logs) if c.specific]
    return {"candidates": [c.to_json() for c in ranked], "novel_leads": list(index.novel_leads(symptoms)),
            "note": "" if ranked else "Nothing similar is known in the knowledge base."}


async def _run_candidate_causes(stores: Stores, project: str, error_lines: list[str]) -> dict[str, Any]:
    """The tool: `candidate_causes` with the run's project as the project clue."""
    return await candidate_causes(stores, error_lines, project)


async def known_procedures(stores: Stores, cause: str) -> dict[str, Any] | ToolResult:
    # Key lookups of this cause and its procedures, not a read of the whole graph.
    if not await stores.graph.causes([cause]):
        return ToolResult.error("not_found", f"no known cause named {cause!r}; copy a name from candidate causes")
    procedures = await stores.graph.linked(NodeType.CAUSE.value, RelType.INVESTIGATED_BY.value,
                                           NodeType.PROCEDURE.value, [cause])
    return {"cause": cause, "procedures": [{"name": p.name, "description": p.description, "tools": p.props.get("tools"),
                                            "parameters": p.props.get("parameters")} for _, p in procedures]}


def _schema(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOL_DEFS = (
    ToolDef("knowledge_similar_incidents", "Past resolved incidents whose failure looks like these error lines, "
            "with their summaries (how they were caused and fixed).",
            _schema(["error_lines"], error_lines=_LINES), similar_past_incidents),
    ToolDef("knowledge_candidate_causes", "Known causes of this project ranked by how many clue types (error "
            "signature, project, similar incident) reach them, with their resolutions and the incident ids they "
            "rest on.", _schema(["error_lines"], error_lines=_LINES), _run_candidate_causes),
    ToolDef("knowledge_known_procedures", "Investigation procedures recorded for a known cause (exact name).",
            _schema(["cause"], cause={"type": "string", "minLength": 1, "maxLength": 300}), known_procedures),
)

TOOL_NOTES = """\
The knowledge base holds failures resolved earlier. When a candidate cause or a similar incident fits,
say so in the note and cite the incident ids it rests on ("seen before in incident <id>"). When the
tools say nothing similar is known, say that plainly; never present a guess as a known cause."""


def register(registry: ToolRegistry, stores: Stores, scope: Scope,
             wrap: Callable[[ToolDef], ToolDef] | None = None) -> None:
    """Register the knowledge tools over open stores (the service opens them once at start-up) as `scope` (the
    run's project and its share groups) may read them; `wrap` decorates each tool, e.g. to record the incidents
    it returns for the note's citations."""
    view = scoped(stores, scope)
    tools = [dataclasses.replace(t, handler=functools.partial(t.handler, view, scope.project)
                                 if t.handler is _run_candidate_causes else functools.partial(t.handler, view))
             for t in TOOL_DEFS]
    if wrap is not None:
        tools = [wrap(t) for t in tools]
    registry.register_data_source(SOURCE, tools, TOOL_NOTES)

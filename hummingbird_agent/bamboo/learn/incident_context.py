"""What an incident brings to extraction beyond its facts: exploration results as context for the model,
and the fix as evidence on the Resolutions the model names. Pure functions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph, NodeType
from hummingbird_agent.bamboo.strategies.causal import clip

EXPLORATION_PREFIX = "explored "


def exploration_hints(external_data: Mapping[str, Any]) -> dict[str, str]:
    """Exploration results (`orchestration:<key>`, `tool:<name>`) as reference text for the extractor. A
    result is context, never a fact: a scalar (a count, a flag) says nothing without the question it
    answered, so none becomes a Task_Feature; structured results are shown as compact JSON."""
    hints: dict[str, str] = {}
    for key, value in sorted(external_data.items())[: budgets.BAMBOO_EXPLORATION_HINTS]:
        if value in (None, "", [], {}):
            continue
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        hints[EXPLORATION_PREFIX + str(key)] = clip(text, budgets.BAMBOO_EXPLORATION_HINT_CHARS)
    return hints


def with_fix_evidence(graph: KnowledgeGraph, fix: Mapping[str, Any]) -> KnowledgeGraph:
    """Every Resolution of the incident carries the fix that made its jobs pass: the commit range, the
    changed files and the capped diff summary (kept on a Resolution node the first time it is stored)."""
    if not fix:
        return graph
    evidence = {"evidence_commits": fix.get("commits"), "evidence_files": tuple(fix.get("files") or ()),
                "evidence_diff": fix.get("diff")}
    evidence = {k: v for k, v in evidence.items() if v}
    nodes = tuple(replace(n, props=tuple(sorted({**dict(n.props), **evidence}.items())))
                  if n.type is NodeType.RESOLUTION else n for n in graph.nodes)
    return KnowledgeGraph(nodes, graph.edges)

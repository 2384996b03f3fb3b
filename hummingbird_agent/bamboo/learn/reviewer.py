"""KnowledgeReviewer: a gap analysis of an extracted graph before it is stored (fail-open).

Hard structural checks need no LLM (a name copied from the prompt is one); the LLM then looks for grounded
gaps. Any LLM or parse error approves, so a broken reviewer never blocks accumulation; an answer that is a
review approves only with a stated confidence of at least BAMBOO_REVIEW_MIN_CONFIDENCE.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import KnowledgeGraph, NodeType, RelType
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.prompt_echo import echo_issue, echoed_nodes
from hummingbird_agent.bamboo.prompts import load_prompt, render
from hummingbird_agent.bamboo.strategies.causal import clip
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)
NO_PROCEDURE = "No investigation procedure captured"
HUMAN_INPUT_TOOL = "request_human_input"
_ANNOTATION = " → resolvable with "


@dataclass(frozen=True, slots=True)
class ReviewResult:
    approved: bool
    confidence: float
    issues: tuple[str, ...] = ()
    feedback: str = ""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool the reviewer may name as able to resolve a gap."""

    name: str
    description: str


def structural_issues(graph: KnowledgeGraph, tools: Sequence[ToolInfo]) -> list[str]:
    """Gaps found without an LLM: names the prompt supplied, no symptom, no cause, unexplained symptoms, no
    procedure."""
    issues = [echo_issue(n) for n in echoed_nodes(graph)]
    if not graph.of_type(NodeType.SYMPTOM):
        issues.append("No Symptom node found")
    if not graph.of_type(NodeType.CAUSE):
        issues.append("No Cause node found")
    explained = {e.source for e in graph.edges if e.type is RelType.INDICATE}
    issues += [f"Symptom {s.name!r} has no Cause explaining it" for s in graph.of_type(NodeType.SYMPTOM)
               if graph.of_type(NodeType.CAUSE) and s.key not in explained]
    if not graph.of_type(NodeType.PROCEDURE):
        names = {t.name for t in tools}
        issues.append(NO_PROCEDURE + (_ANNOTATION + HUMAN_INPUT_TOOL if HUMAN_INPUT_TOOL in names else ""))
    return issues


def grounded(issue: str, tool_names: set[str]) -> str:
    """Drop a `→ resolvable with X` annotation naming a tool that does not exist."""
    text, sep, tool = issue.partition(_ANNOTATION.strip())
    return issue if not sep or tool.strip() in tool_names else text.rstrip(" →-")


def render_graph(graph: KnowledgeGraph) -> str:
    lines = [f"counts: {json.dumps(graph.counts(), sort_keys=True)}"]
    lines += [f"- {n.type.value}: {n.name}" + (f" — {n.description[:120]}" if n.description else "")
              for n in graph.nodes]
    lines += [f"- ({e.source[0].value}) {e.source[1]} -[{e.type.value}]-> ({e.target[0].value}) {e.target[1]}"
              for e in graph.edges]
    return "\n".join(lines)


class KnowledgeReviewer:
    def __init__(self, llm: JsonLLM) -> None:
        self._llm = llm

    async def review(self, graph: KnowledgeGraph, task: Mapping[str, Any], sources: Mapping[str, str],
                     tools: Sequence[ToolInfo] = ()) -> ReviewResult:
        if not graph.nodes:
            return ReviewResult(approved=True, confidence=1.0)
        hard = structural_issues(graph, tools)
        if hard:
            return ReviewResult(False, 0.0, tuple(hard), "Fix: " + "; ".join(hard))
        try:
            user = self._user(graph, task, sources, tools)
            answer = await self._llm.complete_json(load_prompt("review_system"), user)
        except AgentError as exc:
            log.warning("reviewer failed open (approved): %s", exc)
            return ReviewResult(approved=True, confidence=0.0)
        return self._result(answer, {t.name for t in tools})

    def _user(self, graph: KnowledgeGraph, task: Mapping[str, Any], sources: Mapping[str, str],
              tools: Sequence[ToolInfo]) -> str:
        return render("review_user", graph=render_graph(graph), task=json.dumps(task, default=str, sort_keys=True),
                      sources="\n\n".join(f"[{k}]\n{clip(v, budgets.BAMBOO_REVIEW_SOURCE_CHARS)}"
                                          for k, v in sorted(sources.items()) if v) or "(none)",
                      tools="\n".join(f"- {t.name}: {t.description}" for t in tools) or "(none)")

    @staticmethod
    def _result(answer: Mapping[str, Any], tool_names: set[str]) -> ReviewResult:
        approved = answer.get("approved")
        if not isinstance(approved, bool):
            log.warning("reviewer answer has no boolean 'approved'; failing open (approved)")
            return ReviewResult(approved=True, confidence=0.0)
        confidence = _confidence(answer.get("confidence"))
        raw = answer.get("issues")
        issues = tuple(grounded(str(i), tool_names) for i in raw) if isinstance(raw, list) else ()
        feedback = str(answer.get("feedback") or "")
        if approved and (confidence is None or confidence < budgets.BAMBOO_REVIEW_MIN_CONFIDENCE):
            return ReviewResult(False, confidence or 0.0, (*issues, _doubt(confidence)), feedback)
        return ReviewResult(approved, 0.5 if confidence is None else confidence, issues, feedback)


def _confidence(value: Any) -> float | None:
    """The stated confidence, clamped to 0-1; None when there is none (or it is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return None if math.isnan(number) else min(max(number, 0.0), 1.0)


def _doubt(confidence: float | None) -> str:
    """Why an approval does not count, for the log, the report and the re-extraction's feedback."""
    stated = "no confidence" if confidence is None else f"confidence {confidence:.2f}"
    return (f"the reviewer approved with {stated}, below {budgets.BAMBOO_REVIEW_MIN_CONFIDENCE}: not an approval; "
            "make the graph's names and links clearly supported by the sources")

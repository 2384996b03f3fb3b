"""The LLM part of extraction shared by the strategies: causes, resolutions, procedures, components.

The model names things; code builds the nodes and wires edges only to names that exist, so an
invented endpoint is dropped instead of becoming a dangling node.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import Edge, Node, NodeType, RelType, make_node
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.prompts import load_prompt, render

log = logging.getLogger(__name__)
_SPACE = re.compile(r"\s+")


def phrase(text: Any, limit: int = 120) -> str:
    """Canonical wording of an LLM-named concept: lower case, single spaces, no trailing punctuation."""
    return _SPACE.sub(" ", str(text or "")).strip().strip(".;:,").lower()[:limit]


# Words a model puts before a cause that say nothing about it ("Root cause: ...", "The likely ...").
_FILLER = re.compile(r"^(?:(?:the|a|an|root cause|cause|reason|likely|probable|probably|possible|possibly|suspected)\b"
                     r"[\s:\-–—]*)+")
_PUNCTUATION = re.compile(r"[\"'`#*()\[\]{},;!?]+")


def cause_name(text: Any) -> str:
    """Canonical wording of a cause: `phrase` without filler words in front and without punctuation, so
    "Root cause: Runner disk full." and "runner disk full" are one node."""
    words = _SPACE.sub(" ", _PUNCTUATION.sub(" ", phrase(text, limit=400)))
    return _FILLER.sub("", words.strip()).strip(" .:;-")[:120] or phrase(text)


def _confidence(value: Any) -> float:
    try:
        return min(max(float(value), 0.0), 1.0)
    except (TypeError, ValueError):
        return 0.7


def _items(answer: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    value = answer.get(key)
    return [v for v in value if isinstance(v, dict) and phrase(v.get("name"))] if isinstance(value, list) else []


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[... cut ...]"


_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s|$)")


def cut_at_sentence(text: str, limit: int) -> str:
    """`text` when it fits in `limit` characters, else its whole sentences that fit ("" when not even the first
    does: a runaway without a sentence end is no narrative)."""
    if len(text) <= limit:
        return text
    # One character past the limit is read so that "3.5" cut after its "." is no sentence end.
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, limit + 1) if m.end() <= limit]
    return text[: ends[-1]].rstrip() if ends else ""


async def extract_causal(llm: JsonLLM, domain: str, task: Mapping[str, Any], facts: Sequence[Node], email: str,
                         logs: str, hints: Mapping[str, str], feedback: str,
                         existing: Sequence[str] = ()) -> tuple[list[Node], list[Edge]]:
    """One LLM call; returns the causal nodes and every edge from or to them. `existing`: prompt lines of
    the stored causes the model may reuse by name."""
    user = render(
        "extract_user", domain=domain, task=json.dumps(task, indent=1, default=str, sort_keys=True),
        facts="\n".join(f"- {n.type.value}: {n.name}" for n in facts) or "(none)",
        email=clip(email, budgets.BAMBOO_PROMPT_EMAIL_CHARS) or "(none)", logs=logs or "(none)",
        hints="\n".join(f"[{k}] {v}" for k, v in sorted(hints.items())) or "(none)",
        feedback=feedback or "(first attempt)", existing="\n".join(existing) or "(none yet)")
    answer = await llm.complete_json(load_prompt("extract_system"), user, EXTRACT_SCHEMA)
    return build_causal(answer, facts)


_TEXT = {"type": "string"}
_TEXTS = {"type": "array", "items": _TEXT}


def _named(**fields: Mapping[str, Any]) -> dict[str, Any]:
    """A list of named items (with a description and the cause they belong to) carrying `fields`."""
    properties = {"name": _TEXT, "description": _TEXT, "cause": _TEXT, **fields}
    return {"type": "array", "items": {"type": "object", "properties": properties, "required": ["name"]}}


# The extraction answer's shape, for providers with structured output: every field build_causal reads, since
# a provider that closes objects (Claude) can produce no other. `parameters` (a free-form map) cannot be
# written in such a schema: only the prompt asks for it.
EXTRACT_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {
    "causes": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
        "name": _TEXT, "description": _TEXT, "confidence": {"type": "number"}, "symptoms": _TEXTS,
        "features": _TEXTS}}},
    "resolutions": _named(steps=_TEXTS),
    "procedures": _named(tools=_TEXTS, depends_on={"type": "array", "items": {
        "type": "object", "properties": {"name": _TEXT, "reason": _TEXT}, "required": ["name"]}}),
    "components": _named(system=_TEXT, version=_TEXT), "environments": _named(category=_TEXT),
    "context": _named()}}


def build_causal(answer: Mapping[str, Any], facts: Sequence[Node]) -> tuple[list[Node], list[Edge]]:
    known = {(n.type, n.name) for n in facts}
    nodes: list[Node] = []
    edges: list[Edge] = []
    causes = {}
    for item in _items(answer, "causes"):
        cause = make_node(NodeType.CAUSE, cause_name(item["name"]), str(item.get("description", "")),
                          _confidence(item.get("confidence", 1.0)))
        causes[cause.name] = cause
        nodes.append(cause)
        edges += _links(item.get("symptoms"), NodeType.SYMPTOM, RelType.INDICATE, cause, known, 1.0)
        edges += _links(item.get("features"), NodeType.TASK_FEATURE, RelType.CONTRIBUTE_TO, cause, known, 0.9)
    symptoms = [n for n in facts if n.type is NodeType.SYMPTOM]
    if len(causes) == 1 and not any(e.type is RelType.INDICATE for e in edges):
        # A single cause and no explicit mapping: every symptom of this incident indicates it.
        only = next(iter(causes.values()))
        edges += [Edge(s.key, RelType.INDICATE, only.key, 0.8) for s in symptoms]
    for kind, rel, outward in ((NodeType.RESOLUTION, RelType.SOLVED_BY, True),
                               (NodeType.COMPONENT, RelType.ORIGINATED_FROM, False),
                               (NodeType.ENVIRONMENT, RelType.ASSOCIATED_WITH, False)):
        n, e = _attached(answer, kind, rel, causes, outward)
        nodes += n
        edges += e
    n, e = _procedures(answer, causes)
    nodes += n
    edges += e
    nodes += [make_node(NodeType.TASK_CONTEXT, phrase(i["name"]), str(i.get("description", "")))
              for i in _items(answer, "context")]
    return nodes, edges


def _links(names: Any, kind: NodeType, rel: RelType, cause: Node,
           known: set[tuple[NodeType, str]], confidence: float) -> list[Edge]:
    out = []
    for raw in names if isinstance(names, list) else []:
        name = str(raw).strip()
        if (kind, name) in known:
            out.append(Edge((kind, name), rel, cause.key, confidence))
        elif name:
            log.warning("extraction named an unknown %s %r; edge dropped", kind.value, name[:80])
    return out


_FIELDS = {NodeType.RESOLUTION: ("steps",), NodeType.COMPONENT: ("system", "version"),
           NodeType.ENVIRONMENT: ("category",)}
_KEYS = {NodeType.RESOLUTION: "resolutions", NodeType.COMPONENT: "components", NodeType.ENVIRONMENT: "environments"}


def _attached(answer: Mapping[str, Any], kind: NodeType, rel: RelType, causes: Mapping[str, Node],
              outward: bool) -> tuple[list[Node], list[Edge]]:
    nodes, edges = [], []
    for item in _items(answer, _KEYS[kind]):
        props: dict[str, Any] = {k: item.get(k) for k in _FIELDS[kind]}
        steps = props.get("steps")
        if isinstance(steps, list):
            props["steps"] = [str(s) for s in steps]
        node = make_node(kind, phrase(item["name"]), str(item.get("description", "")), **props)
        nodes.append(node)
        cause = causes.get(cause_name(item.get("cause")))
        if cause is not None:
            edges.append(Edge(cause.key, rel, node.key) if outward else Edge(node.key, rel, cause.key))
    return nodes, edges


def _procedures(answer: Mapping[str, Any], causes: Mapping[str, Node]) -> tuple[list[Node], list[Edge]]:
    nodes, edges = [], []
    items = _items(answer, "procedures")
    names = {phrase(i["name"]) for i in items}
    for item in items:
        node = _procedure(item)
        nodes.append(node)
        cause = causes.get(cause_name(item.get("cause")))
        if cause is not None:
            edges.append(Edge(cause.key, RelType.INVESTIGATED_BY, node.key))
        edges += _dependencies(item, node, names)
    return nodes, edges


def _procedure(item: Mapping[str, Any]) -> Node:
    tools = sorted({str(t) for t in item.get("tools") or [] if str(t)})
    params = item.get("parameters") if isinstance(item.get("parameters"), dict) else {}
    return make_node(NodeType.PROCEDURE, phrase(item["name"]), str(item.get("description", "")),
                     tools=tools, parameters=json.dumps(params, sort_keys=True) if params else None)


def _dependencies(item: Mapping[str, Any], node: Node, names: set[str]) -> list[Edge]:
    """DEPENDS_ON edges to the other procedures of the same answer this one names (any other is dropped)."""
    edges: list[Edge] = []
    for dep in item.get("depends_on") or []:
        dep_name = phrase(dep.get("name") if isinstance(dep, dict) else dep)
        reason = str(dep.get("reason", "")) if isinstance(dep, dict) else ""
        if dep_name in names and dep_name != node.name:
            edges.append(Edge(node.key, RelType.DEPENDS_ON, (NodeType.PROCEDURE, dep_name),
                              props=(("reason", reason),) if reason else ()))
    return edges

"""Bounding the tool list of explorer prompts: render within a token budget, at most TOOL_MAX_FULL_SCHEMAS
full schemas, chosen by two-source retrieval (tools similar past investigations used; tools whose
descriptions match the symptom). Selection trims the prompt only, never the set of callable tools.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.embeddings import Embedder
from hummingbird_agent.bamboo.incident_graph import derive_id
from hummingbird_agent.bamboo.mcp import McpTool
from hummingbird_agent.bamboo.stores.base import VectorPoint, VectorStore
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)
TRIGGERS, CATALOGUE = "ProcedureTriggers", "ToolCatalogue"


def estimate_tokens(text: str) -> int:
    """Token estimate without a network call: UTF-8 bytes / TOOL_BYTES_PER_TOKEN, rounded up (prompt_fit.py
    checks a prompt that could be over with the provider's count)."""
    return math.ceil(len(text.encode()) / budgets.TOOL_BYTES_PER_TOKEN)


def tool_budget(context_window_tokens: int, prompt_without_tools: str,
                margin_tokens: int = budgets.TOOL_BUDGET_MARGIN) -> int:
    """Tokens left for the tool block: window - the rest of the prompt - the margin."""
    return context_window_tokens - estimate_tokens(prompt_without_tools) - margin_tokens


def candidate_pool(max_full: int, configured: int = 0) -> int:
    """Ranking pool of tool retrieval: `configured` (bamboo.tool_retrieval_candidate_k), or for 0 the seed's
    max(40, 3 x the full-schema cap)."""
    return configured or max(budgets.TOOL_RETRIEVAL_MIN_CANDIDATES,
                             budgets.TOOL_RETRIEVAL_CANDIDATES_PER_SCHEMA * max_full)


def _args(tool: McpTool) -> list[str]:
    return list((tool.parameters.get("properties") or {}).keys())


def full_block(tool: McpTool) -> str:
    return (f"- {tool.name}({', '.join(_args(tool))})\n  {tool.description.strip()}\n"
            f"  schema: {json.dumps(tool.parameters, sort_keys=True)}")


def compact_block(tool: McpTool) -> str:
    first = (tool.description.strip().splitlines() or [""])[0][:120]
    return f"- {tool.name}({', '.join(_args(tool))}): {first}"


def render_tools(ordered: Sequence[McpTool], full: set[str], budget_tokens: int) -> tuple[str, list[str]]:
    """Greedy fill in the given order: a full schema for names in `full`, else the compact line; a block
    that does not fit is skipped (not a stop); the first tool is always kept. (text, omitted names)"""
    blocks: list[str] = []
    omitted: list[str] = []
    used = 0
    for tool in ordered:
        for block in ([full_block(tool)] if tool.name in full else []) + [compact_block(tool)]:
            cost = estimate_tokens(block + "\n")
            if used + cost <= budget_tokens or not blocks:
                blocks.append(block)
                used += cost
                break
        else:
            omitted.append(tool.name)
    return "\n".join(blocks), omitted


def _merge(past: Sequence[str], matching: Sequence[str], reserved: int) -> list[str]:
    """The first `reserved` description matches interleaved 1:1 with past-investigation tools at the front,
    then the rest of the past tools, then the rest of the matches; deduplicated."""
    front: list[str] = []
    for i in range(max(reserved, 0)):
        if i < len(past):
            front.append(past[i])
        if i < len(matching):
            front.append(matching[i])
    return list(dict.fromkeys([*front, *past[reserved:], *matching[reserved:], *past, *matching]))


def trigger_id(namespace: str, key: str) -> str:
    """The tool-selection memory's id of one remembered investigation (an incident id as `key`)."""
    return f"trigger:{namespace}:{key}"


@dataclass(slots=True)
class ToolSelector:
    """Two-source tool retrieval over a vector store, namespaced (hash of MCP config and provider). What past
    investigations used is each one's project's: `projects` (a session's scope, `scoped`) are whose count; the
    tool catalogue, the configuration's, is everyone's."""

    vectors: VectorStore
    embedder: Embedder
    namespace: str
    max_full: int = budgets.TOOL_MAX_FULL_SCHEMAS
    candidate_k: int = budgets.TOOL_RETRIEVAL_CANDIDATE_K
    reserved: int = budgets.TOOL_RESERVED_EXPLORE
    projects: frozenset[str] = frozenset()
    _catalogue: str = field(default="", repr=False)

    def _section(self, kind: str) -> str:
        return f"{kind}@{self.namespace}"

    def scoped(self, projects: frozenset[str]) -> ToolSelector:
        """This selector ranking by the investigations of `projects` only (none: no project's)."""
        return replace(self, projects=projects)

    async def remember(self, key: str, query: str, tools: Sequence[str], weight: float = 1.0,
                       project: str = "") -> None:
        """Index one approved investigation of `project` (its symptom text -> the tools it used); re-indexing a
        key replaces it. Weight > 1 for investigations that ended with a known cause."""
        vector = (await self.embedder.embed([query]))[0]
        point = VectorPoint(derive_id(self.namespace, TRIGGERS, key), tuple(vector),
                            {"section": self._section(TRIGGERS), "name": key, "tools": sorted(set(tools)),
                             "weight": weight, "project": project})
        await self.vectors.replace_incident(trigger_id(self.namespace, key), [point])

    async def _sync_catalogue(self, tools: Sequence[McpTool]) -> None:
        texts = [f"{t.name}: {t.description}" for t in tools]
        fingerprint = hashlib.sha256("\n".join(texts).encode()).hexdigest()
        if fingerprint == self._catalogue:
            return
        vectors = await self.embedder.embed(texts)
        points = [VectorPoint(derive_id(self.namespace, CATALOGUE, t.name), tuple(v),
                              {"section": self._section(CATALOGUE), "name": t.name})
                  for t, v in zip(tools, vectors, strict=True)]
        await self.vectors.replace_incident(f"catalogue:{self.namespace}", points)
        self._catalogue = fingerprint

    async def rank(self, query: str, tools: Sequence[McpTool]) -> list[str]:
        """Tool names by priority; raises AgentError when the vector store is unavailable."""
        await self._sync_catalogue(tools)
        vector = (await self.embedder.embed([query]))[0]
        matching = [str(h.payload.get("name")) for h in
                    await self.vectors.search(vector, self._section(CATALOGUE), self.candidate_k)]
        hits = await self.vectors.search(vector, self._section(TRIGGERS), self.candidate_k, among=self.projects)
        hits.sort(key=lambda h: h.score * float(h.payload.get("weight") or 1.0), reverse=True)
        past = [str(name) for h in hits for name in h.payload.get("tools") or []]
        live = {t.name for t in tools}
        ranked = [n for n in _merge(list(dict.fromkeys(past)), matching, min(self.reserved, self.max_full))
                  if n in live]
        return ranked


async def render_tool_block(tools: Sequence[McpTool], query: str, budget_tokens: int,
                            selector: ToolSelector | None, max_full: int = budgets.TOOL_MAX_FULL_SCHEMAS
                            ) -> tuple[str, list[str]]:
    """The tool block of an explorer prompt and the names left out of it. A small catalogue that fits is
    shown whole; otherwise retrieval orders it, and without retrieval it degrades to compact lines."""
    everything = {t.name for t in tools}
    if len(tools) <= max_full:
        text, omitted = render_tools(tools, everything, budget_tokens)
        if not omitted:
            return text, omitted
    ranked: list[str] = []
    if selector is not None:
        try:
            ranked = await selector.rank(query, tools)
        except AgentError as exc:
            log.warning("tool retrieval unavailable; compact tool list within the budget: %s", exc)
    by_name = {t.name: t for t in tools}
    ordered = [by_name[n] for n in ranked] + [t for t in tools if t.name not in set(ranked)]
    text, omitted = render_tools(ordered, set(ranked[:max_full]), budget_tokens)
    if omitted:
        log.info("tool block: %d of %d tools left out of the prompt (still callable)", len(omitted), len(tools))
    return text, omitted

"""One planner call of an investigation turn: narration, or orchestration code over the tool catalogue.

Seed edges: when the planner declines ("no tool fits") while tools were left out of its prompt, it is asked
once more with a fresh candidate page (the tools left out); when the catalogue is over the prompt budget and
the tool-selection vector store is unreachable, the turn is aborted with a clear error (no degraded list).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.prompt_fit import ToolBounds
from hummingbird_agent.bamboo.explore.tool_selection import ToolSelector, render_tools, tool_budget
from hummingbird_agent.bamboo.investigate.state import InvestigationState
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.mcp import McpTool
from hummingbird_agent.bamboo.prompts import load_prompt, render
from hummingbird_agent.errors import AgentError, PermanentError

log = logging.getLogger(__name__)
OVER_BUDGET = ("the tool catalogue does not fit the planner's prompt and the tool-selection vector store is "
               "unreachable, so the tools cannot be chosen; this turn was not taken (try again when the vector "
               "store is back)")


class InvestigationError(PermanentError):
    """A turn that cannot be taken (its reason is one line for the human)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What the planner said: narration, or code (possibly empty) with capability gaps."""

    narration: str = ""
    code: str = ""
    gaps: tuple[dict[str, str], ...] = ()
    escalated: bool = False


def parse_plan(answer: Mapping[str, Any]) -> Plan:
    narration = answer.get("narration")
    code = answer.get("orchestration_code") or answer.get("code")
    raw = answer.get("capability_gaps")
    gaps = tuple({"investigation": str(g.get("investigation") or ""),
                  "suggested_tool_capability": str(g.get("suggested_tool_capability") or "")}
                 for g in (raw if isinstance(raw, list) else []) if isinstance(g, Mapping) and g.get("investigation"))
    if isinstance(code, str) and code.strip():
        return Plan(code=code.strip(), gaps=gaps)
    if isinstance(narration, str) and narration.strip():
        return Plan(narration=narration.strip(), gaps=gaps)
    return Plan(gaps=gaps)


async def tool_page(tools: Sequence[McpTool], query: str, budget_tokens: int,
                    selector: ToolSelector | None) -> tuple[str, list[str]]:
    """The tool block and the names left out. A catalogue that fits is shown whole without retrieval; one
    over the budget needs retrieval, and without it the turn is aborted (InvestigationError)."""
    small = len(tools) <= budgets.TOOL_MAX_FULL_SCHEMAS
    text, omitted = render_tools(tools, {t.name for t in tools} if small else set(), budget_tokens)
    if not omitted:
        return text, omitted
    if selector is None:
        raise InvestigationError(OVER_BUDGET)
    try:
        ranked = await selector.rank(query, tools)
    except AgentError as exc:
        log.warning("investigate: tool retrieval unavailable over budget: %s", exc)
        raise InvestigationError(OVER_BUDGET) from exc
    by_name = {t.name: t for t in tools}
    ordered = [by_name[n] for n in ranked] + [t for t in tools if t.name not in set(ranked)]
    return render_tools(ordered, set(ranked[: budgets.TOOL_MAX_FULL_SCHEMAS]), budget_tokens)


class Planner:
    def __init__(self, llm: JsonLLM, selector: ToolSelector | None, bounds: ToolBounds, guidance: str = "") -> None:
        """`bounds`: the configured window, margin and full-schema cap (bamboo.llm_context_window, ...)."""
        self._llm, self._selector, self._bounds, self._guidance = llm, selector, bounds, guidance

    async def plan(self, state: InvestigationState, utterance: str, tools: Sequence[McpTool]) -> Plan:
        system = load_prompt("investigate_system")
        values = _values(state, utterance, self._guidance)
        budget = tool_budget(self._bounds.window_tokens, system + render("investigate_user", tools="", **values),
                             self._bounds.margin_tokens)
        block, omitted = await tool_page(tools, f"{state.question}\n{utterance}", budget, self._selector)
        plan = await self._ask(system, render("investigate_user", tools=block, **values))
        if plan.code or plan.narration or not omitted:
            return plan
        # Declined while tools were left out: once more with the ones it did not see.
        log.info("investigate: planner declined with %d tool(s) left out; escalating once", len(omitted))
        left = [t for t in tools if t.name in set(omitted)]
        block, _ = render_tools(left, {t.name for t in left[: self._bounds.max_full]}, budget)
        again = await self._ask(system, render("investigate_user", tools=block, **values))
        return Plan(again.narration, again.code, (*plan.gaps, *again.gaps), True)

    async def _ask(self, system: str, user: str) -> Plan:
        try:
            return parse_plan(await self._llm.complete_json(system, user))
        except AgentError as exc:
            raise InvestigationError(f"the planner failed: {str(exc)[:300]}") from exc


def _values(state: InvestigationState, utterance: str, guidance: str) -> dict[str, str]:
    recent = state.history[-2 * budgets.INVESTIGATE_HISTORY_TURNS:]
    results = [f"- ran {', '.join(r.tools) or 'no tool'}: {r.preview[:600]}" for r in state.runs[-3:]]
    return {"question": state.question, "task": json.dumps(dict(state.task), default=str, sort_keys=True),
            "guidance": guidance[:4000] or "(none)",
            "history": "\n".join(f"[{who}] {text[:800]}" for who, text in recent) or "(none)",
            "results": "\n".join(results) or "(none)", "utterance": utterance}

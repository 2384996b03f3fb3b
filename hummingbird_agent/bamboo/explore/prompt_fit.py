"""Fitting the tool block of an orchestration prompt into the model's context window: the block is filled by the
bytes / 4 estimate, and the assembled prompt is counted with the provider's tokenizer only when it could be over
(its UTF-8 bytes exceed the window minus the margin); a prompt still over is re-fitted with the estimate scaled
by what the count said. Without a counter (OpenAI-compatible) the estimate stands.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.tool_selection import (
    ToolSelector,
    estimate_tokens,
    render_tool_block,
    tool_budget,
)
from hummingbird_agent.bamboo.mcp import McpTool
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)
# (system, user) -> the prompt's tokens by the provider's tokenizer, None when the provider has no counter.
Counter = Callable[[str, str], Awaitable[int | None]]


@dataclass(frozen=True, slots=True)
class ToolBounds:
    """The knobs of tool-list bounding (bamboo.llm_context_window, tool_budget_margin, tool_max_full_schemas)."""

    window_tokens: int = budgets.TOOL_CONTEXT_WINDOW_TOKENS
    margin_tokens: int = budgets.TOOL_BUDGET_MARGIN
    max_full: int = budgets.TOOL_MAX_FULL_SCHEMAS

    @property
    def limit_tokens(self) -> int:
        """Tokens the whole prompt may take."""
        return self.window_tokens - self.margin_tokens


@dataclass(frozen=True, slots=True)
class FittedPrompt:
    """The user text with its tool block, the tools left out of it, and the provider's count (None: estimated)."""

    user: str
    omitted: tuple[str, ...]
    counted_tokens: int | None = None


async def fit_tool_block(system: str, user_with: Callable[[str], str], tools: Sequence[McpTool], query: str,
                         bounds: ToolBounds, selector: ToolSelector | None, count: Counter | None) -> FittedPrompt:
    """The user prompt with the largest tool block that fits `bounds`, counted as described above; after
    TOOL_COUNT_ROUNDS counts still over, the last fit is kept (with a warning: the model may refuse it)."""
    budget = tool_budget(bounds.window_tokens, system + user_with(""), bounds.margin_tokens)
    rest = bounds.limit_tokens - budget  # the estimate of everything but the block
    fitted = FittedPrompt("", ())
    for _ in range(budgets.TOOL_COUNT_ROUNDS):
        block, omitted = await render_tool_block(tools, query, budget, selector, bounds.max_full)
        user = user_with(block)
        fitted = FittedPrompt(user, tuple(omitted))
        if count is None or len((system + user).encode()) <= bounds.limit_tokens:
            return fitted  # no counter, or surely within: a token is at least one byte
        counted = await _count(count, system, user)
        if counted is None:
            return fitted
        fitted = FittedPrompt(user, tuple(omitted), counted)
        if counted <= bounds.limit_tokens:
            return fitted
        # Scale the estimate by how far it was off, and shrink the block at least by the overshoot.
        ratio = counted / max(1, estimate_tokens(system + user))
        budget = min(math.floor(bounds.limit_tokens / ratio) - rest, budget - (counted - bounds.limit_tokens))
        log.info("tool block over the window by the provider's count (%d > %d tokens); refitting it in %d",
                 counted, bounds.limit_tokens, budget)
    log.warning("tool block still over the window after %d token counts (%s tokens, limit %d)",
                budgets.TOOL_COUNT_ROUNDS, fitted.counted_tokens, bounds.limit_tokens)
    return fitted


async def _count(count: Counter, system: str, user: str) -> int | None:
    try:
        return await count(system, user)
    except AgentError as exc:
        log.warning("token count unavailable; the bytes / 4 estimate stands: %s", exc)
        return None

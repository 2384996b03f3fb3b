"""System-prompt layering and warning choice (pure), and loading the prompt texts shipped in
hummingbird_agent/prompts/ (rendered with jinja2, StrictUndefined)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from importlib import resources

import jinja2

from hummingbird_agent import budgets
from hummingbird_agent.sandbox.base import WORKDIR
from hummingbird_agent.tools.spill import OUT_DIR

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)


class WarningKind(enum.Enum):
    """The one suffix a call may carry, in precedence order FINAL_TURN > EMPTY_NUDGE > ITERATION > CONTEXT."""

    FINAL_TURN = "final_turn_warning"
    EMPTY_NUDGE = "empty_response_nudge"
    ITERATION = "iteration_warning"
    CONTEXT = "context_warning"


def render_prompt(name: str, **values: object) -> str:
    """A shipped prompt file rendered with `values`; a missing value is an error, not an empty string."""
    text = resources.files("hummingbird_agent").joinpath(f"prompts/{name}.md").read_text(encoding="utf-8")
    return _ENV.from_string(text).render(**values).strip()


def base_system_prompt() -> str:
    return render_prompt(
        "base_system",
        workdir=WORKDIR,
        out_dir=OUT_DIR,
        spill_threshold_kb=budgets.SPILL_THRESHOLD_BYTES // 1024,
    )


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits of one run. A resumed session gets a fresh one."""

    max_iterations: int
    context_limit_tokens: int = budgets.CONTEXT_LIMIT_TOKENS
    max_empty_nudges: int = budgets.MAX_EMPTY_RESPONSE_NUDGES
    max_no_data_nudges: int = budgets.MAX_NO_DATA_NUDGES

    @property
    def warn_from_iteration(self) -> int:
        return math.ceil(self.max_iterations * budgets.WARNING_THRESHOLD_RATIO)

    @property
    def warn_from_tokens(self) -> int:
        return math.ceil(self.context_limit_tokens * budgets.WARNING_THRESHOLD_RATIO)


def choose_warning(iteration: int, budget: Budget, last_prompt_tokens: int, last_empty: bool) -> WarningKind | None:
    """The suffix for call number `iteration` (1-based), given the previous call's prompt tokens."""
    if iteration >= budget.max_iterations or last_prompt_tokens > budget.context_limit_tokens:
        return WarningKind.FINAL_TURN
    if last_empty:
        return WarningKind.EMPTY_NUDGE
    if iteration >= budget.warn_from_iteration:
        return WarningKind.ITERATION
    if last_prompt_tokens >= budget.warn_from_tokens:
        return WarningKind.CONTEXT
    return None


@dataclass(frozen=True, slots=True)
class SystemPrompt:
    """The stable layers: BASE_SYSTEM_PROMPT + tool notes + workflow body (+ CONTINUATION_PROMPT)."""

    base: str
    tool_notes: str
    workflow: str
    continuation: str = ""

    def stable(self) -> str:
        notes = f"## Tool notes\n\n{self.tool_notes}" if self.tool_notes else ""
        return "\n\n".join(layer for layer in (self.base, notes, self.workflow.strip(), self.continuation) if layer)

    def render(self, warning: WarningKind | None, iteration: int, budget: Budget) -> str:
        """The full system prompt of one call; the warning goes last so it overrides earlier text."""
        suffix = self.suffix(warning, iteration, budget)
        return f"{self.stable()}\n\n{suffix}" if suffix else self.stable()

    def suffix(self, warning: WarningKind | None, iteration: int, budget: Budget) -> str:
        """This call's warning text ("" without one); adapters send it outside the cached system prefix."""
        if warning is None:
            return ""
        return render_prompt(warning.value, remaining=budget.max_iterations - iteration + 1)

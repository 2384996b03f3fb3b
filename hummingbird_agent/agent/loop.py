"""The agent loop: provider-blind and budgeted. Each step rebuilds the system prompt (layers plus at most
one warning), calls the model, appends its turn verbatim and answers all its tool calls in one message."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from hummingbird_agent.agent.prompts import Budget, SystemPrompt, WarningKind, choose_warning
from hummingbird_agent.errors import AgentError
from hummingbird_agent.models.base import Content, Model, ModelRequest, ModelResponse, ToolCall, Usage
from hummingbird_agent.models.contents import tool_message
from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

Status = Literal["completed", "no_answer", "failed"]


@dataclass(frozen=True, slots=True)
class StepRecord:
    """What one iteration did, for the progress line and the transcript."""

    iteration: int
    warning: WarningKind | None
    tools: tuple[str, ...]
    usage: Usage
    total: Usage


@dataclass(frozen=True, slots=True)
class LoopResult:
    """How a run ended. `final_text` is the model's last non-empty answer ("" if it gave none)."""

    status: Status
    final_text: str
    contents: list[Content]
    steps: tuple[StepRecord, ...]
    usage: Usage
    reason: str = ""
    provider: str = ""
    """The adapter that answered last (`gemini`, `anthropic`, `openai`, `scripted`), for footers and metrics."""
    model: str = ""
    """The model name that provider reported."""


@dataclass(slots=True)
class _State:
    contents: list[Content]
    iteration: int = 0
    last_prompt_tokens: int = 0
    empty_streak: int = 0
    usage: Usage = field(default_factory=Usage)
    final_text: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    provider: str = ""
    model: str = ""


class AgentLoop:
    """One run of the loop over a message list; `on_step` sees every finished step (progress, checkpoint)."""

    def __init__(
        self,
        model: Model,
        model_name: str,
        registry: ToolRegistry,
        prompt: SystemPrompt,
        budget: Budget,
        on_step: Callable[[StepRecord, list[Content]], None] = lambda step, contents: None,
    ) -> None:
        self.model = model
        self.model_name = model_name
        self.registry = registry
        self.prompt = prompt
        self.budget = budget
        self.on_step = on_step
        self.state = _State(contents=[])

    async def run(self, contents: list[Content]) -> LoopResult:
        """Loop until the model answers, a budget ends the run, or the model fails (a failure result)."""
        self.state = _State(contents=list(contents))
        status: Status = "no_answer"
        reason = "the iteration budget ran out"
        try:
            while self.state.iteration < self.budget.max_iterations:
                done, stop_reason = await self.step()
                if done:
                    status = "completed" if self.state.final_text else "no_answer"
                    reason = stop_reason
                    break
        except AgentError as exc:
            log.error("agent run failed iteration=%d error=%s", self.state.iteration, exc)
            status, reason = "failed", str(exc)
        s = self.state
        return LoopResult(status, s.final_text, s.contents, tuple(s.steps), s.usage, reason, s.provider, s.model)

    async def step(self) -> tuple[bool, str]:
        """One iteration. Returns (done, why)."""
        s = self.state
        s.iteration += 1
        warning = choose_warning(s.iteration, self.budget, s.last_prompt_tokens, s.empty_streak > 0)
        response = await self.query(warning)
        calls = response.calls
        try:
            if response.empty or response.content is None:
                s.empty_streak += 1
                if warning is WarningKind.FINAL_TURN or s.empty_streak > self.budget.max_empty_nudges:
                    return True, "the model returned empty responses"
                return False, ""
            s.empty_streak = 0
            s.contents.append(response.content)
            if response.text.strip():
                s.final_text = response.text
            if calls:
                s.contents.append(await self.execute_tools(calls, enabled=warning is not WarningKind.FINAL_TURN))
            if warning is WarningKind.FINAL_TURN:
                return True, "final turn"
            return not calls, "answered"
        finally:
            s.steps.append(StepRecord(s.iteration, warning, tuple(c.name for c in calls), response.usage, s.usage))
            self.on_step(s.steps[-1], s.contents)

    async def query(self, warning: WarningKind | None) -> ModelResponse:
        """Build the request of this iteration and call the model; record its token counts."""
        s = self.state
        request = ModelRequest(
            model=self.model_name,
            system=self.prompt.stable(),
            system_suffix=self.prompt.suffix(warning, s.iteration, self.budget),
            contents=s.contents,
            tools=self.registry.declarations(),
            tools_enabled=warning is not WarningKind.FINAL_TURN,
        )
        response = await self.model.generate(request)
        s.usage = s.usage + response.usage
        s.last_prompt_tokens = response.usage.prompt_tokens
        s.provider, s.model = response.provider or s.provider, response.model or s.model
        return response

    async def execute_tools(self, calls: tuple[ToolCall, ...], enabled: bool = True) -> Content:
        """Run every call of one turn in order and answer them all in one tool message."""
        results: list[ToolResult] = []
        for call in calls:
            if enabled:
                result = await self.registry.execute(call.name, call.args)
            else:
                result = ToolResult.error("tools_disabled", "tools are disabled on the final turn")
            log.info("tool call tool=%s ok=%s spilled=%s", call.name, result.ok, result.spilled_path or "-")
            results.append(result)
        return tool_message(calls, [r.to_response() for r in results])

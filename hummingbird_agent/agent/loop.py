"""The agent loop: provider-blind and budgeted. Each step rebuilds the system prompt (layers plus at most
one warning), calls the model, appends its turn verbatim and answers all its tool calls in one message."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from hummingbird_agent.agent.audit import CallRecord, record_call
from hummingbird_agent.agent.prompts import Budget, SystemPrompt, WarningKind, choose_warning, render_prompt
from hummingbird_agent.errors import AgentError
from hummingbird_agent.models.base import Content, Model, ModelRequest, ModelResponse, ToolCall, Usage
from hummingbird_agent.models.contents import answered_tools, tool_message, user_text
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
    calls: tuple[CallRecord, ...] = ()
    """Every tool call in order, for the note's audit trail."""
    error_class: str = ""
    """For a failed run, the class of the error that ended it (TransientError, PermanentError, ...)."""
    no_data: bool = False
    """The run had to read data (`data_tools` given) and no data-source call succeeded, in this run or the
    resumed history: its answer is not an analysis of anything."""


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
    calls: list[CallRecord] = field(default_factory=list)
    data_read: bool = False
    data_nudges: int = 0


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
        data_tools: frozenset[str] | None = None,
    ) -> None:
        self.model = model
        self.model_name = model_name
        self.registry = registry
        self.prompt = prompt
        self.budget = budget
        self.on_step = on_step
        self.data_tools = data_tools
        """Tools whose successful call is a data read; None when the workflow may answer without one."""
        self.state = _State(contents=[])

    async def run(self, contents: list[Content]) -> LoopResult:
        """Loop until the model answers, a budget ends the run, or the model fails (a failure result)."""
        self.state = _State(contents=list(contents))
        self.state.data_read = self.data_tools is None or bool(answered_tools(contents) & self.data_tools)
        status: Status = "no_answer"
        reason, error_class = "the iteration budget ran out", ""
        try:
            while self.state.iteration < self.budget.max_iterations:
                done, stop_reason = await self.step()
                if done:
                    status = "completed" if self.state.final_text else "no_answer"
                    reason = stop_reason
                    break
        except AgentError as exc:
            log.error("agent run failed iteration=%d error=%s", self.state.iteration, exc)
            status, reason, error_class = "failed", str(exc), type(exc).__name__
        s = self.state
        return LoopResult(status, s.final_text, s.contents, tuple(s.steps), s.usage, reason, s.provider, s.model,
                          tuple(s.calls), error_class, not s.data_read)

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
            if not calls and self.nudge_to_read():
                return False, ""
            return not calls, "answered"
        finally:
            s.steps.append(StepRecord(s.iteration, warning, tuple(c.name for c in calls), response.usage, s.usage))
            self.on_step(s.steps[-1], s.contents)

    def nudge_to_read(self) -> bool:
        """An answer before any data was read gets NO_DATA_NUDGE once, as a user message (the answer stays in
        the history, so the model sees what it is asked to replace); True when the run goes on."""
        s = self.state
        if s.data_read or not self.data_tools or s.data_nudges >= self.budget.max_no_data_nudges:
            return False
        s.data_nudges += 1
        s.final_text = ""  # not an answer the note may present, even if the budget ends the run next
        s.contents.append(user_text(render_prompt("no_data_nudge", tools=", ".join(sorted(self.data_tools)))))
        log.info("answer without data, nudged to read iteration=%d", s.iteration)
        return True

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
            self.state.data_read |= result.ok and call.name in (self.data_tools or ())
            results.append(result)
            self.state.calls.append(record_call(call, result))
        return tool_message(calls, [r.to_response() for r in results])

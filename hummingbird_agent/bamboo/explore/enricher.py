"""ContextEnricher: plans (gap analysis, orchestration code) and runs read-only tools to fill what a review
or a diagnosis says is missing. The accumulator calls `enrich`, the navigator `explore`.

Failure contract (seed): nothing to do -> empty result; a genuine planning failure -> ExplorationError;
syntax, runtime or timeout errors in the code -> {} and a warning.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.exploration import (
    ExplorationError,
    ExplorationResult,
    parse_code,
    parse_gaps,
    result_of,
)
from hummingbird_agent.bamboo.explore.orchestration import RunOutcome, ToolGate, run_orchestration
from hummingbird_agent.bamboo.explore.prompt_fit import ToolBounds, fit_tool_block
from hummingbird_agent.bamboo.explore.tool_selection import ToolSelector
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import Enrichment
from hummingbird_agent.bamboo.learn.reviewer import HUMAN_INPUT_TOOL, NO_PROCEDURE, ToolInfo
from hummingbird_agent.bamboo.mcp import CompositeMcpClient, McpClient, McpTool
from hummingbird_agent.bamboo.mcp.procedures import PREFIX, ProcedureToolsClient
from hummingbird_agent.bamboo.prompts import load_prompt, render
from hummingbird_agent.bamboo.stores.base import NodeRow
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.errors import AgentError, SandboxError
from hummingbird_agent.sandbox.base import Sandbox

log = logging.getLogger(__name__)
HUMAN_QUESTION = ("No investigation procedure was captured for this incident. Which steps (logs, commands, "
                  "dashboards) did you use to find the cause?")
_Run = tuple[Sandbox, ToolGate, Mapping[str, Any]]
_current: contextvars.ContextVar[_Run] = contextvars.ContextVar("exploration_run")


def _hard_routed(issue: str) -> bool:
    return NO_PROCEDURE.lower() in issue.lower()


class ContextEnricher:
    """Explorer over an MCP client. `sandboxes()` gives a fresh unopened sandbox per run; `procedures` are
    stored Procedure rows offered as proc__ tools; `bounds` fit the tool block of the code prompt."""

    def __init__(self, llm: JsonLLM, client: McpClient, sandboxes: Callable[[], Sandbox],
                 selector: ToolSelector | None = None, procedures: Sequence[NodeRow] = (),
                 task_summary: Callable[[IncidentInput], Mapping[str, Any]] | None = None,
                 bounds: ToolBounds | None = None, code_timeout_s: float = budgets.EXPLORE_CODE_TIMEOUT_S) -> None:
        self._llm, self._sandboxes, self._selector = llm, sandboxes, selector
        read_only = {t.name for t in client.list_tools() if t.read_only}
        self._client = CompositeMcpClient([client, ProcedureToolsClient(procedures, read_only, self._replay)])
        self._summary = task_summary or (lambda incident: dict(incident.task_data))
        self._bounds, self._timeout_s = bounds or ToolBounds(), code_timeout_s
        self._connected = False

    # --- lifecycle: connect once for a long-lived enricher, or per exploration ---------------------------
    async def start(self) -> None:
        await self._client.connect()
        self._connected = True

    async def aclose(self) -> None:
        self._connected = False
        await self._client.close()

    def _tools(self) -> list[McpTool]:
        """Tools the automatic phases may run: read-only ones, minus the interactive human-input tool."""
        return [t for t in self._client.list_tools() if t.read_only and t.name != HUMAN_INPUT_TOOL]

    def available_tools(self) -> list[ToolInfo]:
        """For the reviewer: the read-only tools, and request_human_input when a client offers it."""
        return [ToolInfo(t.name, t.description) for t in self._client.list_tools()
                if t.read_only or t.name == HUMAN_INPUT_TOOL]

    # --- the two callers ----------------------------------------------------------------------------------
    async def enrich(self, incident: IncidentInput, issues: Sequence[str], doc_hints: Mapping[str, str]) -> Enrichment:
        found = await self.explore(incident, issues, "exploratory", doc_hints)
        return Enrichment(found.task_logs, found.external_data, found.capability_gaps, found.code)

    async def explore(self, incident: IncidentInput, issues: Sequence[str], mode: str = "exploratory",
                      doc_hints: Mapping[str, str] | None = None) -> ExplorationResult:
        """mode "exploratory" (gap analysis, then code) or "procedure" (the issues are historical procedures:
        no gap analysis, parameters as literals, no speculative calls)."""
        task = self._summary(incident)
        if not issues or not task:
            return ExplorationResult()
        owned = not self._connected
        if owned:
            await self.start()
        try:
            return await self._explore(task, list(issues), mode, dict(doc_hints or {}))
        finally:
            if owned:
                await self.aclose()

    async def _explore(self, task: Mapping[str, Any], issues: list[str], mode: str,
                       hints: Mapping[str, str]) -> ExplorationResult:
        logs = await self._ask_human([i for i in issues if _hard_routed(i)])
        issues = [i for i in issues if not _hard_routed(i)]
        tools = self._tools()
        if not issues or not tools:
            return ExplorationResult(task_logs=logs)
        gaps = issues if mode == "procedure" else await self._analyse_gaps(issues, task, hints, tools)
        if not gaps:
            return ExplorationResult(task_logs=logs)
        code, capability_gaps = await self._generate_code(gaps, task, hints, tools, mode)
        if not code:
            log.info("exploration: no tool fits; %d capability gap(s) recorded", len(capability_gaps))
            return ExplorationResult(capability_gaps=capability_gaps, task_logs=logs)
        return result_of(await self._run(code, task), tools, capability_gaps, code, logs)

    # --- the interactive loop (investigate): every tool, each call gated by the caller's allowed set ------
    def catalogue(self) -> list[McpTool]:
        """Every tool an investigation may propose, state-changing ones included (the human is the asker,
        so request_human_input is left out)."""
        return [t for t in self._client.list_tools() if t.name != HUMAN_INPUT_TOOL]

    @property
    def selector(self) -> ToolSelector | None:
        return self._selector

    @property
    def bounds(self) -> ToolBounds:
        return self._bounds

    async def run_gated(self, code: str, task: Mapping[str, Any], allowed: Callable[[], Collection[str]],
                        max_calls: int, timeout_s: float) -> RunOutcome:
        """Run reviewed code; every call is checked against `allowed()` at call time (alias-proof)."""
        return await self._run(code, task, ToolGate(self._client, allowed, max_calls), timeout_s)

    async def _run(self, code: str, task: Mapping[str, Any], gate: ToolGate | None = None,
                   timeout_s: float | None = None) -> RunOutcome:
        # The allowed set is asked at every call: a tool whose server went away is no longer callable.
        gate = gate or ToolGate(self._client, lambda: {t.name for t in self._tools()})
        timeout_s = timeout_s or self._timeout_s
        try:
            async with self._sandboxes() as box:
                token = _current.set((box, gate, task))
                try:
                    return await run_orchestration(box, code, task, gate, timeout_s)
                finally:
                    _current.reset(token)
        except SandboxError as exc:
            log.warning("orchestration code failed; no results this round: sandbox: %s", exc)
            return RunOutcome({}, error=f"sandbox: {exc}")

    async def _ask_human(self, routed: Sequence[str]) -> dict[str, str]:
        """The hard-routed "no investigation procedure captured" issue goes to request_human_input directly
        (seed: the LLM mis-routes it); without that tool it is dropped with a log line."""
        if not routed:
            return {}
        if HUMAN_INPUT_TOOL not in {t.name for t in self._client.list_tools()}:
            log.info("exploration: %s not available; the missing procedure stays missing", HUMAN_INPUT_TOOL)
            return {}
        try:
            answer = await self._client.call(HUMAN_INPUT_TOOL, {"prompt": HUMAN_QUESTION})
        except AgentError as exc:
            log.warning("exploration: %s failed: %s", HUMAN_INPUT_TOOL, exc)
            return {}
        return {"human_input:procedures": answer if isinstance(answer, str) else json.dumps(answer)} if answer else {}

    async def _analyse_gaps(self, issues: Sequence[str], task: Mapping[str, Any], hints: Mapping[str, str],
                            tools: Sequence[McpTool]) -> list[str]:
        """Call 1. Fail-open: any error means no actionable gaps (re-extraction proceeds unenriched)."""
        try:
            user = render("explore_gaps_user", issues=_bullets(issues), task=_json(task), hints=_hints(hints),
                          tools="\n".join(f"- {t.name}: {t.description.strip()[:120]}" for t in tools))
            return parse_gaps(await self._llm.complete_json(load_prompt("explore_gaps_system"), user))
        except AgentError as exc:
            log.warning("gap analysis failed; nothing to explore: %s", exc)
            return []

    async def _generate_code(self, gaps: Sequence[str], task: Mapping[str, Any], hints: Mapping[str, str],
                             tools: Sequence[McpTool], mode: str) -> tuple[str, tuple[dict[str, str], ...]]:
        """Call 2. Fail-hard: an error, or neither code nor capability gaps, raises ExplorationError."""
        name = "explore_procedure" if mode == "procedure" else "explore_code"
        system = load_prompt(f"{name}_system")
        values = {"gaps": _bullets(gaps), "task": _json(task), "hints": _hints(hints)}
        try:
            fitted = await fit_tool_block(system, lambda block: render(f"{name}_user", tools=block, **values), tools,
                                          "\n".join(gaps), self._bounds, self._selector, self._llm.count_tokens)
            return parse_code(await self._llm.complete_json(system, fitted.user))
        except ExplorationError:
            raise
        except AgentError as exc:
            raise ExplorationError(f"orchestration code generation failed: {exc}") from exc

    async def _replay(self, code: str) -> dict[str, Any]:
        """A proc__ tool: stored code through the current run's sandbox and gate, without proc__ tools."""
        box, gate, task = _current.get()
        inner = ToolGate(gate.client, lambda: {n for n in gate.allowed() if not n.startswith(PREFIX)},
                         gate.max_calls, gate.result_max_bytes, gate.total_max_bytes, gate.calls, gate.results)
        return (await run_orchestration(box, code, task, inner, self._timeout_s)).value


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {i}" for i in items)


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def _hints(hints: Mapping[str, str]) -> str:
    return "\n".join(f"[{k}] {v[:1000]}" for k, v in sorted(hints.items()) if v) or "(none)"

"""Executor backed by the agent engine: a WorkOrder becomes one run of the workflow in a fresh sandbox."""

from __future__ import annotations

import time
from collections.abc import Callable

from hummingbird_agent.agent.loop import LoopResult
from hummingbird_agent.agent.run import RunDeps, RunOutcome, RunRequest, SourceRegistrar, run_workflow, stop_kind
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.metrics import Metrics
from hummingbird_agent.models.base import Model
from hummingbird_agent.runner.executor import Publish, SaveSession
from hummingbird_agent.runner.triage_step import TriageService, starting_from
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sandbox.base import Sandbox
from hummingbird_agent.sessions.base import StoredSession


class AgentExecutor:
    """Runs orders with one shared model client and sandbox factory, built once at start-up."""

    def __init__(
        self, loaded: LoadedConfig, model: Model, sandbox_factory: Callable[[str], Sandbox],
        register_sources: SourceRegistrar, redact: Callable[[str], str] = str,
        answer_suffix: Callable[[], str] = lambda: "", metrics: Metrics | None = None,
        triage: TriageService | None = None,
    ) -> None:
        self._loaded, self._model, self._sandboxes = loaded, model, sandbox_factory
        self._register_sources, self._redact, self._suffix = register_sources, redact, answer_suffix
        self._metrics = metrics if metrics is not None else Metrics()
        self._triage = triage

    async def run(self, order: WorkOrder, resume: StoredSession | None, publish: Publish, save: SaveSession) -> None:
        async def deliver(note: str, result: LoopResult) -> None:
            await publish(result.status == "completed", note)

        request = RunRequest(
            workflow=order.workflow, project=order.project, mr_iid=order.mr_iid, pipeline_id=order.pipeline_id,
            resume=resume, message=order.message if resume is not None else None, session_id=order.session_id,
            extra=self._task_facts(order),
        )
        deps = RunDeps(
            loaded=self._loaded, model=self._model, sandbox_factory=self._sandboxes,
            register_sources=self._register_sources, publish=deliver, save=save, redact=self._redact,
            answer_suffix=self._suffix,
        )
        found = await self._triage.for_order(order) if self._triage is not None and resume is None else None
        request, deps = starting_from(found, request, deps)
        started = time.monotonic()
        outcome = await run_workflow(request, deps)
        self._record(order.workflow, outcome, time.monotonic() - started)

    def _record(self, workflow: str, outcome: RunOutcome, wall_s: float) -> None:
        """Runs by outcome, run time, tool calls and the session save of one finished run."""
        m = self._metrics
        # An answer that rests on no data (a require_data workflow that read none) is not counted as completed.
        answered = "no_data" if outcome.result.no_data else "completed"
        m.runs.labels(workflow, stop_kind(outcome.result) or answered).inc()
        m.run_duration.labels(workflow).observe(wall_s)
        for call in outcome.result.calls:
            # The model may name a tool that does not exist: one label value for all of them.
            tool = "unknown" if call.error_kind == "unknown_tool" else call.tool
            m.tool_calls.labels(tool, call.error_kind or "ok").inc()
        if outcome.saved or outcome.problems:
            m.session_saves.labels("saved" if outcome.saved else "failed").inc()

    @staticmethod
    def _task_facts(order: WorkOrder) -> dict[str, object]:
        """What the first user message tells the model beyond project and MR."""
        facts: dict[str, object] = {"trigger": order.trigger}
        if order.sha:
            facts["sha"] = order.sha
        if order.trigger == "command" and order.message:
            facts["request"] = order.message
        return facts

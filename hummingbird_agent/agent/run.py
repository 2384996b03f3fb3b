"""One workflow run: load the workflow, open a sandbox (restoring a resumed session's files), build the
tool registry, run the loop, hand the note to `publish`, then save the session (best effort, after the note)."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.agent.links import seen_text, unlink_unseen
from hummingbird_agent.agent.loop import AgentLoop, LoopResult, StepRecord
from hummingbird_agent.agent.prompts import Budget, SystemPrompt, base_system_prompt, render_prompt
from hummingbird_agent.agent.report import RunAudit, audited_note
from hummingbird_agent.agent.transcript import render_transcript
from hummingbird_agent.config.loading import LoadedConfig, WorkflowConfig
from hummingbird_agent.config.model_targets import workflow_target
from hummingbird_agent.errors import AgentError, PermanentError
from hummingbird_agent.gitlab.quiet import quiet_markdown
from hummingbird_agent.models.base import Content, Model
from hummingbird_agent.models.contents import user_text
from hummingbird_agent.observability import log_context, scrub
from hummingbird_agent.sandbox.base import Sandbox
from hummingbird_agent.sandbox.lazy import LazySandbox
from hummingbird_agent.sessions.base import StoredSession, validate_session_id
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.sandbox_tools import register_sandbox_tools
from hummingbird_agent.tools.spill import Spiller

log = logging.getLogger(__name__)

CONTEXT_VERSION = 1
# The model error whose text the note states (the adapters' own sentence, no provider text): went silent, retried.
TIMED_OUT = "ModelTimedOut"
# register_sources(registry, loaded, workflow, project): the data-source tools of one run; returns one
# sentence per source it skipped (missing credentials), which the model and the note are told about.
SourceRegistrar = Callable[[ToolRegistry, LoadedConfig, str, str], Sequence[str] | None]
# publish(note, result): called once with the final note text before the session is saved.
Publish = Callable[[str, LoopResult], Awaitable[None]]
Save = Callable[[Mapping[str, Any], str, AsyncIterable[bytes] | None], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What to run. With `resume`, `message` is the user's reply and the saved session id is kept unless
    `session_id` is given; `extra` adds facts (trigger, sha, ...) to the first user message."""

    workflow: str
    project: str
    mr_iid: int
    pipeline_id: int | None = None
    resume: StoredSession | None = None
    message: str | None = None
    session_id: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)
    evidence: bool = False
    """`extra` carries data read for the model (the triage): an answer from it is not an answer from no data."""


@dataclass(frozen=True, slots=True)
class RunDeps:
    """Everything a run uses, built once by the caller."""

    loaded: LoadedConfig
    model: Model
    sandbox_factory: Callable[[str], Sandbox]
    register_sources: SourceRegistrar = lambda registry, loaded, workflow, project: None
    publish: Publish | None = None
    save: Save | None = None
    on_step: Callable[[StepRecord, list[Content]], None] = lambda step, contents: None
    redact: Callable[[str], str] = str
    answer_suffix: Callable[[], str] = lambda: ""
    """Appended to the model's answer, before the audit trail (e.g. the knowledge base's citations)."""
    answer_prefix: str = ""
    """Put before the model's answer (the triage's verdicts); kept when the model fails."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    session_id: str
    note: str
    result: LoopResult
    saved: bool
    problems: tuple[str, ...] = field(default=())


def load_workflow(loaded: LoadedConfig, name: str) -> tuple[WorkflowConfig, str]:
    """The workflow's settings and prompt body; PermanentError (one line) when unknown or unreadable."""
    workflow = loaded.config.workflows.get(name)
    if workflow is None:
        known = ", ".join(sorted(loaded.config.workflows)) or "none"
        raise PermanentError(f"unknown workflow {name!r} (configured: {known})")
    path = loaded.prompt_path(name)
    try:
        return workflow, path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PermanentError(f"workflow {name}: cannot read prompt file {path} ({exc.strerror})") from None


def initial_contents(request: RunRequest) -> tuple[str, list[Content]]:
    """Session id and starting messages: the task JSON, or the saved history plus the user's reply."""
    if request.resume is None:
        task: dict[str, object] = {"project": request.project, "iid": request.mr_iid, "workflow": request.workflow}
        if request.pipeline_id is not None:
            task["pipeline_id"] = request.pipeline_id
        task.update(request.extra)
        session_id = validate_session_id(request.session_id) if request.session_id else str(uuid.uuid4())
        return session_id, [user_text(json.dumps(task))]
    if not request.message:
        raise PermanentError("resuming a session needs a message (--message TEXT)")
    session_id = validate_session_id(request.session_id or str(request.resume.context.get("session_id", "")))
    history = request.resume.context["contents"]
    if not all(isinstance(c, dict) and "role" in c and "parts" in c for c in history):
        raise PermanentError("the saved session's contents are malformed")
    return session_id, [*history, user_text(request.message)]


async def run_workflow(request: RunRequest, deps: RunDeps) -> RunOutcome:
    """Run `request` once. Model failures end in a failure note, never an exception."""
    started = time.monotonic()
    workflow, body = load_workflow(deps.loaded, request.workflow)
    session_id, contents = initial_contents(request)
    with log_context(session_id=session_id, project=request.project, mr_iid=request.mr_iid, workflow=request.workflow):
        restore_from = request.resume.archive if request.resume is not None else None
        async with LazySandbox(deps.sandbox_factory(session_id), restore_from) as sandbox:
            registry = ToolRegistry(Spiller(sandbox), deps.redact)
            register_sandbox_tools(registry)
            gaps = tuple(deps.register_sources(registry, deps.loaded, request.workflow, request.project) or ())
            continuation = render_prompt("continuation") if request.resume is not None else ""
            prompt = SystemPrompt(base_system_prompt(), _tool_notes(registry, gaps), body, continuation)
            budget = Budget(workflow.max_iterations, deps.loaded.config.model.context_limit_tokens)
            model_name = workflow_target(deps.loaded.config, request.workflow).name
            needs_data = workflow.require_data and not request.evidence
            data_tools = frozenset(registry.data_source_tools()) if needs_data else None
            loop = AgentLoop(deps.model, model_name, registry, prompt, budget, deps.on_step, data_tools)
            result = await loop.run(contents)
            answer, unlinked = unlink_unseen(final_note(request.workflow, result),
                                             seen_text(result.contents, prompt.stable()))
            # The answer is data: it may quote a log's `@all` or `#12`; only the service's own text mentions.
            answer = quiet_markdown(answer)
            audit = run_audit(deps, request, workflow, session_id, result, gaps, time.monotonic() - started,
                              unlinked)
            answer = answer + deps.answer_suffix() if answer else answer
            answer = "\n\n".join(part for part in (deps.answer_prefix, answer) if part)
            limit = budgets.NOTE_MAX_CHARS - budgets.NOTE_TAIL_RESERVE_CHARS
            note = deps.redact(audited_note(answer, audit, limit))
            log.info("run finished status=%s stop=%s correlation_id=%s iterations=%d tool_calls=%d",
                     result.status, audit.stop or "-", audit.correlation_id, audit.iterations, len(result.calls))
            if deps.publish is not None:
                await deps.publish(note, result)
            saved, problems = await _save(deps, session_id, request, prompt, result, sandbox)
    return RunOutcome(session_id, note, result, saved, problems)


def _tool_notes(registry: ToolRegistry, gaps: Sequence[str]) -> str:
    """The registry's notes, plus the sources this run does not have, so the model does not guess their data."""
    notes = registry.notes()
    if not gaps:
        return notes
    missing = render_prompt("unavailable_sources", gaps=list(gaps))
    return f"{notes}\n\n{missing}" if notes else missing


def run_audit(deps: RunDeps, request: RunRequest, workflow: WorkflowConfig, session_id: str, result: LoopResult,
              gaps: Sequence[str], wall_s: float, unlinked: int = 0) -> RunAudit:
    """What the note's footer and details state about this run; provider and model as the provider reported
    them, else as configured."""
    target = workflow_target(deps.loaded.config, request.workflow)
    return RunAudit(
        workflow=request.workflow, provider=result.provider or target.connection.provider,
        model=result.model or target.name,
        session_id=session_id, iterations=len(result.steps), max_iterations=workflow.max_iterations,
        usage=result.usage, wall_s=wall_s, calls=result.calls, source_gaps=tuple(gaps), stop=stop_kind(result),
        error_class=result.error_class, correlation_id=uuid.uuid4().hex[:12], no_data=result.no_data,
        unlinked=unlinked, stop_detail=result.reason if result.error_class == TIMED_OUT else "",
    )


def stop_kind(result: LoopResult) -> str:
    """Why a run without an answer ended: budget, model_error, tool_failure, or no_answer ("" if answered)."""
    if result.status == "completed":
        return ""
    if result.status == "failed":
        return "model_error"
    if result.reason in ("the iteration budget ran out", "final turn"):
        return "budget"
    last = result.steps[-1].tools if result.steps else ()
    if last and any(c.error_kind for c in result.calls[-len(last):]):
        return "tool_failure"
    return "no_answer"


def final_note(workflow: str, result: LoopResult) -> str:
    """The model's answer ("" when there is none: the audited note then says why the run stopped)."""
    return result.final_text.strip()


async def _save(
    deps: RunDeps, session_id: str, request: RunRequest, prompt: SystemPrompt, result: LoopResult,
    sandbox: LazySandbox,
) -> tuple[bool, tuple[str, ...]]:
    if deps.save is None:
        return False, ()
    # Redacted as structures, before JSON or Markdown could escape a secret; the history a reply resumes
    # has `[redacted]` where a secret was, as every other copy of the run does.
    result = dataclasses.replace(result, contents=scrub(result.contents, deps.redact))
    context = {
        "version": CONTEXT_VERSION,
        "session_id": session_id,
        "workflow": request.workflow,
        "project": request.project,
        "mr_iid": request.mr_iid,
        "pipeline_id": request.pipeline_id,
        "status": result.status,
        "iterations": len(result.steps),
        "contents": result.contents,
    }
    facts = {k: context[k] for k in ("session_id", "workflow", "project", "mr_iid", "status", "iterations")}
    transcript = deps.redact(render_transcript(f"{request.workflow} run", facts, prompt.stable(), result))
    try:
        # An unused sandbox has nothing new: the stores keep a resumed session's earlier archive.
        await deps.save(context, transcript, sandbox.archive() if sandbox.used else None)
    except (AgentError, OSError) as exc:
        log.warning("session %s not saved: %s", session_id, exc)
        return False, (f"session not saved: {exc}",)
    return True, ()

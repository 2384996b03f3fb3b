"""The `run` command: build the dependencies of one run from the config and the arguments, run the
workflow, print the note to stdout and one progress line per iteration to stderr."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from hummingbird_agent.agent.loop import LoopResult, StepRecord
from hummingbird_agent.agent.run import RunDeps, RunOutcome, RunRequest, SourceRegistrar, load_workflow, run_workflow
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import PermanentError
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.client import MrHead
from hummingbird_agent.models.base import Content, Model
from hummingbird_agent.models.factory import build_model
from hummingbird_agent.observability import setup_logging
from hummingbird_agent.runner.triage_step import TriageService, starting_from
from hummingbird_agent.sandbox import SandboxFactory
from hummingbird_agent.sessions.base import StoredSession, validate_session_id
from hummingbird_agent.sessions.local import load_directory, save_directory
from hummingbird_agent.triage.render import section

# post(request, note, ok): what --post does with the note once it is printed.
Poster = Callable[[RunRequest, str, bool], Awaitable[None]]
# check(project, mr_iid): the MR's head, or AgentError when the MR cannot be read; runs before the sandbox and
# the model.
MrCheck = Callable[[str, int], Awaitable[MrHead]]
# Exit codes: 0 the model answered; 1 the run ended without an answer or the session was not saved.
EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE = 0, 1, 2


def run_command(
    loaded: LoadedConfig, args: argparse.Namespace, register_sources: SourceRegistrar | None = None,
    poster: Poster | None = None, check: MrCheck | None = None,
) -> int:
    """`python -m hummingbird_agent run ...` for an agent workflow (the caller has checked it with
    `require_agent_workflow`, before --post asks for a token); bad input raises AgentError (printed by main as one
    line), and so does `check` (the MR read first). With `poster` (from --post) the note is also posted to the MR
    after it is printed; without it the printed note does not invite a reply."""
    request = build_request(args)
    model = build_model(loaded)
    redact = setup_logging(loaded.env.get("LOG_LEVEL", "WARNING"), loaded.secret_values(), json_lines=False)
    outcome = asyncio.run(execute(loaded, request, model, args.save_session, register_sources, redact, poster=poster,
                                  check=check))
    return report(outcome, sys.stderr)


def require_agent_workflow(loaded: LoadedConfig, name: str) -> None:
    """PermanentError (one line) unless `name` is a readable workflow of the agent engine (a bamboo-diagnose
    workflow is run before this, by the runner's `run`)."""
    workflow, _ = load_workflow(loaded, name)
    if workflow.engine == "bamboo-investigate":
        raise PermanentError(f"workflow {name} is an interactive investigation: use `/hummingbird {name} <question>` "
                             "on the MR, or `bamboo investigate \"<question>\"` at a terminal")
    if workflow.engine != "agent":
        raise PermanentError(
            f"workflow {name} learns into the knowledge base (engine {workflow.engine}) from the bot's analysis notes "
            "on the MR, which `run` does not do: use `/hummingbird learn` on the MR with the service running, or "
            "`bamboo populate`")


def build_request(args: argparse.Namespace) -> RunRequest:
    """The run the arguments ask for; a bad --resume directory fails here, before any set-up."""
    if args.resume and not args.message:
        raise PermanentError("--resume needs --message TEXT (the reply to answer)")
    resume = load_directory(Path(args.resume)) if args.resume else None
    return RunRequest(
        workflow=args.workflow,
        project=args.project,
        mr_iid=args.mr,
        pipeline_id=args.pipeline,
        resume=resume,
        message=args.message,
        # Known before the run so that a posted note can carry it in its session marker; a resumed run
        # keeps the saved session's id, so replies to its note resume it too.
        session_id=_saved_session_id(resume) if resume is not None else str(uuid.uuid4()),
    )


def _saved_session_id(resume: StoredSession) -> str:
    session_id = resume.context.get("session_id")
    if not isinstance(session_id, str):
        raise PermanentError("--resume: the saved context.json has no session_id")
    return validate_session_id(session_id)


async def execute(
    loaded: LoadedConfig,
    request: RunRequest,
    model: Model,
    save_session: str | None = None,
    register_sources: SourceRegistrar | None = None,
    redact: Any = str,
    out: TextIO | None = None,
    err: TextIO | None = None,
    poster: Poster | None = None,
    check: MrCheck | None = None,
) -> RunOutcome:
    """Run once with the configured sandbox backend; the note goes to `out`, progress to `err`.
    `check` runs first; the model is closed at the end."""
    out, err = out or sys.stdout, err or sys.stderr
    sandboxes = SandboxFactory(loaded.config.sandbox)
    max_iterations = loaded.config.workflows[request.workflow].max_iterations

    async def publish(note: str, result: LoopResult) -> None:
        if poster is None:
            note = note_text.unposted_body(note)
        elif save_session is None:  # nothing a reply could resume: the note must not invite one
            note = note_text.unkept_body(note)
        print(note, file=out, flush=True)
        if poster is not None:
            await poster(request, note, result.status == "completed")

    def progress(step: StepRecord, contents: list[Content]) -> None:
        tools = ", ".join(step.tools) or "none"
        total = step.total
        print(
            f"iteration {step.iteration}/{max_iterations}: tools {tools}; tokens so far "
            f"{total.prompt_tokens + total.candidate_tokens} (prompt {total.prompt_tokens}, "
            f"output {total.candidate_tokens}, cached {total.cached_tokens})",
            file=err,
            flush=True,
        )

    deps = RunDeps(
        loaded=loaded,
        model=model,
        sandbox_factory=sandboxes.new,
        register_sources=register_sources or (lambda registry, loaded, workflow, project: None),
        publish=publish,
        save=partial(save_directory, Path(save_session)) if save_session else None,
        on_step=progress,
        redact=redact,
    )
    try:
        if check is not None:
            await check(request.project, request.mr_iid)
        request, deps = await _with_triage(loaded, request, deps, err)
        await sandboxes.start()
        return await run_workflow(request, deps)
    finally:
        await model.aclose()
        await sandboxes.close()


async def _with_triage(loaded: LoadedConfig, request: RunRequest, deps: RunDeps,
                       err: TextIO) -> tuple[RunRequest, RunDeps]:
    """A new run of a workflow with `triage.enabled` starts from the verdicts, as in the service (the
    knowledge base's known causes are left to the service, which keeps its stores open). The verdicts are printed
    to `err` at once: a slow model delays only its explanation (the note on stdout repeats them)."""
    if request.resume is not None:
        return request, deps
    found = await TriageService(loaded).compute(request.workflow, request.project, request.mr_iid,
                                                pipeline_id=request.pipeline_id)
    if found is not None:
        print(f"{section(found)}\n\n(triage done; the model's explanation follows in the note)", file=err, flush=True)
    return starting_from(found, request, deps)


def report(outcome: RunOutcome, err: TextIO) -> int:
    """Print the run's problems as one line each; the exit code says whether there is an answer."""
    for problem in outcome.problems:
        print(f"error: {problem}", file=err)
    if outcome.result.status != "completed":
        print(f"error: the run ended without an answer: {outcome.result.reason}", file=err)
        return EXIT_NO_ANSWER
    return EXIT_NO_ANSWER if outcome.problems else EXIT_OK

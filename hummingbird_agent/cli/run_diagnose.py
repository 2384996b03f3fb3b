"""`run` for a bamboo-diagnose workflow: the failing jobs of the MR's head commit diagnosed from the knowledge
base by the service's executor (as `/hummingbird bamboo-diagnose` does), the note printed, and posted with
--post. No sandbox and no session."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections.abc import AsyncIterable, Mapping
from typing import Any, TextIO

from hummingbird_agent.agent.run import RunRequest
from hummingbird_agent.bamboo.factory import build_stores
from hummingbird_agent.bamboo.service import build_navigator
from hummingbird_agent.bamboo.stores.base import opened
from hummingbird_agent.cli.run import EXIT_NO_ANSWER, EXIT_OK, MrCheck, Poster
from hummingbird_agent.cli.run_post import make_mr_check, make_poster
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import PermanentError
from hummingbird_agent.models.base import Model
from hummingbird_agent.models.factory import build_model
from hummingbird_agent.observability import setup_logging
from hummingbird_agent.runner.bamboo_executor import BambooDiagnoseExecutor
from hummingbird_agent.runner.work_order import WorkOrder


def check_arguments(args: argparse.Namespace) -> None:
    """The agent-only options are refused in one line: this engine keeps no session to save or resume."""
    for option, given in (("--resume", args.resume), ("--save-session", args.save_session)):
        if given:
            raise PermanentError(f"{option}: workflow {args.workflow} runs on the knowledge base, which keeps no "
                                 "session (one note per run)")


def diagnose_command(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    """`run <bamboo-diagnose workflow> --project P --mr N [--pipeline ID] [--message TEXT] [--post]`; bad input,
    an unreadable MR or locked stores raise AgentError (one line, printed by main) before any model call."""
    poster = make_poster(loaded, args.workflow) if args.post else None
    check = make_mr_check(loaded, args.workflow, args.post)
    model = build_model(loaded)
    setup_logging(loaded.env.get("LOG_LEVEL", "WARNING"), loaded.secret_values(), json_lines=False)
    return asyncio.run(diagnose(loaded, args, model, check, poster))


def work_order(args: argparse.Namespace, project_id: int, sha: str | None) -> WorkOrder:
    """The order of one CLI run: a new id each time (as a new `/hummingbird` command gets one), and the
    `command` trigger, so that --message is the member's request as a command's text is."""
    return WorkOrder(kind="new_session", session_id=str(uuid.uuid4()), workflow=args.workflow, trigger="command",
                     project_id=project_id, project=args.project, mr_iid=args.mr, sha=sha,
                     pipeline_id=args.pipeline, message=args.message)


async def diagnose(loaded: LoadedConfig, args: argparse.Namespace, model: Model, check: MrCheck,
                   poster: Poster | None, out: TextIO | None = None) -> int:
    """Read the MR, open the stores, run the executor; the model is closed at the end."""
    out = out or sys.stdout
    outcome: list[bool] = []
    try:
        head = await check(args.project, args.mr)
        order = work_order(args, head.project_id, head.sha)
        request = RunRequest(workflow=order.workflow, project=order.project, mr_iid=order.mr_iid,
                             pipeline_id=order.pipeline_id, session_id=order.session_id)

        async def publish(ok: bool, text: str) -> None:
            print(text if ok else f"error: {text}", file=out if ok else sys.stderr, flush=True)
            if poster is not None:
                await poster(request, text, ok)
            outcome.append(ok)

        async with opened(build_stores(loaded)) as stores:
            executor = BambooDiagnoseExecutor(loaded, build_navigator(loaded, model, stores))
            await executor.run(order, None, publish, _no_session)
    finally:
        await model.aclose()
    return EXIT_OK if outcome == [True] else EXIT_NO_ANSWER


async def _no_session(context: Mapping[str, Any], transcript: str, archive: AsyncIterable[bytes] | None) -> None:
    """The knowledge-base engines never save a session; the executor's signature asks for a saver."""

"""`bamboo investigate "<question>" [--project P --mr N | --incident FILE]`: the investigation loop at a
terminal, one prompt per turn; the operator at the terminal is the reviewer who approves. The prompt shows the
id of the proposal waiting, and a bare `approve` or `reject` typed at it names that id (the one the operator saw)."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Callable
from typing import Any

from hummingbird_agent.bamboo.investigate import InvestigationKit, InvestigationState
from hummingbird_agent.bamboo.investigate.replies import parse
from hummingbird_agent.bamboo.stores.base import opened
from hummingbird_agent.bamboo.workflow_names import INVESTIGATE_ENGINE
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.errors import AgentError, ConfigError

PROMPT = "investigate> "
PENDING_PROMPT = "investigate [approve {id}]> "
ENDED = "Input ended: the investigation is left unfinished and nothing was stored."


def task_of(project: str | None, mr: int | None, incident: str | None) -> dict[str, Any]:
    """The `task` facts; ConfigError (one line) for a contradictory choice."""
    from hummingbird_agent.bamboo.service import read_incident

    if incident and (project or mr is not None):
        raise ConfigError("give either --incident or --project/--mr, not both")
    if mr is not None and not project:
        raise ConfigError("--mr needs --project")
    if incident:
        return dict(read_incident(incident).task_data)
    return {k: v for k, v in (("project", project), ("mr_iid", mr)) if v is not None}


def investigate_command(loaded: LoadedConfig, question: str, project: str | None, mr: int | None,
                        incident: str | None) -> int:
    from hummingbird_agent.bamboo.factory import build_stores
    from hummingbird_agent.bamboo.service import build_investigation
    from hummingbird_agent.models import build_model

    try:
        task = task_of(project, mr, incident)
        if not question.strip():
            raise ConfigError("the question is empty")
        stores = build_stores(loaded)
        model = build_model(loaded)
        workflow = next((n for n, w in loaded.config.workflows.items() if w.engine == INVESTIGATE_ENGINE), "")
        kit = build_investigation(loaded, model, stores, workflow)
    except AgentError as exc:
        print(f"error: bamboo investigate: {exc}", file=sys.stderr)
        return 2
    state = InvestigationState(str(uuid.uuid4()), question.strip(), task)

    async def run() -> int:
        try:
            async with opened(stores):
                return await converse(kit, state, input)
        except AgentError as exc:
            print(f"error: bamboo investigate: {exc}", file=sys.stderr)
            return 2
        finally:
            await model.aclose()

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        print("\n" + ENDED, file=sys.stderr)
        return 130


async def converse(kit: InvestigationKit, state: InvestigationState, ask: Callable[[str], str]) -> int:
    """Turns until the session is stored or abandoned, or input ends (then nothing is stored)."""
    async def checkpoint(_: InvestigationState) -> None:
        return None  # one process holds the session: nothing can redeliver a turn

    text = state.question
    async with kit.investigator(state.task, checkpoint) as investigator:
        while True:
            result = await investigator.turn(state, text)
            state = result.state
            print(result.reply + "\n", flush=True)
            if state.status != "open":
                return 0
            try:
                text = bound(state, await asyncio.to_thread(read_utterance, ask, prompt(state)))
            except EOFError:
                print("\n" + ENDED, flush=True)
                return 0


def prompt(state: InvestigationState) -> str:
    return PENDING_PROMPT.format(id=state.pending.id) if state.pending else PROMPT


def bound(shown: InvestigationState, text: str) -> str:
    """A bare `approve` or `reject` names the proposal whose id the prompt showed; anything else is left as typed."""
    said = parse(text)
    if said.word in ("approve", "reject") and not said.text and shown.pending is not None:
        return f"{said.word} {shown.pending.id}"
    return text


def read_utterance(ask: Callable[[str], str], shown: str) -> str:
    """One non-empty line; a line opening a ``` block reads on to the closing ``` (corrected code)."""
    text = ask(shown)
    while not text.strip():
        text = ask(shown)
    if not text.strip().startswith("```"):
        return text
    lines = [text]
    while True:
        line = ask("")
        lines.append(line)
        if line.strip().startswith("```"):
            return "\n".join(lines)

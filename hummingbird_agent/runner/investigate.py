"""The `bamboo-investigate` engine: `/hummingbird investigate <question>` opens an investigation session tied
to its thread, and each Developer+ reply in that thread is one turn (phase 1 checked the access level; the
session marker on each note routes the reply here). The state is the session's context.json, saved after
every turn's note, and before approved state-changing code runs, so a redelivered turn never runs it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hummingbird_agent.bamboo.investigate import InvestigationKit, InvestigationState, Tally
from hummingbird_agent.bamboo.investigate.replies import COMMANDS_HELP
from hummingbird_agent.metrics import Metrics
from hummingbird_agent.runner.executor import Publish, SaveSession
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sessions.base import StoredSession

log = logging.getLogger(__name__)
USAGE = ("Usage: `/hummingbird investigate <question>`: a question about this merge request's failure to "
         "investigate with the available tools.")
FOOTER = "\n\n_Reply in this thread (Developer+): {help}_"


def transcript(state: InvestigationState) -> str:
    lines = [f"# Investigation {state.session_id}", "", f"Question: {state.question}", ""]
    lines += [f"**{who}:**\n{text}\n" for who, text in state.history]
    return "\n".join(lines)


def context(state: InvestigationState) -> dict[str, Any]:
    """context.json of the session: the store asks every session for a `contents` list (an investigation
    keeps no model conversation) and the state goes beside it."""
    return {"contents": [], "investigation": state.to_json()}


def opening(order: WorkOrder) -> InvestigationState:
    task = {"project": order.project, "project_id": order.project_id, "mr_iid": order.mr_iid, "sha": order.sha}
    return InvestigationState(order.session_id, (order.message or "").strip(),
                              {k: v for k, v in task.items() if v is not None})


class InvestigateExecutor:
    """One turn per order. `kit(workflow)` gives the investigation parts of a workflow (built once each)."""

    def __init__(self, kit: Callable[[str], InvestigationKit], metrics: Metrics | None = None) -> None:
        self._build, self._metrics = kit, metrics or Metrics()
        self._kits: dict[str, InvestigationKit] = {}

    def _kit(self, workflow: str) -> InvestigationKit:
        if workflow not in self._kits:
            self._kits[workflow] = self._build(workflow)
        return self._kits[workflow]

    async def run(self, order: WorkOrder, resume: StoredSession | None, publish: Publish, save: SaveSession) -> None:
        if resume is None:
            state, text = opening(order), (order.message or "").strip()
            if not text:
                await publish(True, USAGE)
                return
        else:
            state, text = InvestigationState.from_json(resume.context.get("investigation") or {}), order.message or ""

        async def checkpoint(current: InvestigationState) -> None:
            await save(context(current), transcript(current), None)

        async with self._kit(order.workflow).investigator(state.task, checkpoint) as investigator:
            result = await investigator.turn(state, text, order.user_id)
        self._count(result.tally)
        footer = FOOTER.format(help=COMMANDS_HELP) if result.state.status == "open" else ""
        await publish(True, result.reply + footer)
        await save(context(result.state), transcript(result.state), None)

    def _count(self, tally: Tally) -> None:
        m = self._metrics
        m.investigate_turns.labels(tally.kind).inc()
        if tally.kind in ("approved", "rejected"):
            m.investigate_approvals.labels(tally.kind).inc()
        if tally.refused:
            m.investigate_refusals.inc(tally.refused)
        if tally.stored_procedures:
            m.investigate_procedures.inc(tally.stored_procedures)

"""Investigator: one turn of an investigation session, the same for the MR thread and the terminal.

Each turn answers from what is known (narration) or proposes code. Read-only code runs at once (unless
configured otherwise); code naming a state-changing tool runs only on `approve <id>` naming that proposal
(and, when configured, said by someone other than the human who wrote or asked for the code); `reject <id>`
drops only the proposal it names. Whatever the code does,
every call is checked at the proxy against the tools allowed for that run: the read-only ones, plus the
state-changing tools the approved code names. The caller checks who may speak (Developer+ in a thread).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.investigate import replies, storing
from hummingbird_agent.bamboo.investigate.planner import InvestigationError, Planner
from hummingbird_agent.bamboo.investigate.replies import Said
from hummingbird_agent.bamboo.investigate.state import Finalize, InvestigationState, Proposal, Run
from hummingbird_agent.bamboo.learn.accumulator import ToolMemory
from hummingbird_agent.bamboo.mcp.procedures import referenced_tools
from hummingbird_agent.bamboo.stores.base import Stores

log = logging.getLogger(__name__)
Checkpoint = Callable[[InvestigationState], Awaitable[None]]
CLOSED = "This investigation is {status}; start a new one with `investigate <question>`."


@dataclass(frozen=True, slots=True)
class Tally:
    """What one turn did, for the metrics: its kind, whether a run was approved, calls refused at the proxy,
    procedures stored."""

    kind: str
    approved: bool = False
    refused: int = 0
    stored_procedures: int = 0


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """Per-turn limits of the code that runs (budgets; a test may give smaller ones)."""

    max_calls: int = budgets.INVESTIGATE_MAX_TOOL_CALLS
    timeout_s: float = budgets.INVESTIGATE_TURN_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class TurnResult:
    state: InvestigationState
    reply: str
    tally: Tally


class Investigator:
    """`enricher` is started (catalogue and sandbox); `stores` are open; `checkpoint(state)` persists the
    state before approved state-changing code runs; `other_approver`: the human who wrote the code may not
    approve it."""

    def __init__(self, planner: Planner, enricher: ContextEnricher, stores: Stores, memory: ToolMemory | None,
                 checkpoint: Checkpoint, auto_run_read_only: bool = True, limits: TurnLimits = TurnLimits(),
                 other_approver: bool = False) -> None:
        self._planner, self._enricher, self._stores, self._memory = planner, enricher, stores, memory
        self._checkpoint, self._auto, self._limits = checkpoint, auto_run_read_only, limits
        self._other_approver = other_approver

    async def turn(self, state: InvestigationState, text: str, by: int | None = None) -> TurnResult:
        """`by`: the GitLab user id of who said `text` in a thread; None at the terminal."""
        said = replace(replies.parse(text), by=by)
        if state.status != "open":
            return TurnResult(state, CLOSED.format(status=state.status), Tally("closed"))
        if state.turns >= budgets.INVESTIGATE_MAX_TURNS and said.word in ("question", "code", "approve"):
            return TurnResult(state, f"This investigation reached its {budgets.INVESTIGATE_MAX_TURNS} turns. "
                              + replies.COMMANDS_HELP, Tally("limit"))
        try:
            result = await self._dispatch(replace(state, turns=state.turns + 1).said("human", text), said)
        except InvestigationError as exc:
            # No turn: the state stays as it was, so asking again later is the same turn.
            log.warning("investigate %s: turn not taken: %s", state.session_id, exc)
            return TurnResult(state, f"**Error:** {exc}", Tally("error"))
        return replace(result, state=result.state.said("bot", result.reply[:2000]))

    async def _dispatch(self, state: InvestigationState, said: Said) -> TurnResult:
        handlers = {"approve": self._approve, "reject": self._reject, "finalize": self._finalize,
                    "confirm": self._confirm, "abandon": self._abandon, "code": self._corrected}
        handler = handlers.get(said.word, self._question)
        return await handler(state, said)

    # --- proposals --------------------------------------------------------------------------------------
    async def _question(self, state: InvestigationState, said: Said) -> TurnResult:
        plan = await self._planner.plan(state, said.text or state.question, self._enricher.catalogue())
        state = replace(state, gaps=(*state.gaps, *plan.gaps))
        gaps = ["", "**Tool gaps recorded:**", *replies.gap_lines(plan.gaps)] if plan.gaps else []
        if plan.narration:
            return TurnResult(state, "\n".join([plan.narration, *gaps]), Tally("narration"))
        if not plan.code:
            text = "No available tool fits this question." + (" (asked again with the tools first left out)"
                                                              if plan.escalated else "")
            return TurnResult(state, "\n".join([text, *gaps]), Tally("declined"))
        # The requester brought this code as surely as if they had typed it: the other-approver rule applies.
        result = await self._propose(state, plan.code, said.text or state.question, said.by)
        return replace(result, reply="\n".join([result.reply, *gaps]))

    async def _corrected(self, state: InvestigationState, said: Said) -> TurnResult:
        prompt = state.pending.prompt if state.pending else state.question
        return await self._propose(replace(state, pending=None), said.text, prompt, said.by)

    async def _propose(self, state: InvestigationState, code: str, prompt: str,
                       author: int | None = None) -> TurnResult:
        if len(code.encode()) > budgets.INVESTIGATE_CODE_MAX_BYTES:
            return TurnResult(state, f"The code is over {budgets.INVESTIGATE_CODE_MAX_BYTES} bytes; nothing "
                              "proposed. Ask for a smaller step.", Tally("refused_code"))
        names = referenced_tools(code)
        if names is None:
            return TurnResult(state, "The code does not parse as Python; nothing proposed.", Tally("refused_code"))
        writers = {t.name for t in self._enricher.catalogue() if not t.read_only}
        proposal = Proposal(code, names, tuple(n for n in names if n in writers), prompt, turn=state.turns,
                            author=author)
        if proposal.modifies or not self._auto:
            return TurnResult(replace(state, pending=proposal), replies.proposal_text(proposal, ""), Tally("proposal"))
        state, report, refused = await self._execute(state, proposal, approved=False)
        return TurnResult(state, replies.proposal_text(proposal, report), Tally("auto_run", refused=refused))

    async def _approve(self, state: InvestigationState, said: Said) -> TurnResult:
        pending = state.pending
        if pending is None:
            return TurnResult(state, "Nothing is waiting for approval. " + replies.COMMANDS_HELP, Tally("noop"))
        if pending.started:
            # A redelivered approval after a crash mid-run: its effects are unknown, so it never runs twice.
            state = replace(state, pending=None)
            return TurnResult(state, "That approved run was interrupted before its result was recorded; it is not "
                              "run again. Check its effect, then propose it again if needed.", Tally("interrupted"))
        refusal = replies.approval_refusal(pending, said, self._other_approver)
        if refusal:
            return TurnResult(state, refusal, Tally("approval_refused"))
        if pending.modifies:
            await self._checkpoint(replace(state, pending=replace(pending, started=True)))
        state, report, refused = await self._execute(state, pending, approved=True)
        await storing.index_examples(self._memory, state, [(len(state.runs) - 1, state.runs[-1])],
                                     budgets.INVESTIGATE_APPROVED_WEIGHT)
        return TurnResult(state, "**Approved and ran.**\n\n" + report, Tally("approved", True, refused))

    async def _reject(self, state: InvestigationState, said: Said) -> TurnResult:
        if state.pending is None:
            return TurnResult(state, "Nothing is waiting for review.", Tally("noop"))
        refusal = replies.binding_refusal(state.pending, said)
        if refusal:
            return TurnResult(state, refusal, Tally("reject_refused"))
        return TurnResult(replace(state, pending=None), "Rejected; nothing ran. " + replies.COMMANDS_HELP,
                          Tally("rejected"))

    async def _execute(self, state: InvestigationState, proposal: Proposal,
                       approved: bool) -> tuple[InvestigationState, str, int]:
        catalogue = self._enricher.catalogue
        granted = set(proposal.modifies) if approved else set()

        def allowed() -> set[str]:  # asked at every call: an alias or a computed name gains nothing
            return {t.name for t in catalogue() if t.read_only} | granted

        outcome = await self._enricher.run_gated(proposal.code, state.task, allowed, self._limits.max_calls,
                                                 self._limits.timeout_s)
        refused = sum(1 for c in outcome.calls if not c.ok and "not an allowed" in c.detail)
        called = tuple(sorted({c.tool for c in outcome.calls if c.ok}))
        run = Run(proposal.prompt, proposal.code, called, approved, not outcome.error and bool(called),
                  replies.preview(outcome.value) if not outcome.error else outcome.error)
        log.info("investigate %s: ran code approved=%s calls=%d refused=%d", state.session_id, approved,
                 len(outcome.calls), refused)
        return replace(state, pending=None, runs=(*state.runs, run)), replies.run_report(outcome), refused

    # --- finalize, confirm, abandon -----------------------------------------------------------------------
    async def _finalize(self, state: InvestigationState, said: Said) -> TurnResult:
        if said.finalize is None:
            return TurnResult(state, "Say the cause: `finalize cause: <cause> [resolution: <resolution>]`.",
                              Tally("noop"))
        state = replace(state, finalizing=said.finalize, pending=None)
        graph = storing.session_graph(state)
        plan = await storing.plan(self._stores, graph)
        return TurnResult(state, replies.finalize_text(state.incident_id, plan, state.gaps), Tally("finalize"))

    async def _confirm(self, state: InvestigationState, said: Said) -> TurnResult:
        final: Finalize | None = state.finalizing
        if final is None:
            return TurnResult(state, "Nothing to confirm: `finalize cause: ...` first.", Tally("noop"))
        graph = storing.session_graph(state)
        await storing.commit(self._stores, state, graph)
        examples = await storing.index_examples(self._memory, state, list(enumerate(state.runs)),
                                                budgets.INVESTIGATE_FINALIZED_WEIGHT)
        names = tuple(n.name for n in graph.nodes)
        procedures = sum(1 for n in graph.nodes if n.type.value == "Procedure")
        state = replace(state, status="stored", stored_nodes=names)
        log.info("investigate %s: stored %d node(s), %d procedure(s)", state.session_id, len(names), procedures)
        return TurnResult(state, replies.stored_text(state.incident_id, names, examples),
                          Tally("stored", stored_procedures=procedures))

    async def _abandon(self, state: InvestigationState, said: Said) -> TurnResult:
        state = replace(state, status="abandoned", pending=None)
        kept = await storing.keep_tentative(self._stores, state)
        return TurnResult(state, f"Abandoned: no cause or resolution is stored; its {kept} procedure(s) are kept "
                          "as tentative and never offered as procedure tools.", Tally("abandoned"))

"""Approvals bound to what was reviewed (the scripted model, the real sandbox, the embedded stores, a
state-changing tool that records its calls): `approve <id>` runs only the proposal with that id, once; a bare
`approve`, an approval of a replaced proposal or a late copy of one runs nothing; `reject <id>` likewise drops
only the proposal it names; with the other-approver rule the human who wrote or asked for the code cannot approve
it."""

from __future__ import annotations

import pytest

from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.explore.prompt_fit import ToolBounds
from hummingbird_agent.bamboo.investigate import InvestigationState, Investigator
from hummingbird_agent.bamboo.investigate.planner import Planner
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import ToolDef
from tests.bamboo.sandboxes import box, kept_open
from tests.bamboo.test_enricher import scripted

__all__ = ["box"]
pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]
RUNNER = {"type": "object", "properties": {"runner": {"type": "string"}}, "required": ["runner"]}
PLANNED = "return {'done': await tools.restart(runner='r1')}"
ALICE, BOB = 42, 43


def fence(runner: str) -> str:
    return f"Restart this one instead:\n```python\nreturn {{'done': await tools.restart(runner='{runner}')}}\n```"


def engine(box: PodmanSandbox, stores: Stores, **rules: bool) -> tuple[Investigator, list[str]]:
    restarted: list[str] = []

    def restart(runner: str) -> dict[str, str]:
        restarted.append(runner)
        return {"restarted": runner}

    llm, _ = scripted({"orchestration_code": PLANNED}, {"orchestration_code": PLANNED})
    tools = BuiltinMcpClient([ToolDef("restart", "Restarts a CI runner.", RUNNER, restart, read_only=False)])

    async def nothing(_: InvestigationState) -> None:
        return None
    enricher = ContextEnricher(llm, tools, kept_open(box), None)
    return Investigator(Planner(llm, None, ToolBounds()), enricher, stores, None, nothing, **rules), restarted


async def test_an_approval_runs_only_the_proposal_it_names_and_only_once(box: PodmanSandbox,
                                                                         stores: Stores) -> None:
    bot, restarted = engine(box, stores)
    shown = await bot.turn(InvestigationState("a1", "why did r1 fail?", {}), "restart r1", ALICE)
    first = shown.state.pending
    assert first is not None and f"**Proposed code** `{first.id}`" in shown.reply
    assert f"Reply `approve {first.id}` to run it" in shown.reply
    changed = await bot.turn(shown.state, fence("r2"), BOB)  # replaced while Alice was reading the first
    second = changed.state.pending
    assert second is not None and second.id != first.id and second.author == BOB
    stale = await bot.turn(changed.state, f"approve {first.id}", ALICE)
    assert stale.reply.startswith("The proposal changed") and f"`{second.id}`" in stale.reply
    bare = await bot.turn(stale.state, "approve", ALICE)
    assert f"reply `approve {second.id}`" in bare.reply and bare.state.pending == second
    assert restarted == [] and bare.state.runs == ()
    ran = await bot.turn(bare.state, f"approve {second.id}", ALICE)
    assert "Approved and ran" in ran.reply and restarted == ["r2"]
    again = await bot.turn(ran.state, f"approve {second.id}", ALICE)  # redelivered after it ran
    assert again.reply.startswith("Nothing is waiting") and restarted == ["r2"]
    same = await bot.turn(again.state, fence("r2"), BOB)  # the same code proposed again: a new id
    assert same.state.pending is not None and same.state.pending.id != second.id
    late = await bot.turn(same.state, f"approve {second.id}", ALICE)
    assert late.reply.startswith("The proposal changed") and restarted == ["r2"]


async def test_who_wrote_or_asked_for_the_code_cannot_approve_it_when_another_approver_is_required(
        box: PodmanSandbox, stores: Stores) -> None:
    bot, restarted = engine(box, stores, other_approver=True)
    planned = await bot.turn(InvestigationState("a2", "why did r1 fail?", {}), "restart r1", ALICE)
    asked = planned.state.pending
    assert asked is not None and asked.author == ALICE  # the planner wrote it at Alice's request
    mine = await bot.turn(planned.state, f"approve {asked.id}", ALICE)
    assert mine.reply.startswith("You wrote or asked for this code") and restarted == []
    own = await bot.turn(mine.state, fence("r3"), ALICE)
    proposal = own.state.pending
    assert proposal is not None and proposal.author == ALICE
    refused = await bot.turn(own.state, f"approve {proposal.id}", ALICE)
    assert refused.reply.startswith("You wrote or asked for this code") and restarted == []
    assert refused.state.pending == proposal
    ran = await bot.turn(refused.state, f"approve {proposal.id}", BOB)
    assert "Approved and ran" in ran.reply and restarted == ["r3"]
    bobs = await bot.turn(ran.state, "restart r1 again", BOB)  # the planner's code at Bob's request: Alice may
    pending = bobs.state.pending
    assert pending is not None and pending.author == BOB
    assert "Approved and ran" in (await bot.turn(bobs.state, f"approve {pending.id}", ALICE)).reply
    assert restarted == ["r3", "r1"]


async def test_a_reject_drops_only_the_proposal_it_names(box: PodmanSandbox, stores: Stores) -> None:
    bot, restarted = engine(box, stores)
    shown = await bot.turn(InvestigationState("a3", "why did r1 fail?", {}), "restart r1", ALICE)
    first = shown.state.pending
    assert first is not None and len(first.id) == 16  # 64 bits
    assert f"`reject {first.id}` to drop it" in shown.reply
    newer = await bot.turn(shown.state, fence("r2"), BOB)
    second = newer.state.pending
    assert second is not None
    for text in (f"reject {first.id}", "reject"):  # a stale reject of the first showing, and a bare one
        kept = await bot.turn(newer.state, text, ALICE)
        assert kept.state.pending == second
        assert "\n" not in kept.reply and second.id in kept.reply
    assert (await bot.turn(newer.state, "reject", ALICE)).reply.startswith(
        f"Name the proposal you reject: reply `reject {second.id}`")
    dropped = await bot.turn(newer.state, f"reject {second.id}", ALICE)
    assert dropped.reply.startswith("Rejected; nothing ran") and dropped.state.pending is None
    assert restarted == [] and dropped.state.runs == ()

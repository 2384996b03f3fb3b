"""The investigation engine on a catalogue too large for the planner's prompt (the scripted model, the real
sandbox, the embedded stores): a planner that declines while tools were left out is asked once more with the
tools it did not see; with the tool-selection vectors unreachable the turn is refused with a clear error."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.explore.prompt_fit import ToolBounds
from hummingbird_agent.bamboo.explore.tool_selection import ToolSelector
from hummingbird_agent.bamboo.investigate import InvestigationState, Investigator
from hummingbird_agent.bamboo.investigate.engine import TurnLimits
from hummingbird_agent.bamboo.investigate.planner import OVER_BUDGET, Planner
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import ToolDef
from tests.bamboo.sandboxes import box, kept_open
from tests.bamboo.test_enricher import scripted

__all__ = ["box"]
pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]
NO_ARGS = {"type": "object", "properties": {}}
WINDOW_TOKENS = 2600  # the prompt, the answer margin and about ten compact tool lines
BOUNDS = ToolBounds(window_tokens=WINDOW_TOKENS)


def catalogue() -> BuiltinMcpClient:
    def reader(n: int) -> ToolDef:
        def read() -> dict[str, int]:
            return {"reading": n}
        return ToolDef(f"probe_{n:02d}", f"Reads gauge number {n} of the build farm. " + "Detail. " * 40, NO_ARGS, read)
    return BuiltinMcpClient([reader(n) for n in range(40)])


def tools_in(prompt: str) -> set[str]:
    return set(re.findall(r"^- (probe_\d\d)\(", prompt.split("## Available tools", 1)[1], re.M))


async def nothing(_: InvestigationState) -> None:
    return None


def investigator(box: PodmanSandbox, stores: Stores, selector: ToolSelector | None, *answers: object):
    llm, model = scripted(*answers)
    enricher = ContextEnricher(llm, catalogue(), kept_open(box), selector,
                               bounds=BOUNDS)
    return Investigator(Planner(llm, selector, BOUNDS), enricher, stores, None, nothing), model


async def test_a_decline_with_tools_left_out_escalates_once_with_a_fresh_page(box: PodmanSandbox,
                                                                              stores: Stores) -> None:
    selector = ToolSelector(stores.vectors, stores.embedder, "test")
    declined = {"orchestration_code": "", "capability_gaps": [{"investigation": "gauge 39 of the farm"}]}
    code = "return {'v': await tools.probe_07()}"
    engine, model = investigator(box, stores, selector, declined, {"orchestration_code": code})
    state = InvestigationState("s1", "which gauge is red?", {})
    result = await engine.turn(state, "which gauge is red?")
    seen, fresh = (tools_in(r.contents[0]["parts"][0]["text"]) for r in model.requests)
    assert seen and fresh and not seen & fresh  # the second page holds only tools the first left out
    assert len(seen | fresh) <= 40 and "It only reads, so it ran at once" in result.reply
    assert '"reading": 7' in result.reply and result.state.runs[0].tools == ("probe_07",)
    assert result.state.gaps == ({"investigation": "gauge 39 of the farm", "suggested_tool_capability": ""},)


async def test_over_budget_without_tool_vectors_is_a_clear_error_and_no_turn(box: PodmanSandbox,
                                                                             stores: Stores) -> None:
    engine, model = investigator(box, stores, None)
    state = InvestigationState("s2", "which gauge is red?", {})
    result = await engine.turn(state, "which gauge is red?")
    assert result.reply == f"**Error:** {OVER_BUDGET}" and result.state == state and model.requests == []
    small = BuiltinMcpClient(list(catalogue()._tools.values())[:3])  # a catalogue that fits needs no vectors
    llm, model = scripted(json.dumps({"narration": "Gauge 1 is red."}))
    enricher = ContextEnricher(llm, small, kept_open(box), None, bounds=BOUNDS)
    answer = await Investigator(Planner(llm, None, BOUNDS), enricher, stores, None, nothing).turn(state, "?")
    assert answer.reply == "Gauge 1 is red." and answer.state.turns == 1


async def test_review_rules_limits_and_a_redelivered_approval(box: PodmanSandbox, stores: Stores) -> None:
    small = BuiltinMcpClient(list(catalogue()._tools.values())[:3])
    code = "return {'v': await tools.probe_01()}"
    llm, model = scripted({"orchestration_code": code})
    enricher = ContextEnricher(llm, small, kept_open(box), None, bounds=BOUNDS)
    waiting = Investigator(Planner(llm, None, BOUNDS), enricher, stores, None, nothing, auto_run_read_only=False)
    state = InvestigationState("s3", "which gauge is red?", {})
    proposed = await waiting.turn(state, "which gauge is red?")
    assert "Read-only code waits for review here" in proposed.reply and proposed.state.runs == ()
    shown = proposed.state.pending
    assert shown is not None
    ran = await waiting.turn(proposed.state, f"approve {shown.id}")
    assert '"reading": 1' in ran.reply and ran.state.runs[0].approved

    started = replace(proposed.state, pending=replace(proposed.state.pending, started=True))
    again = await waiting.turn(started, f"approve {shown.id}")
    assert "interrupted" in again.reply and again.state.runs == () and again.state.pending is None

    huge = "```python\n" + "x = 1\n" * budgets.INVESTIGATE_CODE_MAX_BYTES + "```"
    assert "over" in (await waiting.turn(state, huge)).reply
    spent = replace(state, turns=budgets.INVESTIGATE_MAX_TURNS)
    limited = await waiting.turn(spent, "one more question")
    assert f"reached its {budgets.INVESTIGATE_MAX_TURNS} turns" in limited.reply and limited.state == spent
    assert len(model.requests) == 1  # only the first question reached the planner


async def test_abandoned_runs_are_stored_tentative_and_never_offered(box: PodmanSandbox, stores: Stores) -> None:
    small = BuiltinMcpClient(list(catalogue()._tools.values())[:3])
    code = "a = await tools.probe_01()\nb = await tools.probe_02()\nreturn {'a': a, 'b': b}"
    llm, _ = scripted({"orchestration_code": code})
    enricher = ContextEnricher(llm, small, kept_open(box), None, bounds=BOUNDS)
    engine = Investigator(Planner(llm, None, BOUNDS), enricher, stores, None, nothing)
    ran = await engine.turn(InvestigationState("s4abcdef", "which gauge is red?", {}), "which gauge is red?")
    ended = await engine.turn(ran.state, "abandon")
    assert ended.state.status == "abandoned"
    [row] = await stores.graph.nodes("Procedure")
    assert row.name == "proc__probe_01__probe_02:tentative:s4abcdef" and row.props.get("status") == "tentative"
    offered = ContextEnricher(llm, small, kept_open(box), None, procedures=[row])
    assert not [t for t in offered.catalogue() if t.name.startswith("proc__")]


async def test_a_turn_s_calls_and_wall_time_are_capped(box: PodmanSandbox, stores: Stores) -> None:
    small = BuiltinMcpClient(list(catalogue()._tools.values())[:3])
    many = "return {'n': [await tools.probe_01() for _ in range(4)]}"
    slow = "await asyncio.sleep(60)\nreturn {}"
    llm, _ = scripted({"orchestration_code": many}, {"orchestration_code": slow})
    enricher = ContextEnricher(llm, small, kept_open(box), None, bounds=BOUNDS)
    engine = Investigator(Planner(llm, None, BOUNDS), enricher, stores, None, nothing,
                          limits=TurnLimits(max_calls=3, timeout_s=3))
    capped = await engine.turn(InvestigationState("s5", "q", {}), "read gauge 1 four times")
    assert capped.reply.count("`probe_01` ok") == 3 and "call budget of 3 exhausted" in capped.reply
    timed = await engine.turn(capped.state, "wait a minute")
    assert "The code failed: timed out after 3 s" in timed.reply

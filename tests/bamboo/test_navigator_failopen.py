"""Fail-open behaviour of the navigator: no explorer, a failing diagnosis or draft call, explorer data (the real
ContextEnricher in a real sandbox). The model is the Gemini adapter on the scripted server, answering by rule."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from hummingbird_agent.bamboo.analysis import NO_EXPLORER
from hummingbird_agent.bamboo.diagnose.diagnosis import UNKNOWN_CAUSE
from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import ToolDef
from tests.bamboo.fakes import count, users
from tests.bamboo.kb import CAUSE_A, DIAGNOSE, DRAFT, FIX_A, INCIDENT_A, LIKE_A, LIKE_NEITHER, open_stores, parts, rules
from tests.bamboo.sandboxes import box, kept_open
from tests.servers import GeminiServer, HTTPError

__all__ = ["box"]
GAPS, CODE = "You analyse what information is missing", "You write Python orchestration code that gathers"
REPLAY = "You write Python orchestration code that replays"
GAP = {"investigation": "read the runner's kernel log", "suggested_tool_capability": "runner host logs"}


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    async for s in open_stores():
        yield s


def exploring(system: str, user: str) -> str:
    """`rules`, and the explorer's calls: one gap, then code reading the job log through the tool."""
    if system.startswith(GAPS):
        return json.dumps({"gaps": [{"gap": "what the crashed process logged", "resolvable": True}]})
    if system.startswith((CODE, REPLAY)):
        return json.dumps({"orchestration_code": "return {'job': await tools.get_job_log(job_id=1)}",
                           "capability_gaps": [GAP]})
    return rules(system, user)


def explorer(box: PodmanSandbox, llm: JsonLLM) -> ContextEnricher:
    job = {"type": "object", "properties": {"job_id": {"type": "integer"}}, "required": ["job_id"]}
    log = ToolDef("get_job_log", "full log of a job", job, lambda job_id: {"tail": "core dumped"})
    return ContextEnricher(llm, BuiltinMcpClient([log]), kept_open(box))


async def test_no_explorer_skips_both_investigations_and_says_so(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    gemini_server.respond_with(rules)
    accumulator, navigator = parts(llm, stores)
    await accumulator.process(INCIDENT_A)
    known = await navigator.analyze(LIKE_A)
    assert known.capability_gaps == ()
    assert any(n == f"procedure investigation skipped: {NO_EXPLORER}" for n in known.investigation)
    novel = await navigator.analyze(LIKE_NEITHER)
    assert novel.capability_gaps == ()
    assert any(n == f"exploratory investigation skipped: {NO_EXPLORER}" for n in novel.investigation)


@pytest.mark.podman
@pytest.mark.asyncio(loop_scope="module")
async def test_an_explorer_gets_the_issues_and_its_data_triggers_a_second_diagnosis(
        box: PodmanSandbox, gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    gemini_server.respond_with(exploring)
    accumulator, navigator = parts(llm, stores, explorer(box, llm))
    await accumulator.process(INCIDENT_A)
    result = await navigator.analyze(LIKE_NEITHER)
    # The exploratory mode: a gap analysis of the issues (the novel lead among them), then code.
    [gap_prompt] = users(gemini_server, GAPS)
    assert "Segmentation fault" in gap_prompt and count(gemini_server, CODE) == 1 and count(gemini_server, REPLAY) == 0
    assert count(gemini_server, DIAGNOSE) == 2 and "core dumped" in users(gemini_server, DIAGNOSE)[-1]
    assert result.capability_gaps == (GAP,)
    # A known cause with a stored procedure goes to the procedure mode: no gap analysis, the procedure replayed.
    await navigator.analyze(LIKE_A)
    assert count(gemini_server, GAPS) == 1 and count(gemini_server, CODE) == 1
    [replay_prompt] = users(gemini_server, REPLAY)
    assert "read the failing job log" in replay_prompt


async def test_a_failing_diagnosis_call_falls_back_to_the_ranking(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    def broken(system: str, user: str) -> str:
        return "not json at all" if system.startswith(DIAGNOSE) else rules(system, user)

    gemini_server.respond_with(broken)
    accumulator, navigator = parts(llm, stores)
    await accumulator.process(INCIDENT_A)
    known = await navigator.analyze(LIKE_A)
    assert known.root_cause == CAUSE_A and known.resolution == FIX_A
    assert 0 < known.confidence <= 1
    assert any("diagnosis call failed" in n for n in known.investigation)
    novel = await navigator.analyze(LIKE_NEITHER)
    assert novel.root_cause == UNKNOWN_CAUSE and novel.confidence == 0.0


async def test_a_failing_draft_call_leaves_the_diagnosis_intact(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    def no_draft(system: str, user: str) -> str:
        if system.startswith(DRAFT):
            raise HTTPError(503, "The model is overloaded.")  # the adapter (no retries here) raises TransientError
        return rules(system, user)

    gemini_server.respond_with(no_draft)
    accumulator, navigator = parts(llm, stores)
    await accumulator.process(INCIDENT_A)
    result = await navigator.analyze(LIKE_A)
    assert result.root_cause == CAUSE_A and result.email_content == ""

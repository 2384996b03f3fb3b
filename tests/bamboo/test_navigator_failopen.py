"""Fail-open behaviour of the navigator: no explorer, a failing diagnosis or draft call, explorer data."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from hummingbird_agent.bamboo.analysis import NO_EXPLORER
from hummingbird_agent.bamboo.diagnose.diagnosis import UNKNOWN_CAUSE
from hummingbird_agent.bamboo.diagnose.navigator import Exploration
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from tests.bamboo.fakes import count, users
from tests.bamboo.kb import CAUSE_A, DIAGNOSE, DRAFT, FIX_A, INCIDENT_A, LIKE_A, LIKE_NEITHER, open_stores, parts, rules
from tests.servers import GeminiServer, HTTPError


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    async for s in open_stores():
        yield s


class RecordingExplorer:
    def __init__(self, found: Exploration | None) -> None:
        self.found = found
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    async def explore(self, incident: IncidentInput, issues: Sequence[str], mode: str) -> Exploration | None:
        self.calls.append((mode, tuple(issues)))
        return self.found


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


async def test_an_explorer_gets_the_issues_and_its_data_triggers_a_second_diagnosis(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    gemini_server.respond_with(rules)
    gap = {"investigation": "read the runner's kernel log", "suggested_tool_capability": "runner host logs"}
    explorer = RecordingExplorer(Exploration({"tool:get_job_log": "core dumped"}, (gap,), ("get_job_log",)))
    accumulator, navigator = parts(llm, stores, explorer)
    await accumulator.process(INCIDENT_A)
    result = await navigator.analyze(LIKE_NEITHER)
    assert [mode for mode, _ in explorer.calls] == ["exploratory"]
    assert any("Segmentation fault" in issue for issue in explorer.calls[0][1])
    assert count(gemini_server, DIAGNOSE) == 2 and "core dumped" in users(gemini_server, DIAGNOSE)[-1]
    assert result.capability_gaps == (gap,)
    # A known cause with a stored procedure goes to the procedure mode.
    explorer.calls.clear()
    await navigator.analyze(LIKE_A)
    assert [mode for mode, _ in explorer.calls] == ["procedure"]
    assert "read the failing job log" in explorer.calls[0][1][0]


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

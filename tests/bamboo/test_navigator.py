"""Accumulate -> diagnose: a failure like A ranks A's cause first and cites A; one like neither is novel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from hummingbird_agent.bamboo.analysis import NO_EXPLORER, NOTHING_SIMILAR, CandidateCause
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.retrieval.evidence import GraphIndex
from hummingbird_agent.bamboo.retrieval.log_vector import log_scores
from tests.bamboo.fakes import count
from tests.bamboo.kb import (
    CAUSE_A,
    CAUSE_B,
    DIAGNOSE,
    FIX_A,
    INCIDENT_A,
    INCIDENT_B,
    LIKE_A,
    LIKE_NEITHER,
    open_stores,
    parts,
    rules,
    view,
)
from tests.servers import GeminiServer


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    async for s in open_stores():
        yield s


@pytest.fixture
def model(gemini_server: GeminiServer, llm: JsonLLM) -> JsonLLM:
    """The knowledge base's model answering by `rules`."""
    gemini_server.respond_with(rules)
    return llm


async def test_a_failure_like_a_ranks_a_first_with_its_resolution_and_cites_a(model: JsonLLM, stores: Stores) -> None:
    accumulator, navigator = parts(model, stores)
    a = await accumulator.process(INCIDENT_A)
    b = await accumulator.process(INCIDENT_B)
    assert a.stored and b.stored
    result = await navigator.analyze(LIKE_A)
    assert result.candidates[0].name == CAUSE_A
    assert "symptom" in result.candidates[0].clue_types
    assert result.root_cause == CAUSE_A and result.confidence >= 0.5
    assert [r.name for r in result.candidates[0].resolutions] == [FIX_A]
    assert result.resolution == FIX_A
    assert a.knowledge.incident_id in result.cited_incidents
    assert b.knowledge.incident_id not in result.cited_incidents
    assert any(e.get("incident_id") == a.knowledge.incident_id for e in result.supporting_evidence)
    assert result.known and not result.novel_leads
    assert result.email_content.startswith("Hello")
    # B is at most a weaker candidate (it shares only project-wide facts).
    assert all(c.name != CAUSE_B or not c.specific for c in result.candidates)


async def test_the_diagnosis_reads_only_what_its_clues_reach_and_ranks_as_over_the_whole_graph(
        model: JsonLLM, stores: Stores) -> None:
    accumulator, navigator = parts(model, stores)
    for incident in (INCIDENT_A, INCIDENT_B):
        await accumulator.process(incident)
    evidence, index = await navigator.gather(LIKE_A)
    mine = view(stores).graph  # what the diagnosis of LIKE_A's project reads, whole
    whole = await GraphIndex.load(mine)
    scores = {p.incident_id: (p.score, p.matched) for p in evidence.similar}

    def ranked(candidates: tuple[CandidateCause, ...]) -> list[tuple[object, ...]]:
        # similarity below the similar-incident bar is not in `scores` here: compare the rest
        return [(c.name, c.score, c.clue_types, c.matched, c.incidents, c.resolutions) for c in candidates]

    logs = await log_scores(stores.vectors, stores.embedder, LIKE_A.task_logs)
    assert evidence.candidates and ranked(whole.rank(evidence.clues, evidence.similar, scores, logs=logs)) == ranked(
        evidence.candidates)
    assert whole.novel_leads(evidence.clues["symptom"]) == evidence.novel_leads
    assert index.known_causes == len(whole.causes)
    nothing = await (await GraphIndex.reached(mine, {"symptom": ("never seen",)})).including(mine, {})
    assert not nothing.causes and nothing.known_causes == len(whole.causes)


async def test_a_known_error_line_the_excerpt_missed_is_found_in_the_whole_log(model: JsonLLM, stores: Stores) -> None:
    # The excerpt shows only a vague line; the job's log tail (full_logs) holds B's exact error line.
    accumulator, navigator = parts(model, stores)
    for incident in (INCIDENT_A, INCIDENT_B):
        await accumulator.process(incident)
    tail = "$ make test\ncollected 12 items\nOSError: [Errno 28] No space left on device\nmake: *** [test] Error 1\n"
    failure = replace(LIKE_NEITHER, task_logs={"test": "$ make test\ncollected 12 items\n"},
                      full_logs={"test": tail})
    evidence, _ = await navigator.gather(failure)
    top = evidence.candidates[0]
    assert top.name == CAUSE_B and "symptom" in top.clue_types
    assert any("No space left on device" in m for m in top.matched)


async def test_a_failure_like_neither_returns_novel_leads_and_says_nothing_similar(
        model: JsonLLM, stores: Stores) -> None:
    accumulator, navigator = parts(model, stores)
    await accumulator.process(INCIDENT_A)
    await accumulator.process(INCIDENT_B)
    result = await navigator.analyze(LIKE_NEITHER)
    assert not result.known
    assert result.novel_leads and "Segmentation fault" in result.novel_leads[0]
    assert result.explanation.startswith(NOTHING_SIMILAR)
    assert result.confidence < 0.5
    assert not result.cited_incidents
    # Low confidence: the exploratory hook ran and reported that no explorer is configured.
    assert any(NO_EXPLORER in n and "exploratory" in n for n in result.investigation)
    assert "Nothing similar is known" in result.render()


async def test_the_diagnosis_call_always_runs_even_on_an_empty_knowledge_base(
        gemini_server: GeminiServer, model: JsonLLM, stores: Stores) -> None:
    _, navigator = parts(model, stores)
    result = await navigator.analyze(LIKE_A)
    assert count(gemini_server, DIAGNOSE) == 1
    assert not result.candidates and not result.known
    assert result.explanation.startswith(NOTHING_SIMILAR)


async def test_analysis_is_read_only_toward_the_stores(model: JsonLLM, stores: Stores) -> None:
    accumulator, navigator = parts(model, stores)
    await accumulator.process(INCIDENT_A)
    before = (await stores.graph.counts(), await stores.vectors.count())
    await navigator.analyze(LIKE_A)
    await navigator.analyze(LIKE_NEITHER)
    assert (await stores.graph.counts(), await stores.vectors.count()) == before

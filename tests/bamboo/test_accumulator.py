"""KnowledgeAccumulator: the review loop, the enricher hook (the real ContextEnricher in a real sandbox), dry
runs, storage, and the project Model. The model is the Gemini adapter on the scripted server, answering by rule."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.models import ScriptedModel, ScriptedTurn
from hummingbird_agent.sandbox import PodmanSandbox
from tests.bamboo.fakes import EXTRACT, REVIEW, SUMMARY, causal_answer, count, users
from tests.bamboo.kb import view
from tests.bamboo.sandboxes import box, kept_open
from tests.bamboo.test_enricher import builtin
from tests.servers import GeminiServer

__all__ = ["box"]
INCIDENT = IncidentInput("the mirror was down; we switched mirrors", {"project": "g/app", "job": "build"},
                         task_logs={"build": "npm ERR! network timeout at registry\nERROR: Job failed\n"})
GAPS, CODE = "You analyse what information is missing", "You write Python orchestration code"
FETCHED = "npm ERR! network registry.npmjs.org"  # a line only the get_log tool returns


def build(llm: JsonLLM, stores: Stores | None = None, enricher: ContextEnricher | None = None,
          retries: int = 2) -> KnowledgeAccumulator:
    strategy = default_registry().create("gitlab_ci", StrategyDeps(llm))
    return KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, stores,
                                enricher, retries)


def rejecting(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        return causal_answer("npm mirror outage", "switch mirror")
    if system.startswith(REVIEW):
        confidence = 0.3 if FETCHED in user else 0.2
        return json.dumps({"approved": False, "confidence": confidence, "issues": ["cause vague"], "feedback": "x"})
    if system.startswith(GAPS):
        return json.dumps({"gaps": [{"gap": "the full job log", "resolvable": True}]})
    if system.startswith(CODE):
        return json.dumps({"orchestration_code": "return {'job_log': await tools.get_log(job_id=7)}"})
    return "summary"


@pytest.mark.podman
@pytest.mark.asyncio(loop_scope="module")
async def test_rejections_store_the_best_result_with_a_warning(
        box: PodmanSandbox, gemini_server: GeminiServer, llm: JsonLLM, caplog: pytest.LogCaptureFixture) -> None:
    gemini_server.respond_with(rejecting)
    enricher = ContextEnricher(llm, builtin(), kept_open(box))
    result = await build(llm, enricher=enricher).process(INCIDENT)
    assert not result.approved and result.attempts == 3
    assert count(gemini_server, EXTRACT) == 3 and count(gemini_server, REVIEW) == 3
    # The enricher explored once, from the first rejection's issues; what its tool fetched reached the reviews.
    [gap_prompt] = users(gemini_server, GAPS)
    assert "cause vague" in gap_prompt and count(gemini_server, CODE) == 1
    assert result.review.confidence == 0.3
    assert "cause vague" in users(gemini_server, EXTRACT)[1]  # the retry's extraction carries the reviewer's feedback
    assert "still rejected after 2 re-extractions" in caplog.text


async def test_max_retries_is_overridable_per_run(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    gemini_server.respond_with(rejecting)
    result = await build(llm).process(INCIDENT, max_review_retries=0)
    assert result.attempts == 1 and count(gemini_server, EXTRACT) == 1


async def test_approval_stores_graph_and_vectors(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    approve = json.dumps({"approved": True, "confidence": 0.9})
    gemini_server.respond_with(lambda s, u: causal_answer("npm mirror outage") if s.startswith(EXTRACT)
                               else approve if s.startswith(REVIEW) else "Mirror down.")
    stores = Stores(CypherGraphStore(LadybugSession(":memory:")), QdrantVectorStore("kb", 64, path=":memory:"),
                    HashingEmbedder(64))
    await stores.graph.open()
    await stores.vectors.open()
    accumulator = build(llm, stores)
    dry = await accumulator.process(INCIDENT, dry_run=True)
    assert not dry.stored and (await stores.graph.counts()).incidents == 0 and await stores.vectors.count() == 0
    result = await accumulator.process(INCIDENT)
    assert result.approved and result.attempts == 1 and result.stored
    assert [c.name for c in await view(stores).graph.nodes("Cause")] == ["npm mirror outage"]
    summary = await stores.vectors.by_incident(result.knowledge.incident_id, "Summary")
    assert [h.payload["content"] for h in summary] == ["Mirror down."]
    assert await stores.vectors.count("Symptom") == 1
    await stores.vectors.aclose()
    await stores.graph.aclose()


async def test_summary_failure_falls_back_to_a_plain_summary(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    def rule(system: str, user: str) -> str:
        if system.startswith(SUMMARY):
            return ""
        approve = '{"approved": true, "confidence": 0.9}'
        return causal_answer("npm mirror outage") if system.startswith(EXTRACT) else approve

    gemini_server.respond_with(rule)
    result = await build(llm).process(INCIDENT, dry_run=True)
    assert "Cause: npm mirror outage" in result.knowledge.summary


async def test_runs_on_the_project_scripted_model() -> None:
    turns = [ScriptedTurn(text="```json\n" + causal_answer("npm mirror outage") + "\n```"),
             ScriptedTurn(text='{"approved": true, "confidence": 0.8}'), ScriptedTurn(text="Narrative.")]
    scripted = ScriptedModel(turns)
    result = await build(JsonLLM(ModelText(scripted, "gemini-2.5-flash"))).process(INCIDENT, dry_run=True)
    assert result.approved and result.knowledge.summary == "Narrative."
    assert all(not r.tools_enabled and r.model == "gemini-2.5-flash" for r in scripted.requests)

"""KnowledgeAccumulator: the review loop, the enricher hook, dry runs, storage, and the project Model."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.learn.accumulator import Enrichment, KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer, ToolInfo
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.models import ScriptedModel, ScriptedTurn
from tests.bamboo.fakes import EXTRACT, REVIEW, SUMMARY, RuleModel, causal_answer

INCIDENT = IncidentInput("the mirror was down; we switched mirrors", {"project": "g/app", "job": "build"},
                         task_logs={"build": "npm ERR! network timeout at registry\nERROR: Job failed\n"})


class CountingEnricher:
    def __init__(self) -> None:
        self.calls: list[Sequence[str]] = []

    def available_tools(self) -> list[ToolInfo]:
        return [ToolInfo("get_job_log", "full log of a job")]

    async def enrich(self, incident: IncidentInput, issues: Sequence[str], doc_hints: Mapping[str, str]) -> Enrichment:
        self.calls.append(issues)
        return Enrichment(task_logs={"extra": "fetched by a tool"})


def build(model: RuleModel | ModelText, stores: Stores | None = None, enricher: CountingEnricher | None = None,
          retries: int = 2) -> KnowledgeAccumulator:
    llm = JsonLLM(model)
    strategy = default_registry().create("gitlab_ci", StrategyDeps(llm))
    return KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, stores,
                                enricher, retries)


def rejecting(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        return causal_answer("npm mirror outage", "switch mirror")
    if system.startswith(REVIEW):
        confidence = 0.3 if "fetched by a tool" in user else 0.2
        return json.dumps({"approved": False, "confidence": confidence, "issues": ["cause vague"], "feedback": "x"})
    return "summary"


async def test_rejections_store_the_best_result_with_a_warning(caplog: object) -> None:
    model, enricher = RuleModel(rejecting), CountingEnricher()
    result = await build(model, enricher=enricher).process(INCIDENT)
    assert not result.approved and result.attempts == 3
    assert model.count(EXTRACT) == 3 and model.count(REVIEW) == 3
    assert len(enricher.calls) == 1 and enricher.calls[0] == ("cause vague",)
    assert result.review.confidence == 0.3
    assert "cause vague" in model.calls[2][1]  # the retry's extraction prompt carries the reviewer's feedback
    assert "still rejected after 2 re-extractions" in caplog.text  # type: ignore[attr-defined]


async def test_max_retries_is_overridable_per_run() -> None:
    model = RuleModel(rejecting)
    result = await build(model).process(INCIDENT, max_review_retries=0)
    assert result.attempts == 1 and model.count(EXTRACT) == 1


async def test_approval_stores_graph_and_vectors() -> None:
    approve = json.dumps({"approved": True, "confidence": 0.9})
    model = RuleModel(lambda s, u: causal_answer("npm mirror outage") if s.startswith(EXTRACT)
                      else approve if s.startswith(REVIEW) else "Mirror down.")
    stores = Stores(CypherGraphStore(LadybugSession(":memory:")), QdrantVectorStore("kb", 64, path=":memory:"),
                    HashingEmbedder(64))
    await stores.graph.open()
    await stores.vectors.open()
    accumulator = build(model, stores)
    dry = await accumulator.process(INCIDENT, dry_run=True)
    assert not dry.stored and (await stores.graph.counts()).incidents == 0 and await stores.vectors.count() == 0
    result = await accumulator.process(INCIDENT)
    assert result.approved and result.attempts == 1 and result.stored
    assert [c.name for c in await stores.graph.nodes("Cause")] == ["npm mirror outage"]
    summary = await stores.vectors.by_incident(result.knowledge.incident_id, "Summary")
    assert [h.payload["content"] for h in summary] == ["Mirror down."]
    assert await stores.vectors.count("Symptom") == 1
    await stores.vectors.aclose()
    await stores.graph.aclose()


async def test_summary_failure_falls_back_to_a_plain_summary() -> None:
    def rule(system: str, user: str) -> str:
        if system.startswith(SUMMARY):
            return ""
        approve = '{"approved": true, "confidence": 0.9}'
        return causal_answer("npm mirror outage") if system.startswith(EXTRACT) else approve

    result = await build(RuleModel(rule)).process(INCIDENT, dry_run=True)
    assert "Cause: npm mirror outage" in result.knowledge.summary


async def test_runs_on_the_project_scripted_model() -> None:
    turns = [ScriptedTurn(text="```json\n" + causal_answer("npm mirror outage") + "\n```"),
             ScriptedTurn(text='{"approved": true, "confidence": 0.8}'), ScriptedTurn(text="Narrative.")]
    scripted = ScriptedModel(turns)
    result = await build(ModelText(scripted, "gemini-2.5-flash")).process(INCIDENT, dry_run=True)
    assert result.approved and result.knowledge.summary == "Narrative."
    assert all(not r.tools_enabled and r.model == "gemini-2.5-flash" for r in scripted.requests)

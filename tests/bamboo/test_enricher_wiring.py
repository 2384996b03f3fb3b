"""The enricher in the accumulator's review loop: fires once after the first rejection, its data reaches
the re-extraction (real sandbox; the Gemini adapter on the scripted server, answering by rule)."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.sandbox import PodmanSandbox
from tests.bamboo.fakes import EXTRACT, REVIEW, SUMMARY, causal_answer, count, users
from tests.bamboo.sandboxes import box, kept_open
from tests.bamboo.test_enricher import builtin
from tests.servers import GeminiServer

__all__ = ["box"]
pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]
FOUND = "mirror registry.internal answered 503"


def rules(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        return causal_answer("npm mirror down", "use the fallback mirror") if FOUND in user else "{}"
    if system.startswith(REVIEW):
        return json.dumps({"approved": True, "confidence": 0.9})
    if system.startswith(SUMMARY):
        return "A summary."
    if system.startswith("You analyse what information is missing"):
        return json.dumps({"gaps": [{"gap": "the job log", "resolvable": True}]})
    return json.dumps({"orchestration_code": f"return {{'job_log': {FOUND!r}, 'job': await tools.get_job(job_id=7)}}"})


async def test_enricher_fires_once_and_feeds_the_re_extraction(
        box: PodmanSandbox, gemini_server: GeminiServer, llm: JsonLLM) -> None:
    gemini_server.respond_with(rules)
    strategy = default_registry().create("gitlab_ci", StrategyDeps(llm))
    enricher = ContextEnricher(llm, builtin(), kept_open(box))
    accumulator = KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, None,
                                       enricher=enricher)
    incident = IncidentInput("npm ci failed", {"project": "g/app", "job": "build", "status": "failed"},
                             task_logs={"build": "npm ERR! code ETIMEDOUT\nERROR: Job failed: exit code 1\n"})
    result = await accumulator.process(incident, dry_run=True)
    assert result.approved and result.attempts == 2
    assert dict(result.knowledge.metadata)["explorer_ran"] is True
    assert count(gemini_server, "You analyse what information is missing") == 1
    assert count(gemini_server, "You write Python orchestration code") == 1
    assert any(FOUND in user for user in users(gemini_server, EXTRACT))

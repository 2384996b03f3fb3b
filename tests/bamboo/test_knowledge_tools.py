"""The knowledge tools through the real registry: similar incidents, candidate causes, procedures."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hummingbird_agent.bamboo.diagnose import knowledge_tools as knowledge
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.stores.scoped import Scope
from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Spiller
from tests.bamboo.kb import CAUSE_A, FIX_A, INCIDENT_A, INCIDENT_B, open_stores, parts, rules
from tests.servers import GeminiServer


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    async for s in open_stores():
        yield s


@pytest.fixture
def learning(gemini_server: GeminiServer, llm: JsonLLM) -> JsonLLM:
    gemini_server.respond_with(rules)
    return llm


async def registry_with_knowledge(llm: JsonLLM, stores: Stores) -> tuple[ToolRegistry, str]:
    accumulator, _ = parts(llm, stores)
    a = await accumulator.process(INCIDENT_A)
    await accumulator.process(INCIDENT_B)
    registry = ToolRegistry(Spiller(None))  # type: ignore[arg-type]  # call() never spills
    knowledge.register(registry, stores, Scope.of("g/app"))
    return registry, a.knowledge.incident_id


async def test_candidate_causes_rank_a_first_and_cite_its_incident(learning: JsonLLM, stores: Stores) -> None:
    registry, a_id = await registry_with_knowledge(learning, stores)
    assert {"knowledge_similar_incidents", "knowledge_candidate_causes",
            "knowledge_known_procedures"} <= set(registry.data_source_tools())
    assert "cite the incident ids" in registry.notes()
    out = await registry.call("knowledge_candidate_causes",
                              {"error_lines": ["npm ERR! code ETIMEDOUT after 12000 ms"]})
    top = out["candidates"][0]
    assert top["name"] == CAUSE_A and a_id in top["incidents"]
    assert top["resolutions"][0]["name"] == FIX_A
    similar = await registry.call("knowledge_similar_incidents", {"error_lines": ["npm ERR! code ETIMEDOUT"]})
    assert similar["incidents"][0]["incident_id"] == a_id and similar["incidents"][0]["summary"]


async def test_unknown_failures_and_causes_say_so(learning: JsonLLM, stores: Stores) -> None:
    registry, _ = await registry_with_knowledge(learning, stores)
    out = await registry.call("knowledge_candidate_causes", {"error_lines": ["Segmentation fault (core dumped)"]})
    assert out["candidates"] == [] and out["note"].startswith("Nothing similar is known")
    assert out["novel_leads"] == ["Segmentation fault (core dumped)"]
    procs = await registry.call("knowledge_known_procedures", {"cause": CAUSE_A})
    assert procs["procedures"][0]["name"] == "read the failing job log"
    missing = await registry.call("knowledge_known_procedures", {"cause": "no such cause"})
    assert isinstance(missing, ToolResult) and missing.error_kind == "not_found"
    bad = await registry.call("knowledge_candidate_causes", {"error_lines": []})
    assert isinstance(bad, ToolResult) and bad.error_kind == "bad_arguments"

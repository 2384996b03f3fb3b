"""An approved run that used the enricher's orchestration code stores it as a Procedure of its causes and
remembers its tools for tool selection; a rejected run stores no Procedure and remembers nothing. The enricher
is the real ContextEnricher running the model's code in a real sandbox; the model answers through the scripted
Gemini server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.explore.tool_selection import TRIGGERS, ToolSelector
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient, McpTool
from hummingbird_agent.bamboo.retrieval.evidence import GraphIndex
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import ToolDef
from tests.bamboo.fakes import EXTRACT, REVIEW, causal_answer, count
from tests.bamboo.kb import view
from tests.bamboo.sandboxes import box, kept_open
from tests.servers import GeminiServer

__all__ = ["box"]
pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]
GAPS, WRITE_CODE = "You analyse what information is missing", "You write Python orchestration code"

CODE = "log = await tools.get_job_log(job_id=7)\nstatus = await tools.registry_status()\nreturn {'log': log}"
FETCHED = "mirror answered 503"
# The error comes from the task data, so the symptom does not depend on log excerpting.
INCIDENT = IncidentInput("the mirror was down; we switched mirrors",
                         {"project": "g/app", "job": "build", "error": "npm ERR! network timeout at registry"})


def enricher(box: PodmanSandbox, llm: JsonLLM) -> ContextEnricher:
    """The real enricher over two read-only tools: the job's log (what the review waits for) and the registry."""
    job = {"type": "object", "properties": {"job_id": {"type": "integer"}}, "required": ["job_id"]}
    tools = BuiltinMcpClient([ToolDef("get_job_log", "full log of a job", job, lambda job_id: FETCHED),
                              ToolDef("registry_status", "the npm registry's status page",
                                      {"type": "object", "properties": {}}, lambda: "degraded")])
    return ContextEnricher(llm, tools, kept_open(box))


def approving_after_enrichment(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        return causal_answer("npm mirror outage", "switch mirror")
    if system.startswith(REVIEW):
        return json.dumps({"approved": FETCHED in user, "confidence": 0.9 if FETCHED in user else 0.2,
                           "issues": [] if FETCHED in user else ["no log evidence"]})
    if system.startswith(GAPS):
        return json.dumps({"gaps": [{"gap": "the job's log", "resolvable": True}]})
    if system.startswith(WRITE_CODE):
        return json.dumps({"orchestration_code": CODE})
    return "Mirror down."


def never_approving(system: str, user: str) -> str:
    if system.startswith(REVIEW):
        return json.dumps({"approved": False, "confidence": 0.2, "issues": ["cause vague"]})
    return approving_after_enrichment(system, user)


@pytest_asyncio.fixture
async def stores() -> AsyncIterator[Stores]:
    kb = Stores(CypherGraphStore(LadybugSession(":memory:")), QdrantVectorStore("kb", 64, path=":memory:"),
                HashingEmbedder(64))
    await kb.graph.open()
    await kb.vectors.open()
    yield kb
    await kb.vectors.aclose()
    await kb.graph.aclose()


@pytest_asyncio.fixture
async def selector() -> AsyncIterator[ToolSelector]:
    vectors = QdrantVectorStore("kb_tools", 64, path=":memory:")
    await vectors.open()
    yield ToolSelector(vectors, HashingEmbedder(64), "ns1", max_full=2, reserved=1)
    await vectors.aclose()


def accumulator(llm: JsonLLM, stores: Stores, enricher: ContextEnricher, selector: ToolSelector,
                retries: int = 1) -> KnowledgeAccumulator:
    strategy = default_registry().create("gitlab_ci", StrategyDeps(llm))
    return KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, stores, enricher,
                                retries, tool_memory=selector)


async def test_approved_enriched_run_stores_the_code_as_a_procedure_and_remembers_its_tools(
        box: PodmanSandbox, gemini_server: GeminiServer, llm: JsonLLM, stores: Stores, selector: ToolSelector) -> None:
    gemini_server.respond_with(approving_after_enrichment)
    result = await accumulator(llm, stores, enricher(box, llm), selector).process(INCIDENT)
    assert result.approved and result.attempts == 2 and count(gemini_server, WRITE_CODE) == 1
    mine = view(stores).graph  # the incident's project's nodes
    stored = {p.name: p for p in await mine.nodes("Procedure")}
    proc = stored["proc__get_job_log__registry_status"]
    assert proc.props["code"] == CODE and proc.props["tools"] == ["get_job_log", "registry_status"]
    index = await GraphIndex.load(mine)
    assert "proc__get_job_log__registry_status" in {p.name for p in index.procedures["npm mirror outage"]}

    hits = await selector.vectors.search((await selector.embedder.embed(["x"]))[0], f"{TRIGGERS}@ns1", 5)
    assert [h.payload["name"] for h in hits] == [result.knowledge.incident_id]
    # Every tool of the incident's procedures: the code's two and the one the extraction named.
    assert hits[0].payload["tools"] == ["get_job_log", "registry_status"]
    catalogue = [McpTool(n, f"tool {n}", {}, True) for n in ("zzz_unrelated", "registry_status", "get_job_log")]
    ranked = await selector.rank("npm ERR! network timeout at registry", catalogue)
    assert {"registry_status", "get_job_log"} <= set(ranked[:3]) and ranked[-1] == "zzz_unrelated"


async def test_a_rejected_run_stores_no_procedure_and_remembers_nothing(
        box: PodmanSandbox, gemini_server: GeminiServer, llm: JsonLLM, stores: Stores, selector: ToolSelector) -> None:
    gemini_server.respond_with(never_approving)
    result = await accumulator(llm, stores, enricher(box, llm), selector).process(INCIDENT)
    assert not result.approved and result.stored and count(gemini_server, WRITE_CODE) == 1
    assert not any(p.name.startswith("proc__") for p in await view(stores).graph.nodes("Procedure"))
    assert await selector.vectors.count() == 0


async def test_a_dry_run_remembers_nothing(
        box: PodmanSandbox, gemini_server: GeminiServer, llm: JsonLLM, stores: Stores, selector: ToolSelector) -> None:
    gemini_server.respond_with(approving_after_enrichment)
    result = await accumulator(llm, stores, enricher(box, llm), selector).process(INCIDENT, dry_run=True)
    assert result.approved and not result.stored
    assert "proc__get_job_log__registry_status" in {n.name for n in result.knowledge.graph.nodes}
    assert await selector.vectors.count() == 0

"""`bamboo incidents list|show|remove`: removing an incident leaves no node, edge or vector of its own, shared
elements lose its support, and the next diagnosis no longer returns it. Run on both graph backends' shared
Cypher: the embedded engine, and the Neo4j backend through a driver whose statements run on a real engine."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.explore.tool_selection import ToolSelector, trigger_id
from hummingbird_agent.bamboo.incident_graph import NodeType, RelType
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn import curation
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.stores.base import opened
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.neo4j_backend import Neo4jSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.cli import main
from hummingbird_agent.errors import PermanentError
from tests.bamboo.cli_kb import GEMINI_KEY_ENV, learned_config
from tests.bamboo.fakes import LadybugDriver
from tests.bamboo.kb import CAUSE_A, CAUSE_B, INCIDENT_A, INCIDENT_B, LIKE_A, parts, rules, view
from tests.servers import GeminiServer

GRAPH_TYPES = [t for t in NodeType if t is not NodeType.TASK_CONTEXT]


@pytest.fixture(params=["ladybug", "neo4j"])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[Stores]:
    if request.param == "ladybug":
        session: LadybugSession | Neo4jSession = LadybugSession(":memory:")
    else:
        session = Neo4jSession(None, None, "kb", driver=LadybugDriver(":memory:"))
    s = Stores(CypherGraphStore(session), QdrantVectorStore("kb", 256, path=":memory:"), HashingEmbedder(256))
    async with opened(s):
        yield s


@pytest.fixture
def model(gemini_server: GeminiServer, llm: JsonLLM) -> JsonLLM:
    gemini_server.respond_with(rules)
    return llm


async def supports(stores: Stores) -> tuple[set[str], set[str]]:
    """(incident ids any node or edge names as support, incident ids any vector point belongs to); asserts no
    element is left without support."""
    graph: set[str] = set()
    for t in GRAPH_TYPES:
        for node in await view(stores).graph.nodes(t.value):
            assert node.incidents and node.frequency == len(node.incidents), node
            graph |= set(node.incidents)
    for r in RelType:
        for edge in await view(stores).graph.edges(r.value):
            assert edge.incidents and edge.frequency == len(edge.incidents), edge
            graph |= set(edge.incidents)
    points = set()
    for gid in await stores.graph.incident_ids():
        points |= {str(h.payload["incident_id"]) for h in await stores.vectors.by_incident(gid)}
    return graph, points


async def test_removing_incidents_leaves_no_orphan_and_the_diagnosis_forgets_them(
        model: JsonLLM, stores: Stores) -> None:
    accumulator, navigator = parts(model, stores)
    for gid, incident in (("a1", INCIDENT_A), ("a2", INCIDENT_A), ("b", INCIDENT_B)):
        assert (await accumulator.process(dataclasses.replace(incident, incident_id=gid))).stored
    points_b = len(await stores.vectors.by_incident("b"))
    assert [(r.incident_id, r.causes) for r in await curation.list_incidents(stores)] == [
        ("a1", (CAUSE_A,)), ("a2", (CAUSE_A,)), ("b", (CAUSE_B,))]
    assert (await navigator.analyze(LIKE_A)).root_cause == CAUSE_A

    shown = await curation.remove_incident(stores, "a1")
    assert (NodeType.CAUSE.value, CAUSE_A) in shown.nodes and sum(shown.points.values()) > 0
    [cause] = [c for c in await view(stores).graph.nodes("Cause") if c.name == CAUSE_A]
    assert (cause.incidents, cause.frequency) == (("a2",), 1)  # shared: kept, its support and count updated
    assert await supports(stores) == ({"a2", "b"}, {"a2", "b"})

    await curation.remove_incident(stores, "a2")
    assert [c.name for c in await view(stores).graph.nodes("Cause")] == [CAUSE_B]
    assert await supports(stores) == ({"b"}, {"b"})
    assert await stores.vectors.count() == points_b  # every point of A's copies is gone
    assert (await stores.graph.counts()).incidents == 1
    result = await navigator.analyze(LIKE_A)
    assert result.root_cause != CAUSE_A and CAUSE_A not in [c.name for c in result.candidates]
    assert not {"a1", "a2"} & set(result.cited_incidents)
    with pytest.raises(PermanentError, match="no learned incident 'a1'"):
        await curation.remove_incident(stores, "a1")


async def test_removal_forgets_the_incidents_tool_selection_memory(model: JsonLLM, stores: Stores) -> None:
    accumulator, _ = parts(model, stores)
    for gid, incident in (("a", INCIDENT_A), ("b", INCIDENT_B)):
        assert (await accumulator.process(dataclasses.replace(incident, incident_id=gid))).stored
    tools = QdrantVectorStore("kb_tools", 256, path=":memory:")
    await tools.open()
    selector = ToolSelector(tools, stores.embedder, "ns1")
    for gid in ("a", "b"):
        await selector.remember(gid, f"symptoms of {gid}", ["gitlab_get_job_log"])
    await curation.remove_incident(stores, "a", [(tools, trigger_id("ns1", "a"))])
    assert await tools.by_incident(trigger_id("ns1", "a")) == []
    assert len(await tools.by_incident(trigger_id("ns1", "b"))) == 1
    await tools.aclose()


def test_the_incidents_commands(tmp_path: Path, gemini_server: GeminiServer, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    gemini_server.respond_with(rules)
    monkeypatch.setenv(GEMINI_KEY_ENV, "test-key")
    config = learned_config(tmp_path, gemini_server.url)
    capsys.readouterr()
    assert main(["bamboo", "incidents", "list", "--config", str(config)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"a\t{CAUSE_A}", f"b\t{CAUSE_B}", "incidents: 2"]
    assert main(["bamboo", "incidents", "show", "--config", str(config), "a"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"incident a\ncauses: {CAUSE_A}\n") and "-[solved_by]->" in out and "Summary 1" in out
    assert main(["bamboo", "incidents", "remove", "--config", str(config), "a"]) == 0
    assert "removed incident a:" in capsys.readouterr().out
    assert main(["bamboo", "incidents", "remove", "--config", str(config), "a"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bamboo incidents remove: no learned incident 'a'") and len(err.splitlines()) == 1
    assert main(["bamboo", "incidents", "list", "--config", str(config)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"b\t{CAUSE_B}", "incidents: 1"]

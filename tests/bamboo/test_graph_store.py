"""Conformance suite of the graph store, run on every backend available here: the embedded ladybug
backend, and the Neo4j backend (its driver calls served by a real Cypher engine, see fakes.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, NodeType, RelType, make_node
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.neo4j_backend import Neo4jSession, schema_statements
from tests.bamboo.fakes import LadybugDriver

S, C, R, P, F = NodeType.SYMPTOM, NodeType.CAUSE, NodeType.RESOLUTION, NodeType.PROCEDURE, NodeType.TASK_FEATURE


def incident(cause: str, symptom: str = "error: <N> tests failed", fix: str = "pin the version",
             feature: str = "job=test", confidence: float = 0.8) -> KnowledgeGraph:
    s, c = make_node(S, symptom, "raw line"), make_node(C, cause, f"{cause} text", confidence)
    r, f = make_node(R, fix, steps=["a", "b"]), make_node(F, feature, attribute="job", value="test")
    p1, p2 = make_node(P, "read the job log"), make_node(P, "compare with last green run")
    edges = (Edge(s.key, RelType.INDICATE, c.key, 0.9), Edge(c.key, RelType.SOLVED_BY, r.key),
             Edge(f.key, RelType.CONTRIBUTE_TO, c.key), Edge(c.key, RelType.INVESTIGATED_BY, p1.key),
             Edge(p2.key, RelType.DEPENDS_ON, p1.key, props=(("reason", "needs the failing test name"),)))
    return KnowledgeGraph((s, c, r, f, p1, p2), edges)


@pytest.fixture(params=["ladybug", "neo4j"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CypherGraphStore]:
    if request.param == "ladybug":
        session: LadybugSession | Neo4jSession = LadybugSession(":memory:")
    else:
        session = Neo4jSession(None, None, "kb", driver=LadybugDriver(":memory:"))
    graph_store = CypherGraphStore(session)
    await graph_store.open()
    yield graph_store
    await graph_store.aclose()


async def snapshot(store: CypherGraphStore) -> dict[str, object]:
    nodes = {t.value: await store.nodes(t.value) for t in NodeType if t is not NodeType.TASK_CONTEXT}
    edges = {r.value: await store.edges(r.value) for r in RelType}
    return {"nodes": nodes, "edges": edges, "counts": await store.counts()}


async def test_nodes_merge_on_type_and_name_and_count_support(store: CypherGraphStore) -> None:
    assert await store.replace_incident("A", incident("dns outage", confidence=0.6))
    assert await store.replace_incident("B", incident("dns outage", confidence=1.0))
    [cause] = await store.nodes("Cause")
    assert (cause.name, cause.incidents, cause.frequency, cause.confidence) == ("dns outage", ("A", "B"), 2, 0.8)
    assert await store.names("Cause") == ["dns outage"]
    assert await store.names("Symptom") == sorted(r.name for r in await store.nodes("Symptom"))
    [edge] = await store.edges("indicate")
    assert (edge.incidents, edge.frequency, edge.confidence) == (("A", "B"), 2, 0.9)
    counts = await store.counts()
    assert counts.nodes["Cause"] == 1 and counts.nodes["Procedure"] == 2 and counts.incidents == 2


async def test_a_batch_stores_what_the_same_incidents_stored_one_by_one_would(store: CypherGraphStore) -> None:
    items = [("A", incident("dns outage")), ("B", incident("disk full", symptom="No space left on device")),
             ("A", incident("dns outage", fix="retry the job"))]
    assert await store.replace_incidents(items) == [True, True, True]
    batched = await snapshot(store)
    for gid in ("A", "B"):
        await store.remove_incident(gid)
    for gid, graph in items:
        await store.replace_incident(gid, graph)
    assert await snapshot(store) == batched
    assert await store.replace_incidents(items[1:]) == [False, False]


async def test_clue_lookups_count_the_causes_a_clue_reaches_as_incidents_come_and_go(
        store: CypherGraphStore) -> None:
    await store.replace_incident("A", incident("dns outage"))
    await store.replace_incident("B", incident("disk full"))
    await store.replace_incident("C", incident("disk full", symptom="No space left on device"))
    found = await store.clue_causes({"Symptom": ["error: <N> tests failed", "unknown line"],
                                     "Task_Feature": ["job=test"]})
    tests = "error: <N> tests failed"
    assert sorted((c.clue_type, c.clue, c.shared_by, c.cause.name, c.cause.frequency) for c in found) == [
        ("Symptom", tests, 2, "disk full", 2), ("Symptom", tests, 2, "dns outage", 1),
        ("Task_Feature", "job=test", 2, "disk full", 2), ("Task_Feature", "job=test", 2, "dns outage", 1)]
    shared = await store.linked("Cause", "solved_by", "Resolution", ["dns outage", "disk full"])
    assert [(cause, fix.name, fix.frequency, fix.incidents) for cause, fix in shared] == [
        ("disk full", "pin the version", 3, ()), ("dns outage", "pin the version", 3, ())]
    await store.remove_incident("A")
    await store.replace_incident("B", incident("disk full", symptom="No space left on device"))
    assert await store.clue_causes({"Symptom": ["error: <N> tests failed"]}) == []
    [only] = await store.clue_causes({"Symptom": ["No space left on device"]})
    assert (only.shared_by, only.cause.name, sorted(only.cause.incidents)) == (1, "disk full", ["B", "C"])
    fixes = await store.linked("Cause", "solved_by", "Resolution", ["disk full", "dns outage"])
    assert [(cause, fix.name, fix.props["steps"]) for cause, fix in fixes] == [
        ("disk full", "pin the version", ["a", "b"])]
    assert await store.count("Cause") == 1 and await store.count("Symptom") == 1
    by_incident = await store.causes_of_incidents(["C", "A", "nope"])
    assert {gid: [c.name for c in causes] for gid, causes in by_incident.items()} == {"C": ["disk full"]}


async def test_unchanged_incident_is_not_rewritten(store: CypherGraphStore) -> None:
    assert await store.replace_incident("A", incident("dns outage"))
    before = await snapshot(store)
    assert not await store.replace_incident("A", incident("dns outage"))
    assert await snapshot(store) == before


async def test_reprocessing_replaces_exactly_its_own_contribution(store: CypherGraphStore) -> None:
    await store.replace_incident("A", incident("dns outage"))
    await store.replace_incident("B", incident("dns outage", fix="retry the job"))
    await store.replace_incident("C", incident("disk full", symptom="No space left on device"))
    assert await store.replace_incident("B", incident("runner oom", fix="retry the job", feature="job=build"))
    causes = {c.name: c for c in await store.nodes("Cause")}
    assert causes["dns outage"].incidents == ("A",) and causes["dns outage"].frequency == 1
    assert causes["runner oom"].incidents == ("B",)
    assert causes["disk full"].incidents == ("C",)
    features = {f.name: f.incidents for f in await store.nodes("Task_Feature")}
    assert features == {"job=test": ("A", "C"), "job=build": ("B",)}
    indicate = {(e.source, e.target): e.incidents for e in await store.edges("indicate")}
    assert indicate == {("error: <N> tests failed", "dns outage"): ("A",),
                        ("error: <N> tests failed", "runner oom"): ("B",),
                        ("No space left on device", "disk full"): ("C",)}


async def test_removing_an_incident_deletes_only_what_it_alone_supported(store: CypherGraphStore) -> None:
    await store.replace_incident("A", incident("dns outage"))
    lonely = KnowledgeGraph((make_node(S, "segfault in worker"),))
    await store.replace_incident("B", lonely)
    await store.replace_incident("C", incident("disk full", fix="clean the cache"))
    await store.remove_incident("A")
    assert {n.name for n in await store.nodes("Cause")} == {"disk full"}
    assert {n.name for n in await store.nodes("Resolution")} == {"clean the cache"}
    # An isolated node of another incident survives (the public code deleted every isolated node).
    assert {n.name for n in await store.nodes("Symptom")} == {"error: <N> tests failed", "segfault in worker"}
    assert (await store.counts()).incidents == 2
    await store.remove_incident("A")  # removing twice is harmless


async def test_edge_properties_survive(store: CypherGraphStore) -> None:
    await store.replace_incident("A", incident("dns outage"))
    [dep] = await store.edges("depends_on")
    assert dep.props == {"reason": "needs the failing test name"}
    [fix] = await store.nodes("Resolution")
    assert fix.props == {"steps": ["a", "b"]}


async def test_top_causes_rank_by_frequency_with_resolutions(store: CypherGraphStore) -> None:
    await store.replace_incident("A", incident("dns outage", fix="retry"))
    await store.replace_incident("B", incident("dns outage", fix="use a mirror"))
    await store.replace_incident("C", incident("disk full"))
    top = await store.top_causes(5)
    assert [(c.name, c.frequency) for c in top] == [("dns outage", 2), ("disk full", 1)]
    assert top[0].resolutions == ("retry", "use a mirror")
    assert len(await store.top_causes(1)) == 1


async def test_concurrent_merges_never_duplicate_a_node(store: CypherGraphStore) -> None:
    await asyncio.gather(*(store.replace_incident(f"I{i}", incident("dns outage")) for i in range(8)))
    [cause] = await store.nodes("Cause")
    assert cause.frequency == 8 and len(set(cause.incidents)) == 8
    assert (await store.counts()).edges["indicate"] == 1


async def test_vector_only_nodes_are_not_stored(store: CypherGraphStore) -> None:
    ctx = make_node(NodeType.TASK_CONTEXT, "taskName", "a long prose passage")
    graph = incident("dns outage")
    await store.replace_incident("A", KnowledgeGraph((*graph.nodes, ctx), graph.edges))
    assert sum((await store.counts()).nodes.values()) == 6


async def test_neo4j_backend_declares_name_uniqueness_and_uses_its_database(tmp_path: Path) -> None:
    driver = LadybugDriver(str(tmp_path / "g"))
    graph_store = CypherGraphStore(Neo4jSession(None, None, "kb", driver=driver))
    await graph_store.open()
    await graph_store.replace_incident("A", incident("dns outage"))
    await graph_store.aclose()
    assert driver.schema == schema_statements()
    assert any("FOR (n:Cause) REQUIRE n.name IS UNIQUE" in s for s in driver.schema)
    assert set(driver.databases) == {"kb"} and driver.closed


async def test_embedded_store_persists_across_reopen(tmp_path: Path) -> None:
    first = CypherGraphStore(LadybugSession(str(tmp_path / "g")))
    await first.open()
    await first.replace_incident("A", incident("dns outage"))
    await first.aclose()
    second = CypherGraphStore(LadybugSession(str(tmp_path / "g")))
    await second.open()
    assert not await second.replace_incident("A", incident("dns outage"))
    assert [c.name for c in await second.nodes("Cause")] == ["dns outage"]
    await second.aclose()

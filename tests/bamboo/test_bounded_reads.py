"""A diagnosis reads a bounded part of the graph: each cause with a sample of its incidents, and the incidents
the vector searches rated looked up one by one; it ranks as a read of the whole graph does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, NodeType, RelType, make_node
from hummingbird_agent.bamboo.retrieval.evidence import GraphIndex
from hummingbird_agent.bamboo.stores.base import GraphStore
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.neo4j_backend import Neo4jSession
from hummingbird_agent.bamboo.stores.scoped import Scope, ScopedGraph
from tests.bamboo.fakes import LadybugDriver

SAMPLE = budgets.BAMBOO_CAUSE_SAMPLE_INCIDENTS


def incident(cause: str, symptom: str, project: str) -> KnowledgeGraph:
    s, c = make_node(NodeType.SYMPTOM, symptom), make_node(NodeType.CAUSE, cause, f"{cause} text", 0.8)
    f = make_node(NodeType.TASK_FEATURE, f"project={project}", attribute="project", value=project)
    r = make_node(NodeType.RESOLUTION, f"fix {cause}")
    edges = (Edge(s.key, RelType.INDICATE, c.key, 0.9), Edge(f.key, RelType.CONTRIBUTE_TO, c.key),
             Edge(c.key, RelType.SOLVED_BY, r.key))
    return KnowledgeGraph((s, c, f, r), edges)


# "big" has three times the sample; "other" is reached only through a similar incident past its sample.
STORED = ([(f"g{i}", incident("big", "rake aborted!", "a")) for i in range(3 * SAMPLE)]
          + [(f"s{i}", incident("small", "rake aborted!", "b")) for i in range(2)]
          + [(f"o{i}", incident("other", "npm ERR! code E404", "c")) for i in range(SAMPLE + 2)])
CLUES = {"symptom": ("rake aborted!",), "task_feature": ("project=a",)}
SCORES = {f"g{3 * SAMPLE - 5}": (0.9, "x"), f"o{SAMPLE + 1}": (0.7, "y"), "s1": (0.65, "z"), "g0": (0.3, "w")}
LOGS = {f"g{3 * SAMPLE - 2}": 0.8, f"o{SAMPLE}": 0.5}


# The projects above (and g/app) as one share group: the graph keys nodes by project, a view reads them as one.
GROUP = Scope.of("a", [["a", "b", "c", "g/app"]])


@pytest.fixture(params=["ladybug", "neo4j"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[GraphStore]:
    session: LadybugSession | Neo4jSession = (LadybugSession(":memory:") if request.param == "ladybug" else
                                              Neo4jSession(None, None, "kb", driver=LadybugDriver(":memory:")))
    graph_store = CypherGraphStore(session)
    await graph_store.open()
    await graph_store.replace_incidents(STORED)
    yield ScopedGraph(graph_store, GROUP)
    await graph_store.aclose()


def ranking(index: GraphIndex) -> list[tuple[object, ...]]:
    return [(c.name, c.score, c.similarity, c.clue_types, c.matched, c.frequency, c.resolutions)
            for c in index.rank(CLUES, (), SCORES, logs=LOGS)]


async def test_a_bounded_read_ranks_as_a_read_of_the_whole_graph(store: GraphStore) -> None:
    bounded = await (await GraphIndex.reached(store, CLUES)).including(store, SCORES, logs=LOGS)
    whole = await GraphIndex.load(store)
    assert ranking(bounded) == ranking(whole)
    assert [(name, similarity) for name, _, similarity, *_ in ranking(bounded)] == [
        ("big", 0.9), ("other", 0.7), ("small", 0.65)]  # each cause's best from past its sample
    # Each cause holds its sample and its rated incidents (most rated first), not its whole support.
    assert bounded.causes["big"].incidents == (*(f"g{i}" for i in range(SAMPLE)), f"g{3 * SAMPLE - 5}",
                                               f"g{3 * SAMPLE - 2}")
    assert bounded.causes["other"].frequency == SAMPLE + 2
    assert len(bounded.causes["other"].incidents) == SAMPLE + 2  # its sample and the two rated past it
    assert all(len(c.incidents) <= SAMPLE + len(SCORES) + len(LOGS) for c in bounded.causes.values())


async def test_the_graph_returns_a_sample_of_each_causes_support(store: GraphStore) -> None:
    [hit] = [h for h in await store.clue_causes({"Task_Feature": ["project=a"]})]
    assert (hit.cause.name, hit.cause.frequency, hit.cause.incidents) == (
        "big", 3 * SAMPLE, tuple(f"g{i}" for i in range(SAMPLE)))
    assert [(c.name, c.frequency, len(c.incidents)) for c in await store.causes(["nope", "big"])] == [
        ("big", 3 * SAMPLE, SAMPLE)]
    found = await store.causes_of_incidents([f"g{3 * SAMPLE - 1}", "s0", "nope"])
    assert {gid: [(c.name, len(c.incidents)) for c in rows] for gid, rows in found.items()} == {
        f"g{3 * SAMPLE - 1}": [("big", SAMPLE)], "s0": [("small", 2)]}


async def test_incident_records_written_before_they_named_their_causes_are_completed_at_open(
        tmp_path: Path) -> None:
    path = str(tmp_path / "graph")
    store = CypherGraphStore(LadybugSession(path))
    await store.open()
    await store.replace_incidents(STORED[:2])
    await store._session.read("MATCH (i:Incident) SET i.causes = NULL", {})  # as an older release wrote them
    assert await store.causes_of_incidents(["g0"]) == {"g0": []}
    await store.aclose()
    store = CypherGraphStore(LadybugSession(path))
    await store.open()
    assert [c.name for c in (await store.causes_of_incidents(["g0"]))["g0"]] == ["a\x1fbig"]  # keyed by its project
    await store.aclose()


async def test_a_projects_failure_lines_are_its_first_distinct_ones_whatever_their_number(
        store: GraphStore) -> None:
    f = make_node(NodeType.TASK_FEATURE, "project=g/app", attribute="project", value="g/app")
    lines = {"e: <N> failed": "e: 3 failed", "a: timeout": "a: timeout after 5s", "c: again": "a: timeout after 5s",
             "b: no line": "", "d: disk": "No space left on device"}
    for n, (name, line) in enumerate(lines.items()):
        s, c = make_node(NodeType.SYMPTOM, name, line), make_node(NodeType.CAUSE, f"cause {n}")
        await store.replace_incident(f"p{n}", KnowledgeGraph((s, c, f), (
            Edge(s.key, RelType.INDICATE, c.key), Edge(f.key, RelType.ASSOCIATED_WITH, s.key))))
    rows = await store.linked("Task_Feature", "associated_with", "Symptom", ["project=g/app"])
    every = list(dict.fromkeys(row.description for _, row in rows if row.description))  # the whole read
    assert every == ["a: timeout after 5s", "No space left on device", "e: 3 failed"]
    for limit in (1, 2, 3, 10):
        assert await store.feature_lines("project=g/app", limit) == every[:limit]

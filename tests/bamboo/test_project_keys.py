"""Knowledge keyed by project: two projects learning a cause and a procedure of the same names get two nodes each,
with their own descriptions and code; no read, tool or tool ranking of one names the other's, unless a share group
joins them; a store written before nodes were keyed is keyed by project when it is opened."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.bamboo import incident_graph as kg
from hummingbird_agent.bamboo.diagnose import knowledge_tools
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.explore.tool_selection import ToolSelector
from hummingbird_agent.bamboo.learn.accumulator import key_insights, store_knowledge
from hummingbird_agent.bamboo.mcp import McpTool
from hummingbird_agent.bamboo.mcp.procedures import ProcedureToolsClient, procedure_node
from hummingbird_agent.bamboo.stores import graph as graph_module
from hummingbird_agent.bamboo.stores import owners
from hummingbird_agent.bamboo.stores.base import Stores, opened
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.stores.records import CypherTx
from hummingbird_agent.bamboo.stores.scoped import Scope, scoped
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Spiller

APP, PAY = "g/app", "secret/payments"
CAUSE = "deploy token expired"  # both projects name their cause so
SECRETS = ("PAYMENTS_VAULT_TOKEN", "vault.payments.internal", "PAY-4711", "hotfix/pay-rotate-4711")
READ_ONLY = ("get_job_log", "registry_status")


def code(project: str) -> str:
    branch = "hotfix/pay-rotate-4711" if project == PAY else "main"
    return (f"log = await tools.get_job_log(ref='{branch}')\n"
            "return {'log': log, 'registry': await tools.registry_status()}")


def learned(project: str, n: int = 0) -> kg.ExtractedKnowledge:
    """One incident of `project`: the same cause and procedure names as the other project, its own words."""
    about = ("PAYMENTS_VAULT_TOKEN from vault.payments.internal expired (PAY-4711)" if project == PAY
             else "the CI deploy token of g/app expired")
    feature = kg.make_node(kg.NodeType.TASK_FEATURE, f"project={project}", attribute="project", value=project)
    symptom = kg.make_node(kg.NodeType.SYMPTOM, "401 Unauthorized", "401 Unauthorized")
    cause = kg.make_node(kg.NodeType.CAUSE, CAUSE, about)
    fix = kg.make_node(kg.NodeType.RESOLUTION, "rotate the token", steps=[f"rotate it ({about})"])
    procedure = procedure_node(code(project), f"check the token ({about})")
    assert procedure is not None
    rel = kg.RelType
    edges = (kg.Edge(symptom.key, rel.INDICATE, cause.key), kg.Edge(feature.key, rel.CONTRIBUTE_TO, cause.key),
             kg.Edge(cause.key, rel.SOLVED_BY, fix.key), kg.Edge(cause.key, rel.INVESTIGATED_BY, procedure.key))
    graph = kg.KnowledgeGraph((feature, symptom, cause, fix, procedure), edges)
    return kg.ExtractedKnowledge(f"{project}#{n}", graph, f"{CAUSE}: {about}", tuple(key_insights(graph)))


def new_stores(tmp_path: Path) -> Stores:
    return Stores(CypherGraphStore(LadybugSession(str(tmp_path / "graph"))),
                  QdrantVectorStore("kb", 64, path=str(tmp_path / "qdrant")), HashingEmbedder(64))


@pytest.fixture
async def both(tmp_path: Path) -> AsyncIterator[Stores]:
    """The payments project learns first (the first writer of every shared name), g/app after it."""
    stores = new_stores(tmp_path)
    async with opened(stores):
        await store_knowledge(stores, [learned(PAY)])
        await store_knowledge(stores, [learned(APP)])
        yield stores


async def replayed(stores: Stores, scope: Scope) -> tuple[list[McpTool], list[str]]:
    """The proc__ tools a run of `scope` is offered (as an exploration builds them) and the code each replays."""
    rows = await scoped(stores, scope).graph.nodes(kg.NodeType.PROCEDURE.value)
    ran: list[str] = []

    async def replay(text: str) -> dict[str, Any]:
        ran.append(text)
        return {}

    client = ProcedureToolsClient(rows, READ_ONLY, replay)
    for tool in client.list_tools():
        await client.call(tool.name, {})
    return client.list_tools(), ran


async def everything_read(stores: Stores, scope: Scope) -> str:
    """What `scope`'s reads, knowledge tools and proc__ tools show, as one text."""
    view = scoped(stores, scope).graph
    rows: list[Any] = [await view.nodes(t.value) for t in kg.NodeType if t is not kg.NodeType.TASK_CONTEXT]
    rows += [await view.edges(r.value) for r in kg.RelType]
    rows += [await view.causes([CAUSE]), await view.top_causes(5),
             await view.clue_causes({"Symptom": ["401 Unauthorized"]}),
             await view.linked("Cause", "investigated_by", "Procedure", [CAUSE])]
    registry = ToolRegistry(Spiller(None))  # type: ignore[arg-type]  # call() never spills
    knowledge_tools.register(registry, stores, scope)
    rows += [await registry.call("knowledge_known_procedures", {"cause": CAUSE}),
             await registry.call("knowledge_candidate_causes", {"error_lines": ["401 Unauthorized"]})]
    tools, ran = await replayed(stores, scope)
    return json.dumps([rows, [(t.name, t.description) for t in tools], ran], default=repr)


async def test_identical_names_in_two_projects_are_two_nodes_and_no_read_names_the_other(both: Stores) -> None:
    shown = await everything_read(both, Scope.of(APP))
    assert CAUSE in shown and "the CI deploy token of g/app expired" in shown and "ref='main'" in shown
    assert not [s for s in SECRETS if s in shown]
    [cause] = await scoped(both, Scope.of(APP)).graph.causes([CAUSE])
    assert (cause.description, cause.incidents) == ("the CI deploy token of g/app expired", (f"{APP}#0",))
    tools, ran = await replayed(both, Scope.of(APP))
    assert [t.name for t in tools] == ["proc__get_job_log__registry_status"] and ran == [code(APP)]
    theirs = await everything_read(both, Scope.of(PAY))
    assert all(s in theirs for s in SECRETS) and "the CI deploy token of g/app expired" not in theirs
    counts = await both.graph.counts()
    assert counts.nodes["Cause"] == 2 and counts.nodes["Procedure"] == 2  # two projects, two nodes each


async def test_a_share_group_reads_both_projects_nodes_as_one(both: Stores) -> None:
    group = Scope.of(APP, [[APP, PAY]])
    [cause] = await scoped(both, group).graph.causes([CAUSE])
    assert cause.frequency == 2 and set(cause.incidents) == {f"{APP}#0", f"{PAY}#0"}
    assert await scoped(both, group).graph.names("Procedure") == ["proc__get_job_log__registry_status"]
    shown = await everything_read(both, group)
    assert "PAY-4711" in shown and "the CI deploy token of g/app expired" in shown
    alone = await everything_read(both, Scope.of("third/party", [[APP, PAY]]))
    assert "g/app expired" not in alone and "ref=" not in alone and not [s for s in SECRETS if s in alone]


async def test_tool_selection_remembers_each_projects_investigations_for_its_scope_only(tmp_path: Path) -> None:
    store = QdrantVectorStore("tools", 64, path=str(tmp_path / "tools"))
    tools = [McpTool(name, f"{name} of a CI job", {"type": "object", "properties": {}}, True, "ci")
             for name in ("vault_read", "get_job_log", "registry_status", "runner_info")]
    query = "401 Unauthorized from vault.payments.internal"
    async with opened(Stores(CypherGraphStore(LadybugSession(":memory:")), store, HashingEmbedder(64))):
        fresh = await ToolSelector(store, HashingEmbedder(64), "ns").rank(query, tools)
        selector = ToolSelector(store, HashingEmbedder(64), "ns")
        await selector.remember(f"{PAY}#0", query, ["vault_read"], project=PAY)
        assert (await selector.scoped(frozenset({PAY})).rank(query, tools))[0] == "vault_read"
        assert await selector.scoped(frozenset({APP})).rank(query, tools) == fresh
        assert await selector.rank(query, tools) == fresh  # no project: nobody's memory


async def write_unkeyed(stores: Stores, items: list[kg.ExtractedKnowledge]) -> None:
    """The incidents as a release before project keys stored them: plain node names, first writer's words (their
    vector points as now: each keeps its project)."""
    graph = stores.graph
    assert isinstance(graph, CypherGraphStore)
    await store_knowledge(stores, items)
    for k in items:
        old = owners.unkeyed(graph_module.contribution(k.graph))
        prepared = [(k.incident_id, old, graph_module._digest(old))]

        async def work(tx: CypherTx, batch: list[tuple[str, dict[str, Any], str]] = prepared) -> list[bool]:
            return await graph_module._replace_all(tx, batch)

        await graph._session.write(work)


async def test_a_store_written_before_project_keys_is_keyed_when_opened(tmp_path: Path) -> None:
    stores = new_stores(tmp_path)
    async with opened(stores):
        await write_unkeyed(stores, [learned(PAY), learned(APP)])
        assert (await stores.graph.counts()).nodes["Cause"] == 1  # one node of two projects, the first writer's
        assert await scoped(stores, Scope.of(APP)).graph.causes([CAUSE]) == []  # nobody's until keyed
    async with opened(new_stores(tmp_path)) as reopened:
        assert (await reopened.graph.counts()).nodes["Cause"] == 2
        [cause] = await scoped(reopened, Scope.of(APP)).graph.causes([CAUSE])
        assert cause.description == "the CI deploy token of g/app expired"
        shown = await everything_read(reopened, Scope.of(APP))
        assert "ref='main'" in shown and not [s for s in SECRETS if s in shown]
        before = await reopened.graph.counts()
    async with opened(new_stores(tmp_path)) as again:  # keyed once: opening again changes nothing
        assert await again.graph.counts() == before

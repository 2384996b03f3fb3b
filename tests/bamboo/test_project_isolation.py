"""Two projects in one knowledge base whose causes match each other's failures: the triage's known verdict, the
diagnosis and the knowledge tools of one never name the other's cause, fix or incident, unless a share group joins
them; the model cannot widen its project through a tool argument."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.diagnose import knowledge_tools as knowledge
from hummingbird_agent.bamboo.diagnose.known_causes import StoredCauses
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.incident_graph import NodeType
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.bamboo.learn.reindex import reindex
from hummingbird_agent.bamboo.stores.base import VectorPoint, opened
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.stores.scoped import Scope
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.cli.knowledge import stats
from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Spiller
from tests.bamboo import kb
from tests.bamboo.kb import CAUSE_A, FIX_A, INCIDENT_A, LIKE_A, open_stores, parts
from tests.servers import GeminiServer

OTHER = "other/team"
CAUSE_O, FIX_O = "team proxy drops npm traffic", "route npm through the team proxy bypass"
INCIDENT_O = IncidentInput(
    "The team proxy dropped the npm traffic; fixed by the proxy bypass.",
    {**kb.TASK, "project": OTHER, "pipeline": 300}, task_logs=INCIDENT_A.task_logs)
LINES = ["npm ERR! code ETIMEDOUT after 45000 ms"]
SHARED = [["g/app", OTHER]]


def rules(system: str, user: str) -> str:
    """kb's rules, with the other team's discussion (the same log) naming its own cause and fix."""
    if system.startswith(kb.EXTRACT) and "proxy" in user.split("## Discussion and fix", 1)[1].split("##", 1)[0]:
        features = kb._facts(user, "Task_Feature")  # job=build too: a clue every project's build job shares
        return json.dumps({
            "causes": [{"name": CAUSE_O, "description": f"{CAUSE_O}.", "confidence": 0.9,
                        "symptoms": kb._facts(user, "Symptom"), "features": features}],
            "resolutions": [{"name": FIX_O, "steps": [FIX_O], "cause": CAUSE_O}],
            "procedures": [{"name": "check the team proxy", "tools": ["gitlab_get_job_log"], "cause": CAUSE_O}]})
    return kb.rules(system, user)


@dataclass(frozen=True)
class Learned:
    stores: Stores
    llm: JsonLLM
    mine: str  # g/app's incident id
    theirs: str  # other/team's


@pytest.fixture
async def learned(gemini_server: GeminiServer, llm: JsonLLM) -> AsyncIterator[Learned]:
    gemini_server.respond_with(rules)
    async for stores in open_stores():
        accumulator, _ = parts(llm, stores)
        a = await accumulator.process(INCIDENT_A)
        o = await accumulator.process(INCIDENT_O)
        yield Learned(stores, llm, a.knowledge.incident_id, o.knowledge.incident_id)


def strings(project: str, kb_: Learned) -> tuple[str, ...]:
    return (CAUSE_A, FIX_A, kb_.mine) if project == "g/app" else (CAUSE_O, FIX_O, kb_.theirs)


def tools(stores: Stores, scope: Scope) -> ToolRegistry:
    registry = ToolRegistry(Spiller(None))  # type: ignore[arg-type]  # call() never spills
    knowledge.register(registry, stores, scope)
    return registry


async def tool_answers(registry: ToolRegistry) -> str:
    """What every tool answers (a cause's procedures asked by name: an unknown name's error only echoes it)."""
    answers = [await registry.call("knowledge_candidate_causes", {"error_lines": LINES}),
               await registry.call("knowledge_similar_incidents", {"error_lines": LINES}),
               *[await registry.call("knowledge_known_procedures", {"cause": c}) for c in (CAUSE_A, CAUSE_O)]]
    return json.dumps([a for a in answers if not isinstance(a, ToolResult)])


async def test_triage_known_verdict_names_only_its_projects_cause(learned: Learned) -> None:
    causes = StoredCauses(learned.stores)
    for project, other in (("g/app", OTHER), (OTHER, "g/app")):
        known = await causes.match(project, LINES, {"job": "build"})
        assert known is not None
        shown = json.dumps(asdict(known))
        assert all(s in shown for s in strings(project, learned)[::2])  # its cause and its incident
        assert not [s for s in strings(other, learned) if s in shown]
    # A project that learned another failure only knows nothing of this one, however well the others' causes fit.
    await parts(learned.llm, learned.stores)[0].process(replace(kb.INCIDENT_B, task_data={
        **kb.INCIDENT_B.task_data, "project": "third/party"}))
    assert await causes.match("third/party", LINES, {"job": "build"}) is None


@pytest.mark.parametrize("project", ["g/app", OTHER])
async def test_knowledge_tools_never_name_the_other_projects_knowledge(learned: Learned, project: str) -> None:
    shown = await tool_answers(tools(learned.stores, Scope.of(project)))
    assert all(s in shown for s in strings(project, learned))
    other = "g/app" if project == OTHER else OTHER
    assert not [s for s in strings(other, learned) if s in shown]


async def test_diagnosis_never_names_the_other_projects_knowledge(learned: Learned) -> None:
    _, navigator = parts(learned.llm, learned.stores)
    failure = replace(LIKE_A, task_data={**LIKE_A.task_data, "project": OTHER})
    result = await navigator.scoped(Scope.of(OTHER)).analyze(failure)
    shown = result.render() + json.dumps(result.to_json())
    assert CAUSE_O in shown
    assert not [s for s in strings("g/app", learned) if s in shown]


async def test_a_share_group_reads_each_others_knowledge(learned: Learned) -> None:
    shown = await tool_answers(tools(learned.stores, Scope.of(OTHER, SHARED)))
    assert all(s in shown for s in (*strings("g/app", learned), *strings(OTHER, learned)))
    known = await StoredCauses(learned.stores, SHARED).match(OTHER, LINES, {"job": "build"})
    assert known is not None and {learned.mine, learned.theirs} & set(known.incidents)
    alone = await tool_answers(tools(learned.stores, Scope.of("third/party", SHARED)))
    assert not [s for s in (*strings("g/app", learned), *strings(OTHER, learned)) if s in alone]


async def test_the_model_cannot_widen_its_project_through_an_argument(learned: Learned) -> None:
    registry = tools(learned.stores, Scope.of(OTHER))
    answers = [await registry.call("knowledge_candidate_causes", {"error_lines": LINES, "project": "g/app"}),
               await registry.call("knowledge_similar_incidents", {"error_lines": LINES, "project": "g/app"})]
    shown = json.dumps([a.content if isinstance(a, ToolResult) else a for a in answers])
    assert all(isinstance(a, ToolResult) and a.error_kind == "bad_arguments" for a in answers)
    assert not [s for s in strings("g/app", learned) if s in shown]


async def test_an_incident_without_a_project_is_nobodys(gemini_server: GeminiServer, llm: JsonLLM,
                                                        tmp_path: Path) -> None:
    gemini_server.respond_with(rules)
    stores = Stores(CypherGraphStore(LadybugSession(str(tmp_path / "g"))),
                    QdrantVectorStore("kb", 256, path=str(tmp_path / "q")), HashingEmbedder(256))
    async with opened(stores):
        task = {k: v for k, v in INCIDENT_A.task_data.items() if k != "project"}
        await parts(llm, stores)[0].process(replace(INCIDENT_A, task_data=task))
        shown = await tool_answers(tools(stores, Scope.of("g/app")))
        assert CAUSE_A not in shown and FIX_A not in shown
        assert await StoredCauses(stores).match("g/app", LINES, {"job": "build"}) is None
    out = io.StringIO()
    await stats(stores, out)
    assert "incidents: 1 (1 without a project: no project's diagnosis or triage sees them)" in out.getvalue()


def test_a_project_in_several_groups_reads_them_all() -> None:
    groups = [["a/b", "c/d"], ["a/b", "e/f"], ["x/y", "z/w"]]
    assert Scope.of("a/b", groups).projects == {"a/b", "c/d", "e/f"}
    assert Scope.of("c/d", groups).projects == {"a/b", "c/d"}


def near_copy(system: str, user: str) -> str:
    """The other team's model names its cause a near copy of g/app's (the same log, alike words)."""
    answer = rules(system, user)
    return answer.replace(CAUSE_O, "npm registry mirror is unreachable") if system.startswith(kb.EXTRACT) else answer


@pytest.mark.parametrize("groups", [[], SHARED], ids=["alone", "shared"])
async def test_learning_shows_and_merges_only_causes_its_project_may_read(
        gemini_server: GeminiServer, llm: JsonLLM, groups: list[list[str]]) -> None:
    """Learning the other team's incident: its extraction prompt lists g/app's cause as one to reuse, and its
    near copy of that name is merged into g/app's, only when a share group joins the two projects."""
    gemini_server.respond_with(near_copy)
    async for stores in open_stores():
        accumulator, _ = parts(llm, stores, share_groups=groups)
        await accumulator.process(INCIDENT_A)
        seen = len(gemini_server.prompts)
        theirs = await accumulator.process(INCIDENT_O)
        extractions = [u for s, u in gemini_server.prompts[seen:] if s.startswith(kb.EXTRACT)]
        causes = {n.name for n in theirs.knowledge.graph.of_type(NodeType.CAUSE)}
        assert extractions and all((CAUSE_A in u) == bool(groups) for u in extractions)
        assert causes == ({CAUSE_A} if groups else {"npm registry mirror is unreachable"})


async def test_reindex_gives_points_learned_before_projects_their_incidents_project(
        learned: Learned, tmp_path: Path) -> None:
    """Points written before they kept a project are nobody's (no project's search finds them); `bamboo reindex`
    takes each one's project from its incident's graph record."""
    vectors = learned.stores.vectors
    old = {gid: [VectorPoint(h.id, tuple((await learned.stores.embedder.embed([str(h.payload.get("content"))]))[0]),
                             {k: v for k, v in h.payload.items() if k != "project"})
                 for h in await vectors.by_incident(gid) if h.payload.get("content")]
           for gid in (learned.mine, learned.theirs)}
    await vectors.replace_incidents(old)

    async def similar() -> str:
        registry = tools(learned.stores, Scope.of("g/app"))
        return json.dumps(await registry.call("knowledge_similar_incidents", {"error_lines": LINES}))

    assert learned.mine not in await similar()
    await reindex(learned.stores.graph, vectors, learned.stores.embedder, tmp_path / "spool.jsonl")
    assert {h.payload["project"] for h in await vectors.by_incident(learned.mine)} == {"g/app"}
    assert {h.payload["project"] for h in await vectors.by_incident(learned.theirs)} == {OTHER}
    found = await similar()
    assert learned.mine in found and learned.theirs not in found

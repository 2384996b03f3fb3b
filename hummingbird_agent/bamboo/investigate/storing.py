"""What a finalised investigation stores: its runs as Procedures (identity = the sorted set of tools they
call), the cause and resolution, as incident `investigate:<session>`; and its (prompt -> tools) examples for
tool selection at the finalised weight. Storing replaces that incident, so a repeated confirm adds nothing."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hummingbird_agent.bamboo.incident_graph import (
    PROJECT_FEATURE,
    Edge,
    ExtractedKnowledge,
    KnowledgeGraph,
    Node,
    NodeType,
    RelType,
    make_node,
)
from hummingbird_agent.bamboo.investigate.state import InvestigationState, Run
from hummingbird_agent.bamboo.learn.accumulator import ToolMemory, key_insights, store_knowledge
from hummingbird_agent.bamboo.mcp.procedures import procedure_node
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.errors import AgentError

log = logging.getLogger(__name__)


def session_graph(state: InvestigationState) -> KnowledgeGraph:
    """Cause -solved_by-> Resolution, Cause -investigated_by-> each Procedure of a run that ran."""
    final = state.finalizing
    if final is None:
        return KnowledgeGraph()
    cause = make_node(NodeType.CAUSE, final.cause, f"Found by investigation: {state.question}"[:500])
    nodes: list[Node] = [cause]
    edges: list[Edge] = []
    if final.resolution:
        resolution = make_node(NodeType.RESOLUTION, final.resolution)
        nodes.append(resolution)
        edges.append(Edge(cause.key, RelType.SOLVED_BY, resolution.key))
    for run in state.runs:
        node = procedure_node(run.code, f"Investigation step for: {run.prompt}"[:300]) if run.ok else None
        if node is not None and node.key not in {n.key for n in nodes}:
            nodes.append(node)
            edges.append(Edge(cause.key, RelType.INVESTIGATED_BY, node.key))
    if feature := _project_feature(state):
        nodes.append(feature)
        edges.append(Edge(feature.key, RelType.CONTRIBUTE_TO, cause.key))
    return KnowledgeGraph(tuple(nodes), tuple(edges))


def _project_feature(state: InvestigationState) -> Node | None:
    """The project the investigation ran for owns what it learned (the run's task, never the model's words)."""
    project = str(state.task.get("project") or "")
    return make_node(NodeType.TASK_FEATURE, f"{PROJECT_FEATURE}{project}", attribute="project", value=project) \
        if project else None


def tentative_graph(state: InvestigationState) -> KnowledgeGraph:
    """An abandoned session's runs as tentative Procedures: named apart from the confirmed ones (a node merges
    on its name) and marked `status: tentative`, which is never offered as a proc__ tool."""
    nodes: dict[str, Node] = {}
    for run in state.runs:
        node = procedure_node(run.code) if run.ok else None
        if node is not None:
            name = f"{node.name}:tentative:{state.session_id[:8]}"
            nodes[name] = make_node(NodeType.PROCEDURE, name, f"Abandoned investigation step for: {run.prompt}"[:300],
                                    code=run.code, tools=list(node.prop("tools") or ()), status="tentative")
    feature = _project_feature(state) if nodes else None
    return KnowledgeGraph((*nodes.values(), *([feature] if feature else [])))


async def keep_tentative(stores: Stores, state: InvestigationState) -> int:
    """Store the tentative Procedures in the graph only (no vectors: nothing to find by similarity)."""
    graph = tentative_graph(state)
    if graph.nodes:
        await stores.graph.replace_incident(state.incident_id, graph)
    return len(graph.of_type(NodeType.PROCEDURE))


async def plan(stores: Stores, graph: KnowledgeGraph) -> list[tuple[str, str, bool]]:
    """(type, name, already stored) of each node: what `confirm` adds and what it merges into (`stores`: the view
    of the investigation's project, whose nodes alone it can merge into)."""
    known: dict[NodeType, set[str]] = {}
    for node_type in {n.type for n in graph.nodes}:
        known[node_type] = set(await stores.graph.names(node_type.value))
    return [(n.type.value, n.name, n.name in known[n.type]) for n in graph.nodes]


async def commit(stores: Stores, state: InvestigationState, graph: KnowledgeGraph) -> None:
    final = state.finalizing
    summary = f"Investigation: {state.question}"
    if final is not None:
        summary += f" Cause: {final.cause}." + (f" Resolution: {final.resolution}." if final.resolution else "")
    knowledge = ExtractedKnowledge(state.incident_id, graph, summary, tuple(key_insights(graph)),
                                   (("source", "investigate"), ("runs", len(state.runs))))
    await store_knowledge(stores, [knowledge])


def example_key(state: InvestigationState, index: int) -> str:
    return f"{state.incident_id}:{index}"


async def index_examples(memory: ToolMemory | None, state: InvestigationState, runs: Sequence[tuple[int, Run]],
                         weight: float) -> int:
    """Index each (prompt -> tools) example; fail-open (selection still works without it). Returns how many."""
    done = 0
    for index, run in runs:
        if memory is None or not run.tools:
            continue
        try:
            await memory.remember(example_key(state, index), f"{state.question}\n{run.prompt}", run.tools, weight,
                                  str(state.task.get("project") or ""))
            done += 1
        except AgentError as exc:
            log.warning("investigate %s: run %d not indexed for tool selection: %s", state.session_id, index, exc)
    return done

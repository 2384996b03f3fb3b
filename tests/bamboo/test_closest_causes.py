"""The closest existing causes shown to an extraction: read for a whole batch at once (what `bamboo populate`
does), every incident gets exactly what it gets read alone."""

from __future__ import annotations

from pathlib import Path

from hummingbird_agent.bamboo.incident_graph import (
    Edge,
    ExtractedKnowledge,
    KnowledgeGraph,
    NodeType,
    RelType,
    make_node,
)
from hummingbird_agent.bamboo.learn.accumulator import key_insights, store_knowledge
from hummingbird_agent.bamboo.learn.causes import ExistingCause, closest_causes
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from tests.bamboo.kb import view
from tests.bamboo.test_commands import stores

CAUSES = ["npm mirror outage", "flaky dns", "runner out of disk", "expired token", "python 3.13 dropped distutils"]
LINES = ["npm ERR! code ETIMEDOUT", "getaddrinfo EAI_AGAIN gitlab.example", "No space left on device",
         "401 Unauthorized: token expired", "ModuleNotFoundError: No module named 'distutils'"]
PROJECTS = ["g/app", "g/api", "tools/ci"]


def learned(n: int) -> ExtractedKnowledge:
    """Incident n: a project, a job, one error line and its cause (causes spread unevenly over projects)."""
    k = (n + n // 7) % len(CAUSES)
    project, job = (make_node(NodeType.TASK_FEATURE, f"project={PROJECTS[n % 3]}"),
                    make_node(NodeType.TASK_FEATURE, f"job=job{n % 4}"))
    symptom = make_node(NodeType.SYMPTOM, LINES[k] + (f" in step {n % 2}" if k == 2 else ""), LINES[k])
    cause = make_node(NodeType.CAUSE, CAUSES[k], f"{CAUSES[k]} in the pipeline")
    fix = make_node(NodeType.RESOLUTION, f"fix {CAUSES[k]}")
    edges = (Edge(symptom.key, RelType.INDICATE, cause.key), Edge(project.key, RelType.CONTRIBUTE_TO, cause.key),
             Edge(job.key, RelType.CONTRIBUTE_TO, cause.key), Edge(project.key, RelType.ASSOCIATED_WITH, symptom.key),
             Edge(cause.key, RelType.SOLVED_BY, fix.key))
    graph = KnowledgeGraph((project, job, symptom, cause, fix), edges)
    return ExtractedKnowledge(f"inc-{n}", graph, f"{CAUSES[k]} broke job{n % 4}", tuple(key_insights(graph)))


def failure(n: int) -> IncidentInput:
    k = n % len(CAUSES)
    log = f"$ make\n{LINES[k]}" + (f" in step {n % 2}" if k == 2 else "") + "\nERROR: Job failed: exit code 1\n"
    return IncidentInput(f"incident {n}" if n % 3 else "", {"project": PROJECTS[(n + 1) % 3], "job": f"job{n % 5}"},
                         task_logs={"build": log} if n % 7 else {})


async def read(s: Stores, project: str, incidents: list[IncidentInput]) -> list[tuple[ExistingCause, ...]]:
    """As learning reads them: through the view of the incidents' project (the graph keys nodes by project)."""
    return await closest_causes(view(s, project), incidents)


async def test_a_batch_read_together_gives_each_incident_what_it_gets_alone(tmp_path: Path) -> None:
    s = stores(tmp_path)
    await s.graph.open()
    await s.vectors.open()
    together: list[tuple[ExistingCause, ...]] = []
    alone: list[tuple[ExistingCause, ...]] = []
    try:
        assert await read(s, PROJECTS[1], [failure(0), failure(3)]) == [(), ()]  # nothing learned yet
        await store_knowledge(s, [learned(n) for n in range(40)])
        for project in PROJECTS:
            batch = [failure(n) for n in range(30) if failure(n).task_data["project"] == project]
            together += await read(s, project, batch)
            alone += [(await read(s, project, [incident]))[0] for incident in batch]
    finally:
        await s.vectors.aclose()
        await s.graph.aclose()
    assert together == alone
    assert all(together) and len({c for found in together for c in found}) == len(CAUSES)
    assert len({found[0] for found in together}) > 1  # different incidents are shown different causes first

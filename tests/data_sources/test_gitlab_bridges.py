"""`gitlab_get_pipeline_bridges` against the fake GitLab with the read token: every trigger job of a pipeline with the
pipeline it started (a child of the project, or another project's), oldest first; a list longer than its bound is cut
and says so with GitLab's total; an unknown pipeline is a one-line 404."""

from __future__ import annotations

from typing import Any, cast

from hummingbird_agent.data_sources import gitlab as gitlab_source
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.tools.registry import ToolRegistry
from tests.servers import GitLabServer
from tests.triage.world import Attempt, CiWorld, sha_of


async def _bridges(gl: GitLabServer, **args: Any) -> Any:
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
    output = await tools.call("gitlab_get_pipeline_bridges", project="group/project", **args)
    return output if output is not None else tools.last_problem


async def test_each_bridge_comes_with_the_pipeline_it_started(gitlab_server: GitLabServer) -> None:
    world, deploy = CiWorld(gitlab_server), CiWorld(gitlab_server, 2, "group/deploy", first_id=5000)
    parent = world.pipeline(sha_of("a"), [Attempt("build", "success")])
    child = world.trigger(parent, "tests", [Attempt("unit")])
    downstream = world.trigger(parent, "deploy", [Attempt("rollout", "success")], downstream=deploy)
    bridges = await _bridges(gitlab_server, pipeline_id=parent)
    assert [(b["name"], b["status"], b["pipeline_id"]) for b in bridges] == [
        ("tests", "failed", parent), ("deploy", "success", parent)]
    tests, deployed = (b["downstream_pipeline"] for b in bridges)
    assert (tests["id"], tests["project_id"], tests["source"], tests["status"]) == (child, 1, "parent_pipeline",
                                                                                     "failed")
    assert tests["sha"] == sha_of("a") and tests["web_url"].endswith(f"/group/project/-/pipelines/{child}")
    assert (deployed["id"], deployed["project_id"], deployed["source"]) == (downstream, 2, "pipeline")
    assert await _bridges(gitlab_server, pipeline_id=child) == []


async def test_a_longer_list_is_cut_and_says_so(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    parent = world.pipeline(sha_of("b"), [Attempt("build", "success")])
    for n in range(3):
        world.trigger(parent, f"child {n}", [Attempt("unit", "success")])
    cut = await _bridges(gitlab_server, pipeline_id=parent, max_bridges=2)
    assert isinstance(cut, ToolResult) and cut.truncated and cut.metadata == {"listed": 2, "total": 3}
    assert [b["name"] for b in cast(list[dict[str, Any]], cut.content)] == ["child 1", "child 2"]  # the newest kept


async def test_an_unknown_pipeline_is_a_one_line_404(gitlab_server: GitLabServer) -> None:
    CiWorld(gitlab_server)
    missing = await _bridges(gitlab_server, pipeline_id=424242)
    assert isinstance(missing, str) and "404" in missing and "bridges of pipeline 424242" in missing

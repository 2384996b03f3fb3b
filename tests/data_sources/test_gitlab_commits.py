"""`gitlab_compare_commits`, `gitlab_get_commit_merge_requests` and the pages of `gitlab_list_pipelines` against the
fake GitLab with the read token: what the culprit search reads of a branch's history."""

from __future__ import annotations

from typing import Any, cast

from hummingbird_agent.data_sources import gitlab as gitlab_source
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.tools.registry import ToolRegistry
from tests.servers import GitLabServer
from tests.triage.culprit_world import authors, history
from tests.triage.world import CiWorld, sha_of


async def _call(gl: GitLabServer, tool: str, **args: Any) -> Any:
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
    output = await tools.call(tool, project="group/project", **args)
    assert output is not None, tools.last_problem
    return output


async def test_the_commits_between_two_commits_oldest_first_and_a_long_range_cut(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    authors(world)
    merges = history(world, 6, broken_at=99)
    found = await _call(gitlab_server, "gitlab_compare_commits", from_sha=merges[1], to_sha=merges[4])
    assert isinstance(found, ToolResult) and not found.truncated
    assert [c["id"] for c in found.content] == [sha_of(world.path, "c", 102), merges[2], sha_of(world.path, "c", 103),
                                               merges[3], sha_of(world.path, "c", 104), merges[4]]
    cut = await _call(gitlab_server, "gitlab_compare_commits", from_sha=merges[0], to_sha=merges[5], max_commits=3)
    assert cut.truncated and cut.metadata["total"] == 10 and cut.content[-1]["id"] == merges[5]


async def test_a_commits_merge_requests_with_their_authors_and_no_title(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    authors(world)
    merges = history(world, 3, broken_at=99)
    (mr,) = await _call(gitlab_server, "gitlab_get_commit_merge_requests", sha=merges[1])
    assert (mr["iid"], mr["state"], mr["target_branch"], mr["author"]) == (101, "merged", "main", "carol")
    assert "title" not in mr and mr["merged_at"]
    (same,) = await _call(gitlab_server, "gitlab_get_commit_merge_requests", sha=sha_of(world.path, "c", 101))
    assert same["iid"] == 101


async def test_pipelines_are_read_by_pages_newest_first(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    authors(world)
    history(world, 7, broken_at=99)
    first = await _call(gitlab_server, "gitlab_list_pipelines", ref="main", limit=3)
    second = await _call(gitlab_server, "gitlab_list_pipelines", ref="main", limit=3, page=2)
    ids = [p["id"] for p in first + second]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 6


async def test_an_mrs_versions_newest_first_and_a_long_list_cut(gitlab_server: GitLabServer) -> None:
    """GitLab lists versions newest first by pages (`order_id_desc`, counted): the tool reads pages until its bound
    and says when older versions were left out."""
    world = CiWorld(gitlab_server)
    world.mr(1, base_sha=sha_of("base", 0), sha=sha_of("head", 0))
    for n in range(1, 5):
        world.push_mr(1, sha_of("head", n), base_sha=sha_of("base", n))
    found = await _call(gitlab_server, "gitlab_list_mr_versions", mr_iid=1)
    assert isinstance(found, ToolResult) and not found.truncated
    assert [(v["head_commit_sha"], v["base_commit_sha"]) for v in found.content] == [
        (sha_of("head", n), sha_of("base", n)) for n in range(4, -1, -1)]
    cut = await _call(gitlab_server, "gitlab_list_mr_versions", mr_iid=1, max_versions=2)
    assert cut.truncated and cut.metadata["total"] == 5 and cut.content[0]["head_commit_sha"] == sha_of("head", 4)
    assert gitlab_server.merge_requests[(1, 1)]["diff_refs"]["base_sha"] == sha_of("base", 4)

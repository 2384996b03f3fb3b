"""`gitlab_list_project_jobs` against the fake GitLab with the read token: one page of the project's newest jobs, every
pipeline's, retried attempts included, each with its pipeline as it is now; `truncated` when older jobs exist. The
fake answers `GET /projects/:id/jobs` as GitLab does (lib/api/ci/jobs.rb): newest first, paged without counts, an
unknown scope refused."""

from __future__ import annotations

from typing import Any, cast

import gitlab
import pytest

from hummingbird_agent.data_sources import gitlab as gitlab_source
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.tools.registry import ToolRegistry
from tests.servers import GitLabServer
from tests.triage.world import Attempt, CiWorld, sha_of


async def _page(gl: GitLabServer, **args: Any) -> ToolResult:
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
    output = await tools.call("gitlab_list_project_jobs", project="group/project", **args)
    assert isinstance(output, ToolResult), tools.last_problem
    return output


async def test_the_page_lists_every_pipelines_jobs_newest_first_retries_included(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    old = world.pipeline(sha_of("a"), [Attempt("unit"), Attempt("unit", "success"), Attempt("lint", "success")])
    new = world.pipeline(sha_of("b"), [Attempt("unit")], ref="feature")
    page = await _page(gitlab_server)
    jobs = cast(list[dict[str, Any]], page.content)
    assert [(j["pipeline_id"], j["name"], j["status"]) for j in jobs] == [
        (new, "unit", "failed"), (old, "lint", "success"), (old, "unit", "success"), (old, "unit", "failed")]
    assert [j["id"] for j in jobs] == sorted((j["id"] for j in jobs), reverse=True)
    created = gitlab_server.pipelines[(1, old)]["created_at"]
    assert {j["pipeline_created_at"] for j in jobs if j["pipeline_id"] == old} == {created}
    assert all(j["created_at"] >= j["pipeline_created_at"] for j in jobs)  # a job is never older than its pipeline
    assert not page.truncated


async def test_a_page_with_older_jobs_beyond_it_is_marked_truncated(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    world.pipeline(sha_of("a"), [Attempt(f"job {n}", "success") for n in range(3)])
    page = await _page(gitlab_server, per_page=2)
    assert page.truncated and len(cast(list[Any], page.content)) == 2
    assert not (await _page(gitlab_server, per_page=3)).truncated


def test_the_fake_answers_as_gitlab_does(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    pipeline = world.pipeline(sha_of("a"), [Attempt("unit"), Attempt("lint", "success")])
    gl = gitlab.Gitlab(gitlab_server.url, private_token=gitlab_server.read_token)
    project = gl.projects.get(1, lazy=True)
    listed = project.jobs.list(per_page=1, iterator=True)
    assert listed.total is None and listed.total_pages is None and listed.next_page == 2  # paged without counts
    job = next(iter(listed))
    assert job.pipeline["status"] == "failed" and job.pipeline["id"] == pipeline  # the pipeline as it is now
    assert [j.name for j in project.jobs.list(scope=["failed"], get_all=True)] == ["unit"]
    with pytest.raises(gitlab.GitlabListError) as refused:
        project.jobs.list(scope=["broken"], get_all=True)
    assert refused.value.response_code == 400

"""Trigger jobs, child and downstream pipelines, retries and job states in the fake GitLab, read with the unmodified
python-gitlab as GitLab serves them (lib/api/ci/pipelines.rb, app/finders/ci/pipelines_finder.rb)."""

from __future__ import annotations

import gitlab
import pytest

from tests.servers import GitLabServer
from tests.servers.gitlab_downstream import composite_status
from tests.triage.world import Attempt, CiWorld, sha_of


def _client(gl: GitLabServer) -> gitlab.Gitlab:
    return gitlab.Gitlab(gl.url, private_token=gl.read_token)


def test_a_child_pipeline_is_reached_through_its_bridge_and_hidden_from_the_list(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    parent = world.pipeline(sha_of("a"), [Attempt("build", "success")])
    child = world.trigger(parent, "child", [Attempt("unit"), Attempt("lint", "success")])
    project = _client(gitlab_server).projects.get(1, lazy=True)
    (bridge,) = project.pipelines.get(parent, lazy=True).bridges.list()
    down = bridge.downstream_pipeline
    assert (bridge.name, bridge.status, down["id"], down["project_id"], down["status"]) == (
        "child", "failed", child, 1, "failed")
    assert down["sha"] == sha_of("a") and down["web_url"].endswith(f"/group/project/-/pipelines/{child}")
    assert bridge.pipeline["id"] == parent and bridge.pipeline["status"] == "failed"  # the parent follows its child
    assert [p.id for p in project.pipelines.list()] == [parent]  # GitLab lists no child pipeline by default
    (listed,) = project.pipelines.list(source="parent_pipeline")
    assert (listed.id, listed.source) == (child, "parent_pipeline")
    jobs = project.pipelines.get(child, lazy=True).jobs.list()
    assert sorted(j.name for j in jobs) == ["lint", "unit"]
    assert "child" not in {j.name for j in project.jobs.list(iterator=True)}  # bridges are not jobs


def test_a_downstream_pipeline_of_another_project(gitlab_server: GitLabServer) -> None:
    world, other = CiWorld(gitlab_server), CiWorld(gitlab_server, 2, "group/deploy", first_id=5000)
    parent = world.pipeline(sha_of("b"), [Attempt("build", "success")])
    downstream = world.trigger(parent, "deploy", [Attempt("e2e", "success")], downstream=other)
    client = _client(gitlab_server)
    (bridge,) = client.projects.get(1, lazy=True).pipelines.get(parent, lazy=True).bridges.list()
    assert (bridge.downstream_pipeline["project_id"], bridge.downstream_pipeline["id"]) == (2, downstream)
    (listed,) = client.projects.get("group/deploy", lazy=True).pipelines.list()
    assert listed.source == "pipeline" and listed.status == "success"
    statuses = client.projects.get(1, lazy=True).commits.get(sha_of("b"), lazy=True).statuses.list(all=True)
    assert {s.name: s.status for s in statuses} == {"build": "success", "deploy": "success"}


def test_bridges_are_paged_and_filtered_by_scope(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    parent = world.pipeline(sha_of("c"), [Attempt("build", "success")])
    for n in range(3):
        world.trigger(parent, f"child {n}", [Attempt("unit", "success" if n else "failed")])
    bridges = _client(gitlab_server).projects.get(1, lazy=True).pipelines.get(parent, lazy=True).bridges
    page = bridges.list(per_page=2, iterator=True)
    assert page.total == 3 and [b.name for b in page] == ["child 2", "child 1", "child 0"]  # newest first
    assert [b.name for b in bridges.list(scope=["failed"])] == ["child 0"]
    with pytest.raises(gitlab.GitlabListError) as caught:
        bridges.list(scope=["broken"])
    assert caught.value.response_code == 400


def test_a_retry_after_the_fact_replaces_the_attempt_and_recomputes_the_pipeline(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    pipeline = world.pipeline(sha_of("d"), [Attempt("unit"), Attempt("lint", "success")])
    jobs = _client(gitlab_server).projects.get(1, lazy=True).pipelines.get(pipeline, lazy=True).jobs
    assert gitlab_server.pipelines[(1, pipeline)]["status"] == "failed"
    retried = world.retry(pipeline, Attempt("unit", "running"))
    assert gitlab_server.pipelines[(1, pipeline)]["status"] == "running"
    assert {j.name: j.id for j in jobs.list()} == {"unit": retried, "lint": retried - 1}
    assert len(jobs.list(include_retried=True)) == 3
    (running,) = jobs.list(scope=["running"])
    assert running.finished_at is None
    world.retry(pipeline, Attempt("unit", "success"))
    assert gitlab_server.pipelines[(1, pipeline)]["status"] == "success"


def test_jobs_skipped_after_a_failed_stage_and_unstarted_states(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    pipeline = world.pipeline(sha_of("e"), [Attempt("unit"), Attempt("deploy", "skipped", stage="deploy"),
                                            Attempt("release", "manual", stage="deploy", allow_failure=True)])
    project = _client(gitlab_server).projects.get(1, lazy=True)
    jobs = {j.name: j for j in project.pipelines.get(pipeline, lazy=True).jobs.list()}
    assert jobs["deploy"].status == "skipped" and jobs["deploy"].started_at is None
    assert not hasattr(jobs["deploy"], "failure_reason") and project.pipelines.get(pipeline).status == "failed"
    waiting = world.pipeline(sha_of("f"), [Attempt("unit", "pending"), Attempt("lint", "created")])
    assert project.pipelines.get(waiting).status == "pending"
    started = world.pipeline(sha_of("g"), [Attempt("unit", "success"), Attempt("lint", "created")])
    assert project.pipelines.get(started).status == "running"


@pytest.mark.parametrize(("jobs", "status"), [
    ([("success", False), ("failed", True)], "success"),
    ([("skipped", False)], "skipped"),
    ([("canceled", False), ("success", False)], "canceled"),
    ([("created", False), ("pending", False)], "pending"),
    ([("success", False), ("created", False)], "running"),
    ([("success", False), ("manual", False)], "manual"),
    ([("success", False), ("manual", True)], "success"),
    ([("failed", False), ("skipped", False)], "failed"),
])
def test_a_pipeline_status_is_gitlabs_composite_of_its_jobs(jobs: list[tuple[str, bool]], status: str) -> None:
    assert composite_status(jobs) == status


def test_a_commit_status_may_link_another_projects_job(gitlab_server: GitLabServer) -> None:
    world, other = CiWorld(gitlab_server), CiWorld(gitlab_server, 2, "group/e2e", first_id=7000)
    job_id = world.external_status(sha_of("g"), other, Attempt("e2e-suite"))
    client = _client(gitlab_server)
    (status,) = client.projects.get(1, lazy=True).commits.get(sha_of("g"), lazy=True).statuses.list(all=True)
    assert status.target_url.endswith(f"/group/e2e/-/jobs/{job_id}") and status.status == "failed"
    assert client.projects.get(2, lazy=True).jobs.get(job_id).status == "failed"


def test_a_pipeline_list_refuses_what_gitlab_refuses(gitlab_server: GitLabServer) -> None:
    CiWorld(gitlab_server)
    pipelines = _client(gitlab_server).projects.get(1, lazy=True).pipelines
    for bad in ({"status": "broken"}, {"source": "nowhere"}):
        with pytest.raises(gitlab.GitlabListError) as caught:
            pipelines.list(**bad)
        assert caught.value.response_code == 400

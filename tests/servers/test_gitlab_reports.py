"""The fake GitLab serves a pipeline's test report as GitLab does, read with the unmodified python-gitlab: cases by
status then slowest first, one case per classname and name within a status, suites in the order of their latest
job attempt, a suite GitLab could not parse, and GitLab's own 404 wording."""

from __future__ import annotations

from typing import Any

import gitlab
import pytest

from tests.servers import GitLabServer
from tests.triage.world import Attempt, Case, CiWorld, sha_of


def _report(gl: GitLabServer, pipeline_id: int) -> dict[str, Any]:
    client = gitlab.Gitlab(gl.url, private_token=gl.read_token)
    return client.projects.get(1, lazy=True).pipelines.get(pipeline_id, lazy=True).test_report.get().asdict()


def test_cases_are_listed_by_status_then_slowest_first(gitlab_server: GitLabServer) -> None:
    cases = (Case("ok_fast", "success", execution_time=0.1), Case("skip", "skipped"),
             Case("fail_fast", execution_time=0.5), Case("ok_slow", "success", execution_time=3.0),
             Case("err", "error"), Case("fail_slow", execution_time=9.0))
    pipeline = CiWorld(gitlab_server).pipeline(sha_of("a"), [Attempt("unit", cases=cases)])
    (suite,) = _report(gitlab_server, pipeline)["test_suites"]
    assert [c["name"] for c in suite["test_cases"]] == ["err", "fail_slow", "fail_fast", "ok_slow", "ok_fast", "skip"]


def test_a_case_repeated_within_a_status_is_kept_once_in_its_first_place(gitlab_server: GitLabServer) -> None:
    cases = (Case("t1", execution_time=1.0), Case("t2", execution_time=1.0),
             Case("t1", stack_trace="second", execution_time=1.0), Case("t1", "success"), Case("t1", classname="other"))
    pipeline = CiWorld(gitlab_server).pipeline(sha_of("b"), [Attempt("unit", cases=cases)])
    report = _report(gitlab_server, pipeline)
    (suite,) = report["test_suites"]
    listed = [(c["classname"], c["name"], c["status"]) for c in suite["test_cases"]]
    assert listed == [("tests.test_core", "t1", "failed"), ("tests.test_core", "t2", "failed"),
                      ("other", "t1", "failed"), ("tests.test_core", "t1", "success")]
    assert suite["test_cases"][0]["stack_trace"] == "second"  # the later one replaces it, in the earlier one's place
    assert (suite["total_count"], suite["failed_count"], suite["success_count"]) == (4, 3, 1)
    assert suite["total_time"] == pytest.approx(3.2)  # every case added counts in the time, repeated ones too


def test_suites_follow_the_latest_attempt_of_each_job(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    pipeline = world.pipeline(sha_of("c"), [Attempt("alpha", cases=(Case("a"),)), Attempt("beta", cases=(Case("b"),)),
                                            Attempt("gamma", "success")])
    assert [s["name"] for s in _report(gitlab_server, pipeline)["test_suites"]] == ["alpha", "beta"]
    world.retry(pipeline, Attempt("alpha", "success", cases=(Case("a", "success"),)))
    report = _report(gitlab_server, pipeline)
    assert [s["name"] for s in report["test_suites"]] == ["beta", "alpha"]  # alpha's report is now its newer job's
    assert report["test_suites"][1]["test_cases"][0]["status"] == "success"


def test_a_junit_file_gitlab_could_not_parse_leaves_its_suite_empty(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    broken = "JUnit XML parsing failed: 1:1: FATAL: Document is empty"
    attempts = [Attempt("unit 1/2", cases=(Case("a"),)), Attempt("unit 2/2", suite_error=broken),
                Attempt("lint", cases=(Case("l"),))]
    pipeline = world.pipeline(sha_of("d"), attempts)
    report = _report(gitlab_server, pipeline)
    unit, lint = report["test_suites"]
    assert unit["suite_error"] == broken and unit["test_cases"] == [] and unit["total_count"] == 0
    assert unit["failed_count"] == 0 and lint["suite_error"] is None and report["total_count"] == 1
    client = gitlab.Gitlab(gitlab_server.url, private_token=gitlab_server.read_token)
    summary = client.projects.get(1, lazy=True).pipelines.get(pipeline, lazy=True).test_report_summary.get()
    assert [(s["name"], s["suite_error"], len(s["build_ids"])) for s in summary.test_suites] == [
        ("unit", broken, 2), ("lint", None, 1)]


def test_an_unknown_pipeline_is_gitlabs_404_not_found(gitlab_server: GitLabServer) -> None:
    client = gitlab.Gitlab(gitlab_server.url, private_token=gitlab_server.read_token)
    CiWorld(gitlab_server)
    project = client.projects.get(1, lazy=True)
    for read in (lambda: project.pipelines.get(424242, lazy=True).test_report.get(),
                 lambda: project.pipelines.get(424242, lazy=True).jobs.list(),
                 lambda: project.pipelines.get(424242, lazy=True).bridges.list()):
        with pytest.raises(gitlab.GitlabError) as caught:
            read()
        assert caught.value.response_code == 404 and caught.value.error_message == "404 Not found"

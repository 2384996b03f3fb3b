"""The test report tools against the fake GitLab with the read token: GitLab's shapes and statuses, the suite and
status filters, the case and byte bounds (a cut is said, never silent), and a pipeline without reports."""

from __future__ import annotations

from typing import Any, cast

from hummingbird_agent.data_sources import gitlab as gitlab_source
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.tools.registry import ToolRegistry
from tests.servers import GitLabServer
from tests.triage.world import Attempt, Case, CiWorld, sha_of

CASES = (Case("test_a"), Case("test_b", "success"), Case("test_c", "error", stack_trace="boom\nat x"),
         Case("test_d", "skipped"))


async def _call(gl: GitLabServer, tool: str, **args: Any) -> Any:
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
    output = await tools.call(tool, project="group/project", **args)
    return output if output is not None else tools.last_problem


async def test_the_report_lists_each_suite_with_gitlabs_counts_and_cases(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    pipeline = world.pipeline(sha_of("x"), [Attempt("unit 1/2", cases=CASES[:2]), Attempt("unit 2/2", cases=CASES[2:]),
                                            Attempt("lint", cases=(Case("ruff", "success"),)), Attempt("docs")])
    report = await _call(gitlab_server, "gitlab_get_pipeline_test_report", pipeline_id=pipeline)
    suites = {s["name"]: s for s in report["suites"]}
    assert set(suites) == {"unit", "lint"} and not report["truncated"] and report["cut"] == ""
    unit = suites["unit"]
    assert (unit["total_count"], unit["success_count"], unit["failed_count"], unit["error_count"],
            unit["skipped_count"]) == (4, 1, 1, 1, 1)
    assert {c["name"]: c["status"] for c in unit["cases"]} == {
        "test_a": "failed", "test_b": "success", "test_c": "error", "test_d": "skipped"}
    assert next(c for c in unit["cases"] if c["name"] == "test_c")["trace"] == "boom\nat x"
    summary = await _call(gitlab_server, "gitlab_get_pipeline_test_report_summary", pipeline_id=pipeline)
    assert summary["total"]["count"] == 5 and summary["total"]["error"] == 1
    assert {s["name"]: len(s["build_ids"]) for s in summary["test_suites"]} == {"unit": 2, "lint": 1}


async def test_filters_and_bounds_say_what_they_left_out(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    many = tuple(Case(f"test_{n:04d}", "failed" if n % 3 == 0 else "success", stack_trace="x" * 2000)
                 for n in range(600))
    pipeline = world.pipeline(sha_of("y"), [Attempt("unit", cases=many), Attempt("lint", cases=(Case("ruff"),))])
    failed = await _call(gitlab_server, "gitlab_get_pipeline_test_report", pipeline_id=pipeline, suites=["unit"],
                         statuses=["failed", "error"])
    (unit,) = failed["suites"]
    assert len(unit["cases"]) == 200 and {c["status"] for c in unit["cases"]} == {"failed"}
    assert max(len(c["trace"]) for c in unit["cases"]) < 2000
    capped = await _call(gitlab_server, "gitlab_get_pipeline_test_report", pipeline_id=pipeline, max_cases=10)
    assert capped["truncated"] and "only 10 test cases" in capped["cut"]
    cut = await _call(gitlab_server, "gitlab_get_pipeline_test_report", pipeline_id=pipeline, max_bytes=64 * 1024)
    assert cut["truncated"] and "64" in cut["cut"] and cut["bytes_read"] == 64 * 1024
    assert 0 < sum(len(s["cases"]) for s in cut["suites"]) < 600


async def test_a_pipeline_without_reports_has_no_suites_an_unknown_one_is_a_404(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    pipeline = world.pipeline(sha_of("z"), [Attempt("lint")])
    empty = await _call(gitlab_server, "gitlab_get_pipeline_test_report", pipeline_id=pipeline)
    assert empty["suites"] == [] and not empty["truncated"]
    missing = await _call(gitlab_server, "gitlab_get_pipeline_test_report", pipeline_id=424242)
    assert isinstance(missing, str) and "404" in missing
    assert not gitlab_server.errors

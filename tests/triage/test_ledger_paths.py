"""More paths by which `success` (or a not-yours verdict) was once reached without proof: each test is one path,
found by red-teaming the ledger, and closed."""

from __future__ import annotations

from hummingbird_agent import budgets
from hummingbird_agent.triage.model import TriageLimits, Verdict
from tests.triage.conftest import failing_log, run_triage
from tests.triage.test_ledger import BASE, MYPY, PARSE, _mr
from tests.triage.world import Attempt, Case, CiWorld, sha_of


async def test_an_external_failure_older_than_a_job_of_its_name_is_still_a_check(world: CiWorld) -> None:
    """An external CI posted `unit` failed before the pipeline's own job `unit` passed: the job's status is newer,
    but it is the job, not the external check; the external failure was dropped as superseded."""
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    mr = world.mr(1, base_sha=BASE)
    world.gl.add_commit_status(1, mr["sha"], "unit", "failed", ref="feature", id=900,
                               target_url="https://ci.example.com/builds/9")
    world.pipeline(mr["sha"], [Attempt("unit", "success", trace="ok\n")], ref="feature",
                   source="merge_request_event")
    found, _ = await run_triage(world.gl, 1)
    assert [(c.name, c.verdict) for c in found.checks] == [("unit", Verdict.UNCLASSIFIED)]
    assert found.status == "failed"


async def test_a_report_does_not_clear_a_log_read_only_in_part(world: CiWorld) -> None:
    """The job's failed test fails so on the base, but only the head of its log fitted the per-log cap: a failure
    past the cut (a type error after the tests) was never read, so the job is not proven someone else's."""
    tail = "\n".join(f"log line {n}" for n in range(400))
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7), cases=(Case("test_a"),))])
    log = failing_log("test_a", PARSE, run=2).replace("ERROR: Job failed", f"{tail}\n$ mypy src\n{MYPY}\nERROR: Job "
                                                                          "failed")
    _mr(world, Attempt("unit", trace=log, cases=(Case("test_a"),)))
    found, _ = await run_triage(world.gl, 1, limits=TriageLimits(max_one_log_bytes=len(log) // 2))
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "in part" in check.reason
    assert found.status == "failed"


async def test_a_pass_in_a_sibling_child_pipeline_is_no_re_run(world: CiWorld) -> None:
    """Two trigger jobs start two child pipelines, each with a job `check` of its own: the second's pass is a pass of
    another job, not a re-run of the first's."""
    base = world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    world.trigger(base, "deploy-a", [Attempt("check", "success", trace="ok\n")])
    world.trigger(base, "deploy-b", [Attempt("check", "success", trace="ok\n")])
    _, pipeline = _mr(world, Attempt("unit", "success", trace="ok\n"))
    world.trigger(pipeline, "deploy-a", [Attempt("check", trace=failing_log("test_deploy", "KeyError: 'x'"))])
    world.trigger(pipeline, "deploy-b", [Attempt("check", "success", trace="ok\n")])
    found, _ = await run_triage(world.gl, 1, pipeline_id=pipeline)
    (check,) = found.checks
    assert check.name == "check (child pipeline of deploy-a)" and check.verdict == Verdict.NEW
    assert found.status == "failed"


async def test_a_child_pipeline_job_is_compared_with_the_base_child_job_only(world: CiWorld) -> None:
    """The MR's child pipeline fails `unit` as the base's parent job `unit` fails; the base's child job `unit`, the
    same job as the MR's, passes: new, not pre-existing."""
    base = world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7))])
    world.trigger(base, "arm", [Attempt("unit", "success", trace="ok\n")])
    _, pipeline = _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    world.trigger(pipeline, "arm", [Attempt("unit", trace=failing_log("test_a", PARSE, run=3))])
    found, _ = await run_triage(world.gl, 1, pipeline_id=pipeline)
    verdicts = {c.name: c.verdict for c in found.checks}
    assert verdicts == {"unit": Verdict.PRE_EXISTING, "unit (child pipeline of arm)": Verdict.NEW}
    assert found.status == "failed"


async def test_a_parent_job_is_not_compared_with_a_base_child_job_of_its_name(world: CiWorld) -> None:
    """The base's parent job `unit` passes, its child pipeline's `unit` fails as the MR's parent `unit` does: the
    MR broke its parent job (a child job, read first, loaded the base's child pipelines)."""
    base = world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    world.trigger(base, "arm", [Attempt("unit", trace=failing_log("test_a", PARSE, run=7)),
                                Attempt("lint", "success", trace="ok\n")])
    mr = world.mr(1, base_sha=BASE)
    branch = world.pipeline(mr["sha"], [Attempt("unit", trace=failing_log("test_a", PARSE, run=2))], ref="feature")
    pipeline = world.pipeline(mr["sha"], [Attempt("docs", "success", trace="ok\n")], ref="feature",
                              source="merge_request_event")
    world.trigger(pipeline, "arm", [Attempt("lint", trace=failing_log("test_lint", "KeyError: 'y'")),
                                    Attempt("unit", trace=failing_log("test_a", PARSE, run=3))])
    found, _ = await run_triage(world.gl, 1, pipeline_id=pipeline)
    verdicts = {c.name: c.verdict for c in found.checks}
    assert verdicts[f"unit (pipeline {branch})"] == Verdict.NEW
    assert found.status == "failed"


async def test_a_base_job_list_not_read_leaves_no_room_for_the_target_branch(world: CiWorld) -> None:
    """The merge base's pipeline passes `unit`, but its job list was refused: an older `main` failure is not the
    nearest run of the job, since the base may have run it (and here it passed)."""
    world.pipeline(sha_of("main", 1), [Attempt("unit", trace=failing_log("test_a", PARSE, run=5))],
                   updated_at="2026-01-05T01:00:00.000Z")
    base = world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")], updated_at="2026-01-05T02:00:00.000Z")
    _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    world.gl.fail_next(1, 403, path=r"/group/project/jobs$", body={"message": "403 Forbidden"})
    world.gl.fail_next(1, 403, path=rf"/pipelines/{base}/jobs$", body={"message": "403 Forbidden"})
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and f"pipeline {base}" in check.reason
    assert found.status == "failed"


async def test_a_base_job_list_not_read_leaves_no_room_for_target_reports(world: CiWorld) -> None:
    """As above, the job's failed test case judged by its report: an older `main` report failing it the same way is
    not the nearest run of the case."""
    world.pipeline(sha_of("main", 1), [Attempt("unit", trace=failing_log("test_a", PARSE, run=5),
                                               cases=(Case("test_a"),))], updated_at="2026-01-05T01:00:00.000Z")
    base = world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n", cases=(Case("test_a", "success"),))],
                          updated_at="2026-01-05T02:00:00.000Z")
    _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2), cases=(Case("test_a"),)))
    world.gl.fail_next(1, 403, path=r"/group/project/jobs$", body={"message": "403 Forbidden"})
    world.gl.fail_next(1, 403, path=rf"/pipelines/{base}/jobs$", body={"message": "403 Forbidden"})
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and check.cases[0].reason.startswith("not compared: the merge base")
    assert found.status == "failed"


async def test_a_merge_base_with_more_pipelines_than_read_leaves_no_room_for_the_target_branch(world: CiWorld) -> None:
    """The base's oldest pipeline passed `unit`; its newer ones (more than are read) did not run it: the older `main`
    failure is not the nearest run, since an unread pipeline of the base may have run the job (and here passed)."""
    world.pipeline(sha_of("main", 1), [Attempt("unit", trace=failing_log("test_a", PARSE, run=5))],
                   updated_at="2026-01-05T01:00:00.000Z")
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")], updated_at="2026-01-05T02:00:00.000Z")
    for n in range(budgets.TRIAGE_SHA_PIPELINES):
        world.pipeline(BASE, [Attempt("docs", "success", trace="ok\n")], ref=f"topic-{n}")
    _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "more than" in check.reason
    assert found.status == "failed"

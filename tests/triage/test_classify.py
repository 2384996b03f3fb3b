"""Each verdict of the triage, its evidence, its traps and its bounds, on CI histories in the fake GitLab."""

from __future__ import annotations

from hummingbird_agent import budgets
from hummingbird_agent.triage.model import Verdict
from hummingbird_agent.triage.reader import TriageCache
from tests.triage.conftest import GENERIC_LOG, failing_log, run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
PARSE = "AssertionError: parse('1.2') returned None"
OTHER = "KeyError: 'settings'"


def _mr(world: CiWorld, *attempts: Attempt, iid: int = 1) -> int:
    mr = world.mr(iid, base_sha=BASE)
    return world.pipeline(mr["sha"], attempts, ref="feature", source="merge_request_event")


async def test_the_same_failure_on_the_merge_base_is_pre_existing_and_linked(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7))])
    _mr(world, Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.PRE_EXISTING
    assert "merge base" in check.reason and "/-/jobs/" in check.evidence_url
    assert found.all_not_yours


async def test_a_same_named_job_failing_differently_on_the_base_is_new(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_load", OTHER, run=7))])
    _mr(world, Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)))
    (check,), _ = (await run_triage(world.gl, 1))[0].checks, None
    assert check.verdict == Verdict.NEW and "fails differently" in check.reason


async def test_a_failure_the_base_passes_is_new_with_the_passing_run_linked(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", "success", trace="$ pytest -q\n101 passed in 1.0s\n")])
    _mr(world, Attempt("unit-tests", trace=failing_log("test_parse", PARSE)))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.NEW and check.reason == "passes on the merge base's pipeline"
    assert any("test_parse" in line for line in check.excerpt)
    assert "New:" in __import__("hummingbird_agent.triage.render", fromlist=["headline"]).headline(found)


async def test_generic_failures_never_match(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("lint", trace=GENERIC_LOG)])
    _mr(world, Attempt("lint", trace=GENERIC_LOG))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.UNCLASSIFIED and "too generic" in check.reason


async def test_a_passing_retry_in_the_pipeline_is_flaky(world: CiWorld) -> None:
    _mr(world, Attempt("e2e", trace=failing_log("test_login", "TimeoutError: page did not load")),
        Attempt("e2e", "success", trace="ok\n"))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.FLAKY and "retry" in check.reason


async def test_a_pass_when_its_pipeline_ran_again_on_the_same_commit_is_flaky(world: CiWorld) -> None:
    mr = world.mr(1, base_sha=BASE)
    analysed = world.pipeline(mr["sha"], [Attempt("e2e", trace=failing_log("test_login", "TimeoutError: x"))],
                              ref="feature", source="merge_request_event")
    world.pipeline(mr["sha"], [Attempt("e2e", "success", trace="ok\n")], ref="feature", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, pipeline_id=analysed)
    (check,) = found.checks
    assert check.verdict == Verdict.FLAKY and "run again on the same commit" in check.reason
    assert found.passed == 1 and found.status == "success"


async def test_a_pass_in_a_pipeline_of_another_kind_on_the_commit_is_no_flakiness(world: CiWorld) -> None:
    """Path 9: a passing same-named job in a branch pipeline of the commit may be another job: no flakiness."""
    world.pipeline(BASE, [Attempt("e2e", "success", trace="ok\n")])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("e2e", "success", trace="ok\n")], ref="feature")
    analysed = world.pipeline(mr["sha"], [Attempt("e2e", trace=failing_log("test_login", "TimeoutError: x"))],
                              ref="feature", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, pipeline_id=analysed)
    (check,) = found.checks
    assert check.verdict == Verdict.NEW and found.status == "failed"


async def test_runner_failures_are_infrastructure_and_an_erased_log_is_not_examined(world: CiWorld) -> None:
    """A runner system failure is infrastructure when the merge base's run of the job failed the same way."""
    world.pipeline(BASE, [Attempt("build", trace="Preparing environment\nERROR: Job failed (system failure): disk",
                                  failure_reason="runner_system_failure"), Attempt("docs", "success", trace="ok\n")])
    _mr(world, Attempt("build", trace="Preparing environment\nERROR: Job failed (system failure): no space",
                       failure_reason="runner_system_failure"),
        Attempt("docs", trace=None))
    found, _ = await run_triage(world.gl, 1)
    verdicts = {c.name: (c.verdict, c.reason) for c in found.checks}
    assert verdicts["build"] == (Verdict.INFRASTRUCTURE, "GitLab reports `runner_system_failure`, as the job did on "
                                 "the merge base's pipeline")
    assert verdicts["docs"] == (Verdict.UNCLASSIFIED, "not examined: GitLab reports its log erased")
    assert not found.all_not_yours and found.status == "failed"


async def test_a_script_timeout_is_not_infrastructure(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", "success", trace="ok\n")])
    _mr(world, Attempt("unit-tests", trace="$ pytest\ntest_parse hangs\nERROR: Job failed: execution took longer "
                       "than 1h0m0s seconds", failure_reason="job_execution_timeout"))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict not in (Verdict.INFRASTRUCTURE, Verdict.PRE_EXISTING, Verdict.FLAKY)


async def test_a_job_that_never_ran_on_the_base_is_unclassified(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", "success", trace="ok\n")])
    _mr(world, Attempt("new-job", trace=failing_log("test_parse", PARSE)))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "did not run" in check.reason
    assert not found.all_not_yours


async def test_a_recent_target_branch_failure_is_pre_existing_without_a_base_pipeline(world: CiWorld) -> None:
    world.pipeline(sha_of("later"), [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=5))],
                   updated_at="2026-01-05T08:00:00.000Z")
    _mr(world, Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.PRE_EXISTING and "`main`" in check.reason
    assert any("no pipeline ran on the merge base" in gap for gap in found.gaps)


async def test_a_target_branch_failure_outside_the_look_back_window_is_not_used(world: CiWorld) -> None:
    world.pipeline(sha_of("old"), [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=5))],
                   updated_at="2025-11-01T08:00:00.000Z")
    _mr(world, Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.UNCLASSIFIED


async def test_allowed_failures_and_the_services_own_status_are_not_checks(world: CiWorld) -> None:
    pipeline_mr = world.mr(1, base_sha=BASE)
    world.pipeline(pipeline_mr["sha"], [Attempt("optional", trace="x", allow_failure=True),
                                        Attempt("unit-tests", trace=failing_log("test_parse", PARSE))], ref="feature")
    world.gl.add_commit_status(1, pipeline_mr["sha"], "konflux/build", "failed", target_url="https://konflux/x")
    found, _ = await run_triage(world.gl, 1)
    assert {c.name for c in found.checks} == {"unit-tests", "konflux/build"}
    external = next(c for c in found.checks if c.name == "konflux/build")
    assert external.verdict == Verdict.UNCLASSIFIED and "external" in external.reason


async def test_two_hundred_failed_jobs_stay_within_the_call_and_byte_budgets(world: CiWorld) -> None:
    big = failing_log("test_parse", PARSE) + "\n" + "x" * 200 + "\n"
    world.pipeline(BASE, [Attempt(f"shard-{n}", trace=big) for n in range(200)])
    _mr(world, *[Attempt(f"shard-{n}", trace=big) for n in range(200)])
    found, reader = await run_triage(world.gl, 1)
    assert reader.calls <= budgets.TRIAGE_MAX_CALLS
    assert reader.log_bytes <= budgets.TRIAGE_MAX_LOG_BYTES
    assert len(found.checks) == budgets.TRIAGE_MAX_CHECKS and found.omitted == 200 - budgets.TRIAGE_MAX_CHECKS
    assert any("budget" in gap for gap in found.gaps)
    assert not found.all_not_yours


async def test_finished_pipelines_and_logs_are_read_once_across_triages(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7))])
    _mr(world, Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)), iid=1)
    _mr(world, Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=3)), iid=2)
    cache = TriageCache()
    _, first = await run_triage(world.gl, 1, cache=cache)
    found, second = await run_triage(world.gl, 2, cache=cache)
    assert found.checks[0].verdict == Verdict.PRE_EXISTING
    # Both read the job lists from one page of the project's jobs; the base's failed log comes from the cache.
    assert second.calls == first.calls - 1

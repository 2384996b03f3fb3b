"""Red-team probes of `success`: pipelines of unusual kinds and states, retries in either order, blocked manual jobs,
byte-identical short logs. Each test is one way `success` could read while a failure is the MR's own or unread."""

from __future__ import annotations

from hummingbird_agent.triage.model import Verdict
from tests.triage.conftest import failing_log, run_triage
from tests.triage.test_ledger import BASE, PARSE, _mr
from tests.triage.world import Attempt, CiWorld, sha_of

LINT = "$ ruff check .\napp.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.\n"


async def test_a_merged_results_pipeline_is_not_judged_on_the_heads_old_base(world: CiWorld) -> None:
    """A merged-results pipeline runs the merge of the MR's head into the target branch's tip, a commit no version of
    the MR shows. Its old merge base fails `unit` the same way, but the tip it merged into passes it: the failure may
    well be the MR's, met with the target branch's newer code. It read success (the base of the head judged it)."""
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7))])
    tip = world.push(sha_of("main", "tip"))
    world.pipeline(tip, [Attempt("unit", "success", trace="ok\n")])
    world.mr(1, base_sha=BASE)
    merge_ref = sha_of("refs/merge-requests/1/merge")
    pipeline = world.pipeline(merge_ref, [Attempt("unit", trace=failing_log("test_a", PARSE, run=2))],
                              ref="refs/merge-requests/1/merge", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, sha=merge_ref, pipeline_id=pipeline)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "not the head of !1" in check.reason
    assert found.status == "failed"


async def test_a_retry_that_failed_after_a_pass_is_judged_on_its_failure(world: CiWorld) -> None:
    """The older attempt passed, the newest failed: the job fails now. The base passes it: new, not flaky."""
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    _mr(world, Attempt("unit", "success", trace="ok\n"), Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    found, _ = await run_triage(world.gl, 1)
    assert [c.verdict for c in found.checks] == [Verdict.NEW] and found.status == "failed"


async def test_a_manual_job_a_blocked_pipeline_needs_is_not_proven(world: CiWorld) -> None:
    """`when: manual` with `allow_failure: false`: the pipeline is `manual` (blocked), and the job never ran."""
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    sha, pipeline = _mr(world, Attempt("unit", "success", trace="ok\n"), Attempt("deploy", "manual", trace=None))
    assert world.gl.pipelines[(1, pipeline)]["status"] == "manual"
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert (check.name, check.verdict) == ("deploy", Verdict.UNCLASSIFIED) and "manual" in check.reason
    assert found.status == "failed"


async def test_a_newer_pipeline_of_the_same_kind_still_created_keeps_the_status_pending(world: CiWorld) -> None:
    """The analysed pipeline's only failure is pre-existing, but a newer pipeline of the same ref and source is
    `created` (no job yet): what it will show is not known."""
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7))])
    sha, pipeline = _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    alone, _ = await run_triage(world.gl, 1, pipeline_id=pipeline)
    assert alone.status == "success"
    world.gl.add_pipeline(1, pipeline + 100, sha=sha, ref="feature", status="created", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, pipeline_id=pipeline)
    assert found.status == "pending" and f"pipeline {pipeline + 100}" in found.running


async def test_a_skipped_or_canceled_pipeline_proves_nothing(world: CiWorld) -> None:
    for iid, state in ((1, "skipped"), (2, "canceled")):
        sha, pipeline = _mr(world, Attempt("unit", state, trace=None), iid=iid)
        assert world.gl.pipelines[(1, pipeline)]["status"] == state
        found, _ = await run_triage(world.gl, iid)
        assert [c.verdict for c in found.checks] == [Verdict.UNCLASSIFIED] and found.status == "failed"


async def test_a_byte_identical_three_line_lint_failure_is_pre_existing(world: CiWorld) -> None:
    log = LINT + "ERROR: Job failed: exit code 1"
    world.pipeline(BASE, [Attempt("lint", trace=log)])
    _mr(world, Attempt("lint", trace=log))
    found, _ = await run_triage(world.gl, 1)
    assert [c.verdict for c in found.checks] == [Verdict.PRE_EXISTING] and found.status == "success"


async def test_an_earlier_attempts_own_failure_is_not_hidden_by_a_retry_gitlab_failed(world: CiWorld) -> None:
    """The first attempt failed a test the base passes; its retry never got to run the tests (GitLab's scheduler
    failed it). The retry's infrastructure failure does not prove the first attempt's failure someone else's."""
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    _mr(world, Attempt("unit", trace=failing_log("test_new", "KeyError: 'x'", run=2)),
        Attempt("unit", trace="ERROR: Job failed (system failure): scheduler", failure_reason="scheduler_failure"))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.NEW and "an earlier attempt" in check.reason and found.status == "failed"

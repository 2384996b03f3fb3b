"""Nothing unread exonerates: a budget spent, a log GitLab refuses, a job list cut short. Each such check is
unclassified with its gap named, and the commit status is `failed`, never `success`."""

from __future__ import annotations

from hummingbird_agent.triage.model import TriageLimits, Verdict
from hummingbird_agent.triage.render import headline, table
from tests.triage.conftest import failing_log, run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
PARSE = "AssertionError: parse('1.2') returned None"
LINT = "AssertionError: lint rule W605 fired on src/frob.py"


def _pre_existing_and_new(world: CiWorld) -> None:
    """unit-tests fails the same way on the base (not the MR's); lint passes on the base (the MR's own)."""
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7)),
                          Attempt("lint", "success", trace="$ ruff check .\nAll checks passed!\n")])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)),
                               Attempt("lint", trace=failing_log("test_lint", LINT, run=3))],
                   ref="feature", source="merge_request_event")


def _job_id(world: CiWorld, name: str) -> int:
    mr_sha = world.gl.merge_requests[(world.project_id, 1)]["sha"]
    return next(job_id for (_, job_id), job in world.gl.jobs.items()
                if job["name"] == name and job["commit"]["id"] == mr_sha)


async def test_a_spent_log_budget_leaves_the_later_check_unclassified(world: CiWorld) -> None:
    _pre_existing_and_new(world)
    two_logs = len(failing_log("test_parse", PARSE, run=2)) + len(failing_log("test_parse", PARSE, run=7))
    found, _ = await run_triage(world.gl, 1, limits=TriageLimits(max_log_bytes=two_logs))
    verdicts = {c.name: c for c in found.checks}
    assert verdicts["unit-tests"].verdict == Verdict.PRE_EXISTING
    lint = verdicts["lint"]
    assert lint.verdict == Verdict.UNCLASSIFIED
    assert lint.reason.startswith("not examined: the triage's budget of") and "of logs ran out" in lint.reason
    assert not found.all_not_yours and found.status == "failed"
    assert "of logs ran out" in table(found)


async def test_a_log_the_read_token_may_not_read_is_not_examined(world: CiWorld) -> None:
    _pre_existing_and_new(world)
    world.gl.fail_next(1, 403, path=rf"/jobs/{_job_id(world, 'lint')}/trace$",
                       body={"message": "403 Forbidden"})
    found, _ = await run_triage(world.gl, 1)
    lint = next(c for c in found.checks if c.name == "lint")
    assert lint.verdict == Verdict.UNCLASSIFIED and lint.reason.startswith("not examined:")
    assert "403" in lint.reason
    assert found.status == "failed"


async def test_a_log_gitlab_keeps_failing_on_after_its_retries_is_not_examined(world: CiWorld) -> None:
    _pre_existing_and_new(world)
    # python-gitlab retries a 5xx ten times; Retry-After 0 keeps those retries immediate.
    world.gl.fail_next(11, 502, path=rf"/jobs/{_job_id(world, 'lint')}/trace$", headers={"Retry-After": "0"})
    found, _ = await run_triage(world.gl, 1)
    lint = next(c for c in found.checks if c.name == "lint")
    assert lint.verdict == Verdict.UNCLASSIFIED and lint.reason.startswith("not examined:")
    assert found.status == "failed"


async def test_a_failure_beyond_the_cut_of_a_long_job_list_blocks_the_status(world: CiWorld) -> None:
    """302 attempts, GitLab lists the newest first: `broken`, the oldest, falls beyond a cut at 300."""
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7)),
                          Attempt("broken", "success", trace="ok\n")])
    mr = world.mr(1, base_sha=BASE)
    shards = [Attempt(f"shard-{n}", "success", trace="ok\n") for n in range(300)]
    world.pipeline(mr["sha"], [Attempt("broken", trace=failing_log("test_broken", LINT)), *shards,
                               Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2))],
                   ref="feature", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, limits=TriageLimits(max_jobs_per_pipeline=300))
    verdicts = {c.name: c for c in found.checks}
    assert verdicts["unit-tests"].verdict == Verdict.PRE_EXISTING
    broken = verdicts["broken"]
    assert broken.verdict == Verdict.UNCLASSIFIED and broken.url.endswith("/-/jobs/" + broken.url.split("/")[-1])
    assert "listed only up to 300 attempts of 302" in broken.reason
    assert found.unlisted and found.status == "failed"
    assert "Not listed whole" in headline(found)


async def test_a_job_list_the_token_may_not_read_is_no_all_clear(world: CiWorld) -> None:
    _pre_existing_and_new(world)
    world.gl.fail_next(6, 403, path=r"/jobs$", body={"message": "403 Forbidden"})  # a pipeline's and the project's
    found, _ = await run_triage(world.gl, 1)
    assert found.unlisted and found.status == "failed"
    assert found.checks and all(c.verdict == Verdict.UNCLASSIFIED and c.reason.startswith("not examined: the jobs of "
                                "pipeline") for c in found.checks)
    assert "Not listed whole" in headline(found)


async def test_unreadable_commit_statuses_block_the_status(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2))],
                   ref="feature", source="merge_request_event")
    world.gl.fail_next(1, 403, path=r"/statuses$", body={"message": "403 Forbidden"})
    found, _ = await run_triage(world.gl, 1)
    assert [c.verdict for c in found.checks] == [Verdict.PRE_EXISTING]
    assert found.unlisted and "statuses could not be read" in found.unlisted[0]
    assert found.status == "failed"


async def test_a_failure_the_base_shows_but_whose_base_log_is_unreadable_is_not_pre_existing(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2))],
                   ref="feature", source="merge_request_event")
    base_job = next(job_id for (_, job_id), job in world.gl.jobs.items() if job["commit"]["id"] == BASE)
    world.gl.fail_next(5, 403, path=rf"/jobs/{base_job}/trace$", body={"message": "403 Forbidden"})
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.UNCLASSIFIED and "merge base" in check.reason and "403" in check.reason

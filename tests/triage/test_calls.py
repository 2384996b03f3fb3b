"""What a triage costs in GitLab calls, and that reading less never exonerates: one page of the project's newest jobs
gives the job lists of every pipeline it shows whole; a pipeline it does not is read on its own, and a list that
could not be read counts for nothing (never a pass, never a run in the history line)."""

from __future__ import annotations

from collections import Counter

from hummingbird_agent.triage.model import Verdict
from hummingbird_agent.triage.recent_jobs import recent_jobs
from tests.servers.gitlab import GitLabServer
from tests.triage.conftest import failing_log, run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
PARSE = "AssertionError: parse('1.2') returned None"


def _endpoints(gl: GitLabServer, since: int) -> Counter[str]:
    """The GitLab requests made since request number `since`, by what they read."""
    out: Counter[str] = Counter()
    for req in gl.requests[since:]:
        tail = req.path.split("/projects/", 1)[-1].split("/", 1)[-1] if "/projects/" in req.path else req.path
        out["/".join("N" if part.isdigit() else part for part in tail.split("/"))] += 1
    return out


def _mr(world: CiWorld) -> int:
    mr = world.mr(1, base_sha=BASE)
    return world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2))],
                   ref="feature", source="merge_request_event")


async def test_a_typical_triage_reads_the_job_lists_in_one_call(world: CiWorld) -> None:
    """One failed job, its merge base and 10 target-branch pipelines: 10 calls (21 when every pipeline's job list was
    a call of its own): the MR, the pipelines of the commit, the base and `main`, one page of jobs, the commit's
    statuses, the analysed pipeline's test report, and three logs (the MR's, the base's, a passing one on `main`)."""
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7)),
                          Attempt("lint", "success", trace="ok\n")])
    for n in range(10):
        world.pipeline(sha_of("main", n), [Attempt("unit-tests", "success", trace="ok\n"),
                                           Attempt("lint", "success", trace="ok\n")])
    _mr(world)
    since = len(world.gl.requests)
    found, reader = await run_triage(world.gl, 1)
    assert [c.verdict for c in found.checks] == [Verdict.PRE_EXISTING]
    assert found.checks[0].history == "failed 0 of the last 10 runs on `main`"
    assert reader.calls == 10 and not found.gaps
    read = _endpoints(world.gl, since)
    assert read["jobs"] == 1 and read["pipelines/N/jobs"] == 0 and read["jobs/N/trace"] == 3
    assert read["pipelines"] == 4  # the commit's, the base's, `main`'s; and `main`'s again for the culprit search
    assert found.checks[0].culprit is None  # no `main` pipeline before the base's: nothing to search


async def test_a_target_pipeline_whose_jobs_were_not_read_is_not_a_pass(world: CiWorld) -> None:
    """The page of the newest jobs does not reach the oldest `main` pipeline (101 newer jobs); its own list is refused:
    it counts neither as a pass nor as a run, and the failure is not called new on its strength."""
    old = world.pipeline(sha_of("main", "old"), [Attempt("unit-tests", "success", trace="ok\n")])
    world.pipeline(sha_of("main", "new"), [Attempt(f"docs {n}", "success", trace="ok\n") for n in range(101)])
    _mr(world)
    world.gl.fail_next(1, 403, path=rf"/pipelines/{old}/jobs$", body={"message": "403 Forbidden"})
    found, _ = await run_triage(world.gl, 1)
    check = found.checks[0]
    assert check.verdict == Verdict.UNCLASSIFIED and "did not run on the merge base or on recent" in check.reason
    assert check.history == "" and found.status == "failed"
    assert any("403" in gap for gap in found.gaps)


async def test_a_target_pipeline_beyond_the_page_is_read_on_its_own(world: CiWorld) -> None:
    old = world.pipeline(sha_of("main", "old"), [Attempt("unit-tests", "success", trace="ok\n")])
    new = world.pipeline(sha_of("main", "new"), [Attempt(f"docs {n}", "success", trace="ok\n") for n in range(101)])
    analysed = _mr(world)
    since = len(world.gl.requests)
    found, _ = await run_triage(world.gl, 1)
    check = found.checks[0]
    assert check.verdict == Verdict.NEW and check.evidence_url.endswith(
        f"/-/jobs/{next(j for (_, j), job in world.gl.jobs.items() if job['pipeline']['id'] == old)}")
    assert check.history == "failed 0 of the last 1 run on `main`"
    # Read on their own: the old pipeline, the new one (more jobs than the page), the MR's (created after the page's
    # oldest job, within the margin): the page shows none of them whole.
    read = {int(r.path.split("/")[-2]) for r in world.gl.requests[since:] if r.path.endswith("/jobs") and
            "/pipelines/" in r.path}
    assert read == {old, new, analysed}


async def test_a_page_that_reaches_jobs_created_well_before_a_pipeline_shows_it_whole(world: CiWorld) -> None:
    """GitLab creates a pipeline's jobs with it: once the page reaches a job created TRIAGE_RECENT_JOBS_MARGIN_S
    before a pipeline was, it shows that pipeline whole although older jobs exist."""
    world.pipeline(sha_of("main", "older"), [Attempt("unit-tests", "success", trace="ok\n")])
    for n in range(99):
        world.pipeline(sha_of("main", n), [Attempt("unit-tests", "success", trace="ok\n")])
    for job in world.gl.jobs.values():
        job["created_at"] = "2025-12-01T00:00:00.000Z"  # long before any pipeline (the fake's clock starts later)
    _mr(world)
    since = len(world.gl.requests)
    found, _ = await run_triage(world.gl, 1)
    assert found.checks[0].history == "failed 0 of the last 10 runs on `main`"
    assert _endpoints(world.gl, since)["pipelines/N/jobs"] == 0


def test_a_pipeline_the_page_cannot_place_for_sure_is_not_shown_whole() -> None:
    at = "2026-01-01T00:00:00.000Z"
    job = {"id": 3, "pipeline_id": 7, "created_at": "2025-01-01T00:00:00.000Z", "pipeline_created_at": at}
    assert recent_jobs([job], more=False).whole({"id": 7}) == [{k: v for k, v in job.items()
                                                               if k != "pipeline_created_at"}]
    # No job of it on the page: it may have been created after the page was read.
    assert recent_jobs([job], more=False).whole({"id": 8, "created_at": "2020-01-01T00:00:00.000Z"}) is None
    assert recent_jobs([job, {"id": 2, "pipeline_id": None}], more=False).whole({"id": 7}) is None  # unplaced job
    assert recent_jobs([job], more=True).whole({"id": 7}) is not None  # its jobs are a year older than it
    naive = job | {"created_at": "2025-01-01T00:00:00"}  # a time without its zone cannot be compared
    assert recent_jobs([naive], more=True).whole({"id": 7}) is None
    assert recent_jobs([job | {"created_at": "2025-12-31T23:55:00.000Z"}], more=True).whole({"id": 7}) is None


async def test_a_refused_page_costs_its_call_and_nothing_else(world: CiWorld) -> None:
    """The project's job list refused: each pipeline's list is read on its own,
    the verdicts are those of a triage without the page, and no gap is said (nothing was missed)."""
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=7))])
    world.pipeline(sha_of("main", 1), [Attempt("unit-tests", "success", trace="ok\n")])
    _mr(world)
    _, whole = await run_triage(world.gl, 1)
    world.gl.fail_next(1, 403, path=r"/projects/group/project/jobs$", body={"message": "403 Forbidden"})
    found, reader = await run_triage(world.gl, 1)
    assert [c.verdict for c in found.checks] == [Verdict.PRE_EXISTING]
    assert found.checks[0].history == "failed 1 of the last 2 runs on `main`"  # the base's pipeline is on `main`
    assert not found.gaps and reader.calls == whole.calls + 3  # the MR's, the base's and `main`'s lists

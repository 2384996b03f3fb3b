"""The commit status in the running service (webhooks through SNS/SQS on moto, the fake GitLab, the scripted Gemini
server, real Podman): every pipeline event re-decides it from the commit as it is now; no limit, no earlier verdict
and no engine failure leaves a `success` standing; checks that never ran keep it from `success`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.runner.conftest import TRIAGE_STATUS
from tests.runner.harness import IID, MEMBER, PROJECT_ID, SHA, Service, expect_turns, pipeline_event, states_posted
from tests.servers.gemini import text_turn
from tests.triage.conftest import failing_log
from tests.triage.gitlab_log import BRANCH, MAIN, job_log
from tests.triage.real_tools import recorded
from tests.triage.world import Attempt, CiWorld, sha_of

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]

BASE = sha_of("base")
PARSE = "AssertionError: parse('1.2') returned None"
PIPELINE = 501


@pytest.fixture
def service(triaged_service: Service) -> Service:
    return triaged_service


def _status(service: Service) -> str:
    """The state of the newest status the service set on the MR's commit."""
    mine = [s for s in service.gitlab.statuses.get((PROJECT_ID, SHA), []) if s["name"] == TRIAGE_STATUS]
    return str(max(mine, key=lambda s: int(s["id"]))["status"]) if mine else ""


def _pre_existing(world: CiWorld, *more: Attempt) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=9)),
                          Attempt("lint", "success", trace="$ ruff check .\nAll checks passed!\n")])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)), *more],
                   ref="feature", source="merge_request_event", pipeline_id=PIPELINE)


def _retry(service: Service, name: str, trace: str, when: str) -> None:
    """A job of the analysed pipeline retried after the verdict (GitLab: a new attempt, the pipeline updated)."""
    job_id = max(j for (_, j) in service.gitlab.jobs) + 1
    service.gitlab.add_job(PROJECT_ID, job_id, name=name, status="failed", ref="feature", sha=SHA,
                           pipeline_id=PIPELINE, trace=trace)
    service.gitlab.pipelines[(PROJECT_ID, PIPELINE)]["updated_at"] = when


async def _event(service: Service, status: str = "failed", pipeline_id: int = PIPELINE) -> None:
    service.publish(pipeline_event(status=status, pipeline_id=pipeline_id))
    await service.finished()


async def test_a_retry_after_the_verdict_is_decided_again(service: Service) -> None:
    """Path 7: the first event's triage passes; a job retried since fails with a new failure; the second event of
    the same pipeline (same session) gets a new verdict, not the first one again."""
    _pre_existing(CiWorld(service.gitlab))
    await _event(service)
    assert _status(service) == "success" and not service.model.generate_calls
    _retry(service, "unit-tests", failing_log("test_invoice", "KeyError: 'currency'", run=3), "2026-01-05T11:00:00Z")
    expect_turns(service.model, text_turn("unit-tests now fails test_invoice: the MR's."))
    await _event(service)
    assert _status(service) == "failed"
    [note] = service.status_notes()
    assert "🔴 new" in note["body"]


async def test_a_limit_that_stops_the_model_still_decides_the_status(service: Service) -> None:
    """Path 8: the commit was already analysed (a note for this sha exists), so the second failed pipeline runs no
    model: its status is decided all the same, and the earlier `success` does not stay."""
    world = CiWorld(service.gitlab)
    _pre_existing(world, Attempt("lint", trace=failing_log("test_lint", "AssertionError: W605 fired", run=2)))
    expect_turns(service.model, text_turn("lint is the MR's."))
    await _event(service)
    assert _status(service) == "failed" and len(service.final_notes()) == 1
    world.pipeline(SHA, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=3)),
                         Attempt("lint", "success", trace="ok\n")],
                   ref="feature", source="merge_request_event", pipeline_id=PIPELINE + 1)
    await _event(service, pipeline_id=PIPELINE + 1)
    assert _status(service) == "success"  # the re-run passed lint: every failure left is someone else's
    world.pipeline(SHA, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=4)),
                         Attempt("lint", trace=failing_log("test_lint", "AssertionError: E501 fired", run=4))],
                   ref="feature", source="merge_request_event", pipeline_id=PIPELINE + 2)
    await _event(service, pipeline_id=PIPELINE + 2)
    assert _status(service) == "failed" and len(service.final_notes()) == 1  # no second analysis: the sha was seen
    assert len(service.model.generate_calls) == 1


async def test_the_status_is_decided_before_the_model_runs(service: Service) -> None:
    """Path 8: while the model runs the status is already the triage's, never an older one."""
    _pre_existing(CiWorld(service.gitlab),
                  Attempt("lint", trace=failing_log("test_lint", "AssertionError: W605 fired", run=2)))
    seen: list[str] = []

    def first_answer(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(_status(service))
        return text_turn("lint is the MR's.")

    service.model.script(first_answer)
    await _event(service)
    assert seen == ["failed"] and _status(service) == "failed"
    assert states_posted(service, SHA) == ["pending", "failed"]


async def test_an_engine_failure_leaves_the_status_failed(service: Service) -> None:
    _pre_existing(CiWorld(service.gitlab),
                  Attempt("lint", trace=failing_log("test_lint", "AssertionError: W605 fired", run=2)))
    service.model.fail_next(20, 401)  # refused at once: no backoff to wait out
    await _event(service)
    assert _status(service) == "failed" and service.final_notes()[0]["body"].startswith("Hummingbird analysis failed")


async def test_tests_skipped_after_a_pre_existing_build_failure_keep_the_status_failed(service: Service) -> None:
    """Path 5: the build fails as on the merge base, the MR's tests never ran: no green, and the note says why."""
    build = failing_log("test_build", "CompileError: vendor/lib.c missing", run=1)
    world = CiWorld(service.gitlab)
    world.pipeline(BASE, [Attempt("build", trace=build, stage="build"), Attempt("unit", "skipped", trace=None)])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, [Attempt("build", trace=build.replace("17.1.0", "17.3.0"), stage="build"),
                         Attempt("unit", "skipped", trace=None)],
                   ref="feature", source="merge_request_event", pipeline_id=PIPELINE)
    expect_turns(service.model, text_turn("The build fails as on main; the tests did not run."))
    await _event(service)
    assert _status(service) == "failed"
    [note] = service.status_notes()
    assert "skipped: it did not run" in note["body"]


async def test_a_passing_pipeline_decides_the_status_too(service: Service) -> None:
    """A pipeline that passes after a failed one on the same commit: the status follows the commit, not the old
    verdict; a running pipeline makes it pending first."""
    world = CiWorld(service.gitlab)
    _pre_existing(world, Attempt("lint", trace=failing_log("test_lint", "AssertionError: W605 fired", run=2)))
    expect_turns(service.model, text_turn("lint is the MR's."))
    await _event(service)
    assert _status(service) == "failed"
    await _event(service, status="running", pipeline_id=PIPELINE + 1)
    assert _status(service) == "pending"
    world.pipeline(SHA, [Attempt("unit-tests", "success", trace="ok\n"), Attempt("lint", "success", trace="ok\n")],
                   ref="feature", source="merge_request_event", pipeline_id=PIPELINE + 1)
    await _event(service, status="success", pipeline_id=PIPELINE + 1)
    assert _status(service) == "success"


async def test_a_lint_job_printing_what_the_base_prints_is_pre_existing_and_green(service: Service) -> None:
    """Path 10: identical short mypy output on the MR and the base, each in its runner's sections (another runner,
    ref and commit): pre-existing, no model run, the status passes."""
    output = recorded()["mypy", "base"]
    world = CiWorld(service.gitlab)
    world.pipeline(BASE, [Attempt("lint", trace=job_log("mypy --strict app.py", output, MAIN))])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, [Attempt("lint", trace=job_log("mypy --strict app.py", output, BRANCH))],
                   ref="feature", source="merge_request_event", pipeline_id=PIPELINE)
    await _event(service)
    assert _status(service) == "success" and not service.model.generate_calls
    [note] = service.status_notes()
    assert "🟠 pre-existing" in note["body"]

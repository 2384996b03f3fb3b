"""The triage in the running service (webhooks through SNS/SQS on moto, the fake GitLab, the scripted Gemini
server, real Podman): verdicts first in the note, the model told them, the note kept when the model fails, the
commit status, the outage guard and the read budgets."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent import budgets
from tests.runner.conftest import TRIAGE_STATUS
from tests.runner.harness import (
    IID,
    MEMBER,
    PROJECT_ID,
    SHA,
    Service,
    expect_turns,
    pipeline_event,
    states_posted,
)
from tests.servers.gemini import text_turn
from tests.triage.conftest import GENERIC_LOG, failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]

BASE = sha_of("base")
PIPELINE = 501
PARSE = "AssertionError: parse('1.2') returned None"
EXPLANATION = "## Why\n`unit-tests` already fails on main; `lint` is this MR's: fix the import order."
STATUS = TRIAGE_STATUS


@pytest.fixture
def service(triaged_service: Service) -> Service:
    return triaged_service


def every_verdict(world: CiWorld) -> None:
    """unit-tests fails the same way on the base, e2e passed on retry, build lost its runner (as on the base), lint
    passes on the base, docs never ran there."""
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=8)),
                          Attempt("lint", "success", trace="$ ruff check .\nAll checks passed!\n"),
                          Attempt("build", trace="ERROR: Job failed (system failure): no space left",
                                  failure_reason="runner_system_failure")])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER, title="Add frob")
    world.pipeline(SHA, [
        Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)),
        Attempt("e2e", trace=failing_log("test_login", "TimeoutError: page did not load")),
        Attempt("e2e", "success", trace="ok\n"),
        Attempt("build", trace="ERROR: Job failed (system failure): no space left",
                failure_reason="runner_system_failure"),
        Attempt("lint", trace="$ ruff check .\nsrc/frob.py:3:1: I001 Import block is un-sorted or un-formatted\n"
                              "Found 1 error.\nERROR: Job failed: exit code 1"),
        Attempt("docs", trace=failing_log("test_docs", "SphinxWarning: undefined label 'frob'")),
    ], ref="feature", source="merge_request_event", pipeline_id=PIPELINE)


async def test_every_verdict_is_in_the_note_before_the_models_explanation(service: Service) -> None:
    every_verdict(CiWorld(service.gitlab))
    expect_turns(service.model, text_turn(EXPLANATION))
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    body = service.final_notes()[0]["body"]
    assert body.startswith("**Triage:** 5 failed checks, 3 of 5 not caused by this MR")
    for badge in ("🟠 pre-existing", "🟡 flaky", "🔵 infrastructure", "🔴 new", "⚪ unclassified"):
        assert badge in body
    assert body.index("| Check | Verdict") < body.index(EXPLANATION)
    task = json.loads(service.model.generate_calls[0].body["contents"][0]["parts"][0]["text"])
    verdicts = {c["check"]: c["verdict"] for c in task["triage"]["checks"]}
    assert verdicts == {"unit-tests": "pre-existing", "e2e": "flaky", "build": "infrastructure", "lint": "new",
                        "docs": "unclassified"}
    await service.finished()
    [status] = service.gitlab.posted_statuses  # pending while the triage read, then its verdict (one status)
    assert (status["name"], status["status"], status["sha"]) == (STATUS, "failed", SHA)
    assert states_posted(service) == ["pending", "failed"]
    assert status["target_url"].endswith(f"/-/pipelines/{PIPELINE}")  # the status is the order's, posted at once


async def test_the_note_keeps_the_triage_when_the_model_fails(service: Service) -> None:
    every_verdict(CiWorld(service.gitlab))
    service.model.fail_next(20, 401)  # refused at once: no backoff to wait out
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the failure note")
    body = service.final_notes()[0]["body"]
    assert body.startswith("Hummingbird analysis failed.")
    assert "**Triage:** 5 failed checks" in body and "🟠 pre-existing" in body
    assert "Hummingbird stopped: the model call failed" in body


async def test_a_pipeline_whose_failures_are_all_not_its_own_gets_a_passing_status(service: Service) -> None:
    """Nothing new to explain (`model_when: news`): the status note says so, no model is asked, the status passes."""
    world = CiWorld(service.gitlab)
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=8))])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2))], ref="feature",
                   pipeline_id=PIPELINE)
    service.publish(pipeline_event())
    await service.finished()
    [note] = service.status_notes()
    assert "**Triage:** 1 failed check, none looks caused by this MR" in note["body"]
    assert not service.final_notes() and not service.model.generate_calls
    assert [(s["name"], s["status"]) for s in service.gitlab.posted_statuses] == [(STATUS, "success")]
    assert service.gitlab.posted_statuses[0]["target_url"].endswith(f"/-/pipelines/{PIPELINE}")


async def test_a_log_the_read_token_may_not_read_keeps_the_status_failed(service: Service) -> None:
    """unit-tests fails the same way on the base; lint's log answers 403: lint is not examined, never all clear."""
    world = CiWorld(service.gitlab)
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=8)),
                          Attempt("lint", "success", trace="$ ruff check .\nAll checks passed!\n")])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=2)),
                         Attempt("lint", trace=failing_log("test_lint", "AssertionError: W605 fired", run=3))],
                   ref="feature", pipeline_id=PIPELINE)
    lint = next(i for (_, i), job in service.gitlab.jobs.items()
                if job["name"] == "lint" and job["commit"]["id"] == SHA)
    service.gitlab.fail_next(50, 403, path=rf"/jobs/{lint}/trace$", body={"message": "403 Forbidden"})
    expect_turns(service.model, text_turn("lint could not be read."))
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    body = service.final_notes()[0]["body"]
    assert body.startswith("**Triage:** 2 failed checks, 1 of 2 not caused by this MR")
    assert "not examined:" in body and "403" in body
    await service.finished()
    assert [(s["name"], s["status"]) for s in service.gitlab.posted_statuses] == [(STATUS, "failed")]


def _bot_bodies(service: Service, iid: int) -> list[str]:
    bot = service.gitlab.bot_user["id"]
    skip = ("Running the workflow", "<!-- hummingbird-status")  # placeholders and the MR's status note
    return [n["body"] for d in service.gitlab.discussions.get((PROJECT_ID, iid), []) for n in d["notes"]
            if n["author"]["id"] == bot and not n["body"].startswith(skip)]


async def test_five_mrs_failing_the_same_way_get_one_model_run(service: Service) -> None:
    world = CiWorld(service.gitlab)
    outage = "Error: getaddrinfo ENOTFOUND registry.internal.example (npm registry unreachable)"
    iids = list(range(IID, IID + 5))
    for n, iid in enumerate(iids):
        sha = SHA if iid == IID else sha_of("mr", iid)
        world.mr(iid, base_sha=BASE, sha=sha, author_id=MEMBER)
        world.pipeline(sha, [Attempt("build", trace=failing_log("test_install", outage, run=n + 1))],
                       ref=f"feature-{iid}", pipeline_id=PIPELINE + n)
    expect_turns(service.model, text_turn("The npm registry is unreachable; retry when it is back."))
    for n, iid in enumerate(iids):
        event = pipeline_event(pipeline_id=PIPELINE + n, sha=SHA if iid == IID else sha_of("mr", iid))
        event["merge_request"]["iid"] = iid
        service.publish(event)
    await service.wait_for(lambda: all(_bot_bodies(service, iid) for iid in iids), "a note on every MR")
    await service.finished()
    bodies = [body for iid in iids for body in _bot_bodies(service, iid)]
    assert len(bodies) == 5 and len(service.model.generate_calls) == 1
    pointers = [b for b in bodies if "The same failure was diagnosed" in b]
    assert len(pointers) == 4 and all("#note_" in b for b in pointers)
    assert sorted(s["sha"] for s in service.gitlab.posted_statuses) == sorted(  # every MR's commit gets its status
        SHA if iid == IID else sha_of("mr", iid) for iid in iids)


async def test_an_mr_with_two_hundred_failed_jobs_stays_within_the_read_budgets(service: Service) -> None:
    world = CiWorld(service.gitlab)
    world.pipeline(BASE, [Attempt(f"shard-{n}", trace=GENERIC_LOG) for n in range(200)])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, [Attempt(f"shard-{n}", trace=failing_log(f"test_{n}", PARSE)) for n in range(200)],
                   ref="feature", pipeline_id=PIPELINE)
    expect_turns(service.model, text_turn("Many shards fail."))
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    read = [r for r in service.gitlab.requests if "read-token" in (r.header("PRIVATE-TOKEN") or "")]
    traces = [r for r in read if r.path.endswith("/trace")]
    # The triage's budget, plus extra pages of long lists (two job lists, the statuses), the re-read of the commit's
    # pipelines before the status is published, and the trust check's member look-ups.
    assert len(read) <= budgets.TRIAGE_MAX_CALLS + 7
    assert len(traces) <= budgets.TRIAGE_MAX_CALLS
    body = service.final_notes()[0]["body"]
    assert f"({200 - budgets.TRIAGE_MAX_CHECKS} more not examined)" in body
    assert "GitLab calls ran out" in body

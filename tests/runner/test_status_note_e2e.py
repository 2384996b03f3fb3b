"""The MR's status note in the running service (webhooks through SNS/SQS on moto, the fake GitLab, the scripted
Gemini server, real Podman): one note per MR edited as its pipelines finish, newest first; no model run when every
failure is someone else's; the note's update queued before the model is asked, shown while it answers."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.runner.harness import IID, MEMBER, SHA, Service, comment, expect_turns, pipeline_event
from tests.servers.gemini import text_turn
from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]

BASE = sha_of("base")
PARSE = "AssertionError: parse('1.2') returned None"
NOTES = rf"/merge_requests/{IID}/notes(?:/\d+)?$"


@pytest.fixture
def service(triaged_service: Service) -> Service:
    return triaged_service


def _commit(world: CiWorld, n: int, pipeline_id: int, *, new: bool = False) -> str:
    """Commit `n` of the MR, on the base (a version of the MR shows it): unit-tests fails as on the base
    (pre-existing); with `new`, lint fails too (the base passes it)."""
    sha = SHA if n == 0 else sha_of("commit", n)
    if n:
        world.gl.add_version(world.project_id, IID, head_sha=sha, base_sha=BASE)
    attempts = [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=n + 2))]
    if new:
        attempts.append(Attempt("lint", trace=failing_log("test_lint", "AssertionError: W605 fired", run=n + 2)))
    world.pipeline(sha, attempts, ref="feature", pipeline_id=pipeline_id)
    return sha


def _base(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=9)),
                          Attempt("lint", "success", trace="$ ruff check .\nAll checks passed!\n")])
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)


def _writes(service: Service, method: str) -> int:
    return len(service.gitlab.requests_to(NOTES, method)) + len(
        [r for r in service.gitlab.requests_to(r"/discussions/[0-9a-f]+/notes/\d+$", method)
         if "hummingbird-status" in r.arg("body", "")])


def _sections(body: str) -> list[int]:
    return [int(p) for p in re.findall(r'"pipeline":(\d+)', body)]


async def _pipeline(service: Service, pipeline_id: int, sha: str, status: str = "failed") -> None:
    service.publish(pipeline_event(status=status, pipeline_id=pipeline_id, sha=sha))
    await service.finished()


async def test_three_pipelines_make_one_status_note_newest_first_and_no_model_run(service: Service) -> None:
    world = CiWorld(service.gitlab)
    _base(world)
    shas = [_commit(world, n, 601 + n) for n in range(3)]
    for n, sha in enumerate(shas):
        await _pipeline(service, 601 + n, sha)
    [note] = service.status_notes()
    assert (_writes(service, "POST"), _writes(service, "PUT")) == (1, 2)
    body = note["body"]
    assert _sections(body) == [603, 602, 601]
    assert body.index("Commit `" + shas[2][:12]) < body.index("<details><summary>Earlier pipelines (2)")
    assert "none looks caused by this MR" in body and "No model was asked" in body
    assert not service.final_notes() and not service.model.generate_calls
    assert [(s["sha"], s["status"]) for s in service.gitlab.posted_statuses] == [(s, "success") for s in shas]
    assert [s["target_url"].rsplit("/", 1)[-1] for s in service.gitlab.posted_statuses] == ["601", "602", "603"]

    # A late pipeline with a lower id (an older head's, decided after the newer head's): below the newest, its
    # status on its own commit only; the same commit's older pipeline changes nothing.
    late = _commit(world, 7, 590)
    await _pipeline(service, 590, late)
    assert _sections(service.status_notes()[0]["body"]) == [603, 602, 601, 590]
    assert [(s["sha"], s["status"]) for s in service.gitlab.posted_statuses[3:]] == [(late, "success")]
    world.pipeline(shas[2], [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=5))], ref="feature",
                   pipeline_id=595)
    puts = _writes(service, "PUT")
    await _pipeline(service, 595, shas[2])
    assert _writes(service, "PUT") == puts and len(service.status_notes()) == 1
    assert _sections(service.status_notes()[0]["body"]) == [603, 602, 601, 590]

    await _pipeline(service, 604, shas[2], status="success")
    [note] = service.status_notes()
    assert _sections(note["body"]) == [604, 602, 601, 590] and "all green" in note["body"].split("<details>")[0]


async def test_news_gets_the_status_note_before_the_model_and_a_link_to_the_analysis(service: Service) -> None:
    world = CiWorld(service.gitlab)
    _base(world)
    sha = _commit(world, 0, 611, new=True)
    seen_at_first_call: list[list[str]] = []

    def first_answer(body: dict[str, Any]) -> dict[str, Any]:
        # The note's update is queued before the model is asked and written by the MR's own queue group, so it
        # shows while the model is still answering (this call waits, the service does not).
        deadline = time.monotonic() + 60
        while not service.status_notes() and time.monotonic() < deadline:
            time.sleep(0.05)
        seen_at_first_call.append([n["body"] for n in service.status_notes()])
        return text_turn("lint is this MR's: W605 fires on the new regex.")

    expect_turns(service.model, first_answer)
    await _pipeline(service, 611, sha)
    assert len(seen_at_first_call) == 1 and len(seen_at_first_call[0]) == 1
    assert '"pipeline":611' in seen_at_first_call[0][0] and "🔴 new" in seen_at_first_call[0][0]
    [analysis] = service.final_notes()
    [note] = service.status_notes()
    assert f"#note_{analysis['id']})" in note["body"]
    assert [s["status"] for s in service.gitlab.posted_statuses] == ["failed"]


async def test_a_command_runs_the_model_even_when_every_failure_is_pre_existing(service: Service) -> None:
    world = CiWorld(service.gitlab)
    _base(world)
    await _pipeline(service, 621, _commit(world, 0, 621))
    assert not service.model.generate_calls and len(service.status_notes()) == 1
    expect_turns(service.model, text_turn("unit-tests already fails on main."))
    service.publish(comment(service, "/hummingbird analyze-failures"))
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    await service.finished()
    assert len(service.model.generate_calls) == 1 and len(service.status_notes()) == 1

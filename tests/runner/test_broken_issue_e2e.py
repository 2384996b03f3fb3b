"""The issue of a broken target branch in the running service (`triage.culprit_issue`): a failed pipeline of an MR
blocked by the break opens the issue, the status note names the culprit and links the issue, and the MR leaves the
issue's list when its pipeline passes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.runner.conftest import triage_on
from tests.runner.harness import IID, MEMBER, PROJECT_ID, SHA, Service, pipeline_event, seed_gitlab, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.triage.conftest import failing_log
from tests.triage.culprit_world import PARSE, PASSING, authors, case_history, cases_attempt, history
from tests.triage.world import Attempt, CiWorld, sha_of

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]


def _issues_on(config: dict[str, Any]) -> None:
    triage_on(config)
    config["workflows"]["analyze-failures"]["triage"]["culprit_issue"] = True


@pytest.fixture
async def service(tmp_path: Path, gitlab_server: GitLabServer, moto_server: MotoServer) -> AsyncIterator[Service]:
    seed_gitlab(gitlab_server)
    with GeminiServer() as model:
        async with start_service(tmp_path, gitlab_server, model, moto_server, tweak=_issues_on) as running:
            yield running
    assert not model.errors, model.errors


async def _blocked(service: Service, world: CiWorld) -> dict[str, Any]:
    """`main` broken since !108; the MR's pipeline fails the same way: the issue it opened."""
    authors(world)
    merges = history(world, 16, broken_at=9)
    world.mr(IID, base_sha=merges[-1], sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=77))], ref="feature",
                   pipeline_id=701)
    service.publish(pipeline_event(status="failed", pipeline_id=701, sha=SHA))
    await service.finished()
    (issue,) = service.gitlab.issues.values()
    return issue


async def test_a_blocked_mr_opens_the_issue_its_note_links_and_leaves_it_when_green(service: Service) -> None:
    world = CiWorld(service.gitlab)
    issue = await _blocked(service, world)
    assert f"- !{IID}" in issue["description"] and "!108" in issue["title"]
    [note] = service.status_notes()
    assert "broken on `main` since [!108](" in note["body"] and f"[tracked in an issue]({issue['web_url']})" in (
        note["body"])
    assert "broken on main since !108" in service.gitlab.posted_statuses[-1]["description"]

    world.pipeline(SHA, [Attempt("unit-tests", "success", trace=PASSING)], ref="feature", pipeline_id=702)
    service.publish(pipeline_event(status="success", pipeline_id=702, sha=SHA))
    await service.finished()
    assert f"- !{IID}" not in issue["description"] and issue["state"] == "opened"


async def test_the_target_branch_passing_its_job_again_closes_the_issue(service: Service) -> None:
    """A fix merged into the target branch: that branch's own pipeline (a push pipeline, whose hook names no MR)
    passes the job again, and the issue is closed with the fixing pipeline, though no MR pipeline ran since."""
    world = CiWorld(service.gitlab)
    issue = await _blocked(service, world)

    fix = world.merged(200, [sha_of("fix")], author_id=51)["merge_commit_sha"]
    fixing = world.pipeline(fix, [Attempt("unit-tests", "success", trace=PASSING)])
    service.publish(pipeline_event(status="success", pipeline_id=fixing, sha=fix, source="push", ref="main"))
    await service.finished()
    assert issue["state"] == "closed"
    [comment] = [n for (_, iid), notes in service.gitlab.issue_notes.items() if iid == issue["iid"] for n in notes]
    assert f"/pipelines/{fixing}" in comment["body"] and "!200" in comment["body"]


async def test_two_mrs_failing_different_cases_of_one_job_are_listed_on_one_issue(service: Service) -> None:
    """`unit-tests` broke by test_a at the 5th merge (!104), by test_b at the 11th (!110). The MR fails only test_b
    and opens the issue; a second MR fails both. Both are listed on the one issue of the job's break, titled by the
    earliest, and both notes link it."""
    world = CiWorld(service.gitlab)
    authors(world)
    merges = case_history(world, 16, {"test_a": 5, "test_b": 11})
    second, second_sha = 8, sha_of("second")
    for iid, sha, failed, pipeline in ((IID, SHA, ["test_b"], 701), (second, second_sha, ["test_a", "test_b"], 702)):
        world.mr(iid, base_sha=merges[-1], sha=sha, author_id=MEMBER)
        world.pipeline(sha, [cases_attempt(failed, run=pipeline)], ref="feature", pipeline_id=pipeline)
        event = pipeline_event(status="failed", pipeline_id=pipeline, sha=sha)
        event["merge_request"]["iid"] = iid
        service.publish(event)
        await service.finished()
    (issue,) = service.gitlab.issues.values()
    assert f"- !{IID}" in issue["description"] and f"- !{second}" in issue["description"]
    assert "since !104" in issue["title"] and "[!110](" in issue["description"]
    bodies = [n["body"] for iid in (IID, second) for d in service.gitlab.discussions[(PROJECT_ID, iid)]
              for n in d["notes"] if n["body"].startswith("<!-- hummingbird-status ")]
    assert len(bodies) == 2 and all(f"[tracked in an issue]({issue['web_url']})" in b for b in bodies)

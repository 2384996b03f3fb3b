"""A pipeline that is not the MR's own (a push to the MR's branch runs a branch pipeline on the same commit) moves
the MR's commit status too, in the running service (moto, the fake GitLab, real Podman): its running keeps the status
`pending`, its finishing decides it again, and a commit that is no open MR's head gets no status from it."""

from __future__ import annotations

import pytest

from tests.runner.conftest import TRIAGE_STATUS
from tests.runner.harness import IID, MEMBER, PROJECT_ID, SHA, Service, pipeline_event, states_posted
from tests.triage.world import Attempt, CiWorld, sha_of

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]

BASE = sha_of("base")
MR_PIPELINE, BRANCH_PIPELINE = 601, 602
PASSING = [Attempt("unit-tests", "success", trace="ok\n"), Attempt("lint", "success", trace="ok\n")]


@pytest.fixture
def service(triaged_service: Service) -> Service:
    return triaged_service


def _status(service: Service, sha: str = SHA) -> str:
    mine = [s for s in service.gitlab.statuses.get((PROJECT_ID, sha), []) if s["name"] == TRIAGE_STATUS]
    return str(max(mine, key=lambda s: int(s["id"]))["status"]) if mine else ""


def _world(service: Service) -> CiWorld:
    """The MR's pipeline passed; a branch pipeline of the same commit still runs its build."""
    world = CiWorld(service.gitlab)
    world.pipeline(BASE, PASSING)
    world.mr(IID, base_sha=BASE, sha=SHA, author_id=MEMBER)
    world.pipeline(SHA, PASSING, ref="feature", source="merge_request_event", pipeline_id=MR_PIPELINE)
    world.pipeline(SHA, [Attempt("build", "running", trace="")], ref="feature", pipeline_id=BRANCH_PIPELINE)
    return world


def _finish(service: Service, status: str, trace: str) -> None:
    """The branch pipeline's running job ends (GitLab updates the job, then the pipeline from its jobs)."""
    [job] = [j for (p, _), j in service.gitlab.jobs.items()
             if p == PROJECT_ID and j["pipeline"]["id"] == BRANCH_PIPELINE]
    job.update(status=status)
    service.gitlab.traces[(PROJECT_ID, int(job["id"]))] = trace.encode()
    service.gitlab.refresh_status(PROJECT_ID, BRANCH_PIPELINE)


async def _event(service: Service, status: str, pipeline_id: int, source: str, sha: str = SHA) -> None:
    service.publish(pipeline_event(status=status, pipeline_id=pipeline_id, sha=sha, source=source))
    await service.finished()


async def test_a_branch_pipeline_finishing_green_decides_the_mr_status_green(service: Service) -> None:
    _world(service)
    await _event(service, "success", MR_PIPELINE, "merge_request_event")
    assert _status(service) == "pending"  # the branch pipeline's build is not proven yet
    _finish(service, "success", "build ok\n")
    await _event(service, "success", BRANCH_PIPELINE, "push")
    assert _status(service) == "success"
    assert states_posted(service, SHA)[-1] == "success"


async def test_a_branch_pipeline_failing_after_a_green_mr_pipeline_fails_the_status(service: Service) -> None:
    _world(service)
    await _event(service, "running", BRANCH_PIPELINE, "push")
    assert _status(service) == "pending"
    await _event(service, "success", MR_PIPELINE, "merge_request_event")
    _finish(service, "failed", "$ make build\nerror: undefined reference to `frob_init'\n")
    await _event(service, "failed", BRANCH_PIPELINE, "push")
    assert _status(service) == "failed"


async def test_a_branch_pipeline_of_a_commit_no_open_mr_heads_sets_no_status(service: Service) -> None:
    world = _world(service)
    other = sha_of("elsewhere")
    world.pipeline(other, PASSING, ref="topic", pipeline_id=BRANCH_PIPELINE + 1)
    await _event(service, "running", BRANCH_PIPELINE + 1, "push", sha=other)
    await _event(service, "success", BRANCH_PIPELINE + 1, "push", sha=other)
    assert states_posted(service, other) == [] and _status(service, other) == ""

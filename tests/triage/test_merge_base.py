"""The merge base an analysed commit is compared with: the MR's own for its head; for an older head (a push or a
force-push since) the base of the MR's version that showed it; none, and so nothing pre-existing, when no version
read shows it. The MR's current base once judged an older head's failures."""

from __future__ import annotations

from hummingbird_agent import budgets
from hummingbird_agent.triage.model import Verdict
from tests.triage.conftest import failing_log, run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

PARSE = "AssertionError: parse('1.2') returned None"
OLD_BASE, NEW_BASE = sha_of("base", 1), sha_of("base", 2)
OLD_HEAD, NEW_HEAD = sha_of("head", 1), sha_of("head", 2)


def _bases(world: CiWorld, *, old_fails: bool) -> None:
    """The two merge bases: one fails `unit` as the MR does, the other passes it."""
    failing = Attempt("unit", trace=failing_log("test_a", PARSE, run=7))
    passing = Attempt("unit", "success", trace="ok\n")
    world.pipeline(OLD_BASE, [failing if old_fails else passing])
    world.pipeline(NEW_BASE, [passing if old_fails else failing])


def _pushed_twice(world: CiWorld) -> int:
    """The MR's first head (on the old base) failed `unit`; a force-push rebased it onto the new base. Returns the
    first head's pipeline."""
    world.mr(1, base_sha=OLD_BASE, sha=OLD_HEAD)
    pipeline = world.pipeline(OLD_HEAD, [Attempt("unit", trace=failing_log("test_a", PARSE, run=2))], ref="feature",
                              source="merge_request_event")
    world.push_mr(1, NEW_HEAD, base_sha=NEW_BASE)
    world.pipeline(NEW_HEAD, [Attempt("unit", "success", trace="ok\n")], ref="feature", source="merge_request_event")
    return pipeline


async def test_an_older_head_is_compared_with_its_own_base_not_the_mrs_current_one(world: CiWorld) -> None:
    """Failed before the fix: the old head's `unit` failure, which its own base passes, was called pre-existing
    because the MR's current base fails it the same way, and the status read success."""
    _bases(world, old_fails=False)
    pipeline = _pushed_twice(world)
    found, _ = await run_triage(world.gl, 1, sha=OLD_HEAD, pipeline_id=pipeline)
    (check,) = found.checks
    assert (check.verdict, check.reason) == (Verdict.NEW, "passes on the merge base's pipeline")
    assert found.base_sha == OLD_BASE and found.status == "failed"


async def test_an_older_heads_failure_on_its_own_base_is_pre_existing(world: CiWorld) -> None:
    _bases(world, old_fails=True)
    pipeline = _pushed_twice(world)
    found, _ = await run_triage(world.gl, 1, sha=OLD_HEAD, pipeline_id=pipeline)
    assert [c.verdict for c in found.checks] == [Verdict.PRE_EXISTING]
    assert found.base_sha == OLD_BASE and found.status == "success"


async def test_the_head_needs_no_version_list(world: CiWorld) -> None:
    _bases(world, old_fails=True)
    world.mr(1, base_sha=OLD_BASE, sha=OLD_HEAD)
    world.pipeline(OLD_HEAD, [Attempt("unit", trace=failing_log("test_a", PARSE, run=2))], ref="feature",
                   source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, sha=OLD_HEAD)
    assert found.status == "success" and not world.gl.requests_to(r"/versions$")


async def test_a_commit_no_version_shows_has_no_base_and_no_fall_back_to_the_branch(world: CiWorld) -> None:
    """Failed before the fix: a commit the MR never showed (pushed and replaced before GitLab made a version of it)
    was compared with the MR's current base, which fails the same way, and so was `main`. Neither is its base."""
    _bases(world, old_fails=False)
    world.pipeline(sha_of("main", 3), [Attempt("unit", trace=failing_log("test_a", PARSE, run=5))])
    world.mr(1, base_sha=NEW_BASE, sha=NEW_HEAD)
    stray = sha_of("stray")
    pipeline = world.pipeline(stray, [Attempt("unit", trace=failing_log("test_a", PARSE, run=2))], ref="feature",
                              source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, sha=stray, pipeline_id=pipeline)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "not the head of !1" in check.reason
    assert "none of its 1 versions shows it" in check.reason and found.status == "failed"
    assert found.base_sha == "" and any("base it was built on is not known" in g for g in found.gaps)


async def test_a_version_list_refused_proves_no_base(world: CiWorld) -> None:
    _bases(world, old_fails=True)
    pipeline = _pushed_twice(world)
    world.gl.fail_next(1, 403, path=r"/versions$", body={"message": "403 Forbidden"})
    found, _ = await run_triage(world.gl, 1, sha=OLD_HEAD, pipeline_id=pipeline)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "versions could not be read" in check.reason
    assert found.status == "failed"


async def test_a_head_older_than_the_versions_read_proves_no_base(world: CiWorld) -> None:
    """The old head is the MR's first version; more pushes than are read followed it."""
    _bases(world, old_fails=True)
    pipeline = _pushed_twice(world)
    for n in range(budgets.TRIAGE_MR_VERSIONS):
        world.push_mr(1, sha_of("push", n), base_sha=NEW_BASE)
    found, _ = await run_triage(world.gl, 1, sha=OLD_HEAD, pipeline_id=pipeline)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED
    assert f"the newest {budgets.TRIAGE_MR_VERSIONS} of its versions were read" in check.reason
    assert found.status == "failed"

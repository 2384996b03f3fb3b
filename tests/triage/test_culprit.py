"""The culprit of a pre-existing failure through the fake GitLab: the break found by bisection within its bound of
log reads, the merge request, commit and author named, a range reported as a range, a budget spent said."""

from __future__ import annotations

import math

from hummingbird_agent.runner.triage_step import summary
from hummingbird_agent.triage.model import CheckResult, Triage, TriageLimits, Verdict
from hummingbird_agent.triage.reader import TriageCache
from hummingbird_agent.triage.render import table
from tests.triage.conftest import failing_log, run_triage
from tests.triage.culprit_world import PARSE, authors, blocked_mr, history
from tests.triage.world import Attempt, CiWorld


async def test_a_break_at_the_37th_of_60_pipelines_is_named_within_the_log_bound(world: CiWorld) -> None:
    authors(world)
    merges = history(world, 60, broken_at=37)
    blocked_mr(world, 1, merges[-1])
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.PRE_EXISTING and check.culprit is not None
    named = check.culprit.named
    assert named is not None and named.mr_iid == 136 and named.sha == merges[36]
    assert named.author == "alice"  # !136 is the 37th: author 50 + 37 % 3
    assert check.culprit.last_good is not None and check.culprit.last_good.sha == merges[35]
    traces = [r for r in world.gl.requests_to(r"/jobs/\d+/trace$") if "pipelines" not in r.path]
    assert len(traces) <= 2 * math.log2(60) + 4 + 2  # the search's reads, and the triage's own two logs


async def test_pipelines_that_skip_commits_give_a_range_listed_as_one(world: CiWorld) -> None:
    authors(world)
    merges = history(world, 30, broken_at=20, skip=(18, 19))
    blocked_mr(world, 1, merges[-1])
    (check,) = (await run_triage(world.gl, 1))[0].checks
    culprit = check.culprit
    assert culprit is not None and culprit.named is None
    assert [c.mr_iid for c in culprit.changes] == [119, 118, 117]
    assert culprit.commits == 6 and culprit.last_good is not None and culprit.last_good.sha == merges[16]


async def test_a_spent_budget_is_said_with_the_range_it_had(world: CiWorld) -> None:
    authors(world)
    merges = history(world, 60, broken_at=37)
    blocked_mr(world, 1, merges[-1])
    (check,) = (await run_triage(world.gl, 1, limits=TriageLimits(culprit_calls=12)))[0].checks
    culprit = check.culprit
    assert culprit is not None and culprit.named is None and "budget of 12 GitLab calls ran out" in culprit.gap
    assert culprit.last_good is None or culprit.last_good.sha != merges[35]  # a range, not the break as if found


async def test_the_twentieth_blocked_mr_costs_at_most_two_calls(world: CiWorld) -> None:
    authors(world)
    merges = history(world, 60, broken_at=37)
    cache, costs = TriageCache(), []
    for iid in range(1, 21):  # on three merge bases as the branch moves on
        blocked_mr(world, iid, merges[-1 - iid % 3], run=iid)
        (check,) = (await run_triage(world.gl, iid, cache=cache))[0].checks
        assert check.culprit is not None and check.culprit.named is not None and check.culprit.named.mr_iid == 136
        costs.append(check.culprit.calls)
    assert costs[-1] <= 2 and max(costs[3:]) <= 2, costs


async def test_the_note_and_the_status_description_name_the_break(world: CiWorld) -> None:
    authors(world)
    merges = history(world, 12, broken_at=7)
    blocked_mr(world, 1, merges[-1])
    found, _ = await run_triage(world.gl, 1)
    row = table(found).splitlines()[2]
    assert "broken on `main` since [!106](" in row and f"(`{merges[6][:8]}`, @alice, " in row
    assert "[first failing run](" in row and "[last passing run](" in row
    assert f"broken on main since !106 ({merges[6][:8]}, @alice, " in summary(found)


async def test_a_flaky_failure_says_where_it_flipped_the_same_way(world: CiWorld) -> None:
    authors(world)
    merges = history(world, 4, broken_at=99)
    flip = world.pipeline(merges[1], [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=3)),
                                      Attempt("unit-tests", "success", trace="ok\\n")])
    mr = world.mr(1, base_sha=merges[-1])
    world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", PARSE, run=5)),
                               Attempt("unit-tests", "success", trace="ok\\n")], ref="feature",
                   source="merge_request_event")
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.FLAKY and check.culprit is not None and check.culprit.flaky
    assert check.culprit.first_bad.pipeline_id == flip and "flaky on `main` too" in table_of(check)


def table_of(check: CheckResult) -> str:
    return table(Triage(sha="0" * 40, target_branch="main", checks=(check,)))


async def test_a_run_failing_another_way_next_to_the_break_widens_the_range_and_never_moves_it(
        world: CiWorld) -> None:
    """The run before the break failed with another failure (which may hide this one): the answer is the range of
    both changes, never the newer one named alone."""
    authors(world)
    merges = history(world, 20, broken_at=11, other=(10,))
    blocked_mr(world, 1, merges[-1])
    (check,) = (await run_triage(world.gl, 1))[0].checks
    culprit = check.culprit
    assert culprit is not None and culprit.named is None
    assert [c.mr_iid for c in culprit.changes] == [110, 109] and culprit.last_good is not None

"""The culprit of a job whose pre-existing verdict rests on its failed test cases: each case searched on the target
branch's test reports, the earliest break named (not the first run whose log shows every case failing); a report not
read is never a pass."""

from __future__ import annotations

from hummingbird_agent.triage.model import Verdict
from hummingbird_agent.triage.reader import TriageCache
from hummingbird_agent.triage.render import table
from tests.triage.conftest import run_triage
from tests.triage.culprit_world import authors, case_history, cases_mr
from tests.triage.world import CiWorld


async def test_two_cases_broken_at_the_5th_and_11th_of_16_merges_name_the_5th(world: CiWorld) -> None:
    """The MR's log (both failing) first shows at the 11th merge; the job has been broken since the 5th."""
    authors(world)
    merges = case_history(world, 16, {"test_a": 5, "test_b": 11})
    cases_mr(world, 1, merges[-1], ["test_a", "test_b"])
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.PRE_EXISTING and {c.verdict for c in check.cases} == {Verdict.PRE_EXISTING}
    culprit = check.culprit
    assert culprit is not None and culprit.named is not None, culprit
    assert culprit.named.mr_iid == 104 and culprit.named.sha == merges[4]
    assert culprit.last_good is not None and culprit.last_good.sha == merges[3]
    assert culprit.first_bad.sha == merges[4] and culprit.case == "tests.test_core.test_a"
    row = table(found).splitlines()[2]
    assert "broken on `main` since [!104](" in row and "first by test `tests.test_core.test_a`" in row


async def test_a_report_not_read_on_a_probed_pipeline_is_never_a_pass(world: CiWorld) -> None:
    """GitLab refuses the report of the 5th merge's pipeline, where test_a broke: the answer is the range of the 5th
    and 6th merges, never the 6th named as if the 5th had passed."""
    authors(world)
    merges = case_history(world, 16, {"test_a": 5, "test_b": 11})
    fifth = next(pid for (_, pid), p in world.gl.pipelines.items() if p["sha"] == merges[4])
    world.gl.fail_next(20, 403, path=rf"/pipelines/{fifth}/test_report$", body={"message": "403 Forbidden"})
    cases_mr(world, 1, merges[-1], ["test_a", "test_b"])
    (check,) = (await run_triage(world.gl, 1))[0].checks
    culprit = check.culprit
    assert world.gl.requests_to(rf"/pipelines/{fifth}/test_report$"), "the search probed the refused report"
    assert culprit is not None and culprit.named is None
    assert [c.mr_iid for c in culprit.changes] == [105, 104]
    assert culprit.last_good is not None and culprit.last_good.sha == merges[3]
    assert culprit.first_bad.sha == merges[5]


async def test_an_mr_failing_only_the_later_case_gets_the_later_break_not_a_cached_answer(world: CiWorld) -> None:
    """Two MRs on one merge base: one fails both cases, the other only test_b. Each gets its own cases' break."""
    authors(world)
    merges = case_history(world, 16, {"test_a": 5, "test_b": 11})
    cases_mr(world, 1, merges[-1], ["test_a", "test_b"], run=98)
    cases_mr(world, 2, merges[-1], ["test_b"], run=97)
    cache = TriageCache()
    (first,) = (await run_triage(world.gl, 1, cache=cache))[0].checks
    (second,) = (await run_triage(world.gl, 2, cache=cache))[0].checks
    assert first.culprit is not None and first.culprit.named is not None and first.culprit.named.mr_iid == 104
    assert second.verdict == Verdict.PRE_EXISTING and second.culprit is not None
    assert second.culprit.named is not None and second.culprit.named.mr_iid == 110
    assert second.culprit.case == "tests.test_core.test_b"


async def test_a_case_added_already_failing_does_not_hide_the_earlier_break(world: CiWorld) -> None:
    """test_b is added at the 11th merge, failing: older reports do not list it (unknown, never a pass). The 4th
    merge's report lists the job's tests with none failed, so no case broke before it: the 5th is named."""
    authors(world)
    merges = case_history(world, 16, {"test_a": 5, "test_b": 11}, added={"test_b": 11})
    cases_mr(world, 1, merges[-1], ["test_a", "test_b"])
    (check,) = (await run_triage(world.gl, 1))[0].checks
    culprit = check.culprit
    assert culprit is not None and culprit.named is not None and culprit.named.mr_iid == 104, culprit
    assert culprit.case == "tests.test_core.test_a"

"""Verdicts per failed test case from GitLab's pipeline test reports: a job is not the MR's only when none of its
failed cases is; flaky and pre-existing cases rest on reports that were read; how often each failed on `main`."""

from __future__ import annotations

from hummingbird_agent.triage.model import TriageLimits, Verdict
from hummingbird_agent.triage.render import for_model, table
from tests.triage.conftest import failing_log, run_triage
from tests.triage.world import Attempt, Case, CiWorld, sha_of

BASE = sha_of("base")
LOG = failing_log("test_parse", "AssertionError: parse('1.2') returned None")


def _mr(world: CiWorld, *attempts: Attempt, iid: int = 1) -> int:
    mr = world.mr(iid, base_sha=BASE)
    return world.pipeline(mr["sha"], attempts, ref="feature", source="merge_request_event")


def _unit(*failed: str, passed: tuple[str, ...] = ()) -> Attempt:
    return Attempt("unit", trace=LOG, cases=tuple(Case(n) for n in failed) + tuple(Case(n, "success") for n in passed))


async def test_two_cases_failing_on_the_base_and_one_new_make_the_job_new(world: CiWorld) -> None:
    on_base = (Case("test_a"), Case("test_b"), Case("test_c", "success"))
    world.pipeline(BASE, [Attempt("unit", trace=LOG, cases=on_base)])
    _mr(world, _unit("test_a", "test_b", "test_c"))
    found, reader = await run_triage(world.gl, 1)
    (check,) = found.checks
    verdicts = {c.name: c.verdict for c in check.cases}
    assert verdicts == {"test_a": Verdict.PRE_EXISTING, "test_b": Verdict.PRE_EXISTING, "test_c": Verdict.NEW}
    assert check.verdict == Verdict.NEW and found.status == "failed"
    assert check.failure_line.startswith("tests.test_core.test_c")
    rows = table(found)
    assert "↳ `tests.test_core.test_c`" in rows and "fails the same way on the merge base's pipeline" in rows
    assert reader.log_bytes == 0  # a new failed test decides: no log can clear it
    tests = for_model(found)["checks"][0]["failed_tests"]
    assert [t["verdict"] for t in tests] == ["new", "pre-existing", "pre-existing"]


async def test_a_job_whose_every_failed_case_fails_on_the_base_is_pre_existing(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", trace=LOG, cases=(Case("test_a"), Case("test_b")))])
    _mr(world, _unit("test_a", "test_b", passed=("test_c",)))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.PRE_EXISTING and all(c.verdict == Verdict.PRE_EXISTING for c in check.cases)
    assert found.status == "success"


async def test_a_case_that_passed_on_a_re_run_of_its_pipeline_is_flaky(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", trace=LOG, cases=(Case("test_a"),))])
    mr = world.mr(1, base_sha=BASE)
    analysed = world.pipeline(mr["sha"], [_unit("test_a", "test_b")], ref="feature", source="merge_request_event")
    world.pipeline(mr["sha"], [Attempt("unit", trace=LOG, cases=(Case("test_a"), Case("test_b", "success")))],
                   ref="feature", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, pipeline_id=analysed)
    check = next(c for c in found.checks if c.name == "unit")
    cases = {c.name: c for c in check.cases}
    assert cases["test_b"].verdict == Verdict.FLAKY and "run again on the same commit" in cases["test_b"].reason
    assert cases["test_a"].verdict == Verdict.PRE_EXISTING
    assert check.verdict == Verdict.PRE_EXISTING and found.status == "success"


async def test_a_case_passing_in_a_pipeline_of_another_kind_is_no_flakiness(world: CiWorld) -> None:
    """A branch pipeline of the same commit may run another job of that name: its pass is no re-run of this one."""
    world.pipeline(BASE, [Attempt("unit", trace=LOG, cases=(Case("test_a"), Case("test_b", "success")))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("unit", "success", trace="ok\n", cases=(Case("test_a", "success"),
                                                                               Case("test_b", "success")))],
                   ref="feature")
    analysed = world.pipeline(mr["sha"], [_unit("test_a", "test_b")], ref="feature", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1, pipeline_id=analysed)
    cases = {c.name: c for c in found.checks[0].cases}
    assert cases["test_b"].verdict == Verdict.NEW and found.status == "failed"


async def test_the_history_on_main_is_in_the_row_and_a_flip_on_one_commit_is_flaky(world: CiWorld) -> None:
    """The merge base did not run `unit`: the target branch's history decides."""
    world.pipeline(BASE, [Attempt("lint", "success", trace="ok\n")])
    flipping = sha_of("main", 2)
    for n, (a, b) in enumerate([("failed", "success"), ("success", "success"), ("failed", "success")]):
        world.pipeline(sha_of("main", n) if n != 2 else flipping, [
            Attempt("unit", a if "failed" in (a, b) else "success", trace=LOG,
                    cases=(Case("test_a", a), Case("test_b", b)))], updated_at=f"2026-01-05T0{n + 1}:00:00.000Z")
    world.pipeline(flipping, [Attempt("unit", "success", trace="ok\n", cases=(Case("test_a", "success"),
                                                                               Case("test_b", "success")))],
                   updated_at="2026-01-05T05:00:00.000Z")
    _mr(world, _unit("test_a", "test_b"))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    cases = {c.name: c for c in check.cases}
    assert cases["test_a"].verdict == Verdict.FLAKY and "one commit of `main`" in cases["test_a"].reason
    assert cases["test_a"].history.startswith("failed 2 of the last 4 runs on `main`, failed and passed on commit")
    assert cases["test_b"].verdict == Verdict.NEW and cases["test_b"].history == "failed 0 of the last 4 runs on `main`"
    assert check.history.startswith("failed 2 of the last 4 runs on `main`")
    assert "failed 2 of the last 4 runs on `main`" in table(found)


async def test_a_flip_on_main_with_another_message_is_no_flakiness(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("lint", "success", trace="ok\n")])
    flipping = sha_of("main", 1)
    world.pipeline(flipping, [Attempt("unit", trace=LOG, cases=(Case("test_a", stack_trace="KeyError: 'x'"),))],
                   updated_at="2026-01-05T01:00:00.000Z")
    world.pipeline(flipping, [Attempt("unit", "success", trace="ok\n", cases=(Case("test_a", "success"),))],
                   updated_at="2026-01-05T02:00:00.000Z")
    _mr(world, _unit("test_a"))
    found, _ = await run_triage(world.gl, 1)
    (case,) = found.checks[0].cases
    assert case.verdict == Verdict.NEW and "another message" not in case.reason and found.status == "failed"


async def test_a_report_cut_by_its_budget_is_a_gap_and_never_exonerates(world: CiWorld) -> None:
    failing = tuple(f"test_{n}" for n in range(6))
    world.pipeline(BASE, [Attempt("unit", trace=LOG, cases=tuple(Case(n) for n in failing))])
    _mr(world, _unit(*failing))
    found, _ = await run_triage(world.gl, 1, limits=TriageLimits(max_report_cases=4))
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "4 of its 6 failed tests" in check.reason
    assert any("not whole" in gap for gap in found.gaps) and found.status == "failed"


async def test_a_case_whose_evidence_was_not_read_is_unclassified(world: CiWorld) -> None:
    # GitLab lists a suite's failed cases slowest first: test_a, the fastest, comes after the 400 slower ones.
    bulk = tuple(Case(f"test_{n}", stack_trace="y" * 300, execution_time=2.0) for n in range(400))
    world.pipeline(BASE, [Attempt("unit", trace=LOG, cases=(Case("test_a"), *bulk))])
    _mr(world, _unit("test_a"))
    found, _ = await run_triage(world.gl, 1, limits=TriageLimits(max_report_bytes=8 * 1024))
    (check,) = found.checks
    assert check.cases[0].verdict == Verdict.UNCLASSIFIED and "not whole" in check.cases[0].reason
    assert found.status == "failed"


async def test_parallel_shards_are_judged_by_their_own_logs_not_their_siblings_cases(world: CiWorld) -> None:
    """Shards share their group's suite, so a shard's failed cases cannot be told from its siblings': each shard is
    judged by its own log."""
    world.pipeline(BASE, [Attempt("unit 1/2", trace=LOG, cases=(Case("test_a"),)),
                          Attempt("unit 2/2", "success", trace="ok\n", cases=(Case("test_b", "success"),))])
    _mr(world, Attempt("unit 1/2", trace=LOG, cases=(Case("test_a"),)),
        Attempt("unit 2/2", trace=LOG, cases=(Case("test_b"),)))
    found, _ = await run_triage(world.gl, 1)
    assert {c.name: c.verdict for c in found.checks} == {"unit 1/2": Verdict.PRE_EXISTING, "unit 2/2": Verdict.NEW}
    assert not any(c.cases for c in found.checks)


async def test_a_crashed_shard_without_a_report_does_not_borrow_its_siblings_cases(world: CiWorld) -> None:
    """Path 2: `unit 1/2` fails `test_a` (failing on the base too); `unit 2/2` segfaults and uploads no junit."""
    world.pipeline(BASE, [Attempt("unit 1/2", trace=LOG, cases=(Case("test_a"),)),
                          Attempt("unit 2/2", "success", trace="ok\n", cases=(Case("test_b", "success"),))])
    crash = "$ pytest -q tests/shard2\nFatal Python error: Segmentation fault\nERROR: Job failed: exit code 139"
    _mr(world, Attempt("unit 1/2", trace=LOG, cases=(Case("test_a"),)), Attempt("unit 2/2", trace=crash))
    found, _ = await run_triage(world.gl, 1)
    verdicts = {c.name: c.verdict for c in found.checks}
    assert verdicts["unit 2/2"] == Verdict.NEW and found.status == "failed"


async def test_a_job_without_a_report_keeps_the_log_fingerprint(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_parse", "AssertionError: x", run=7))])
    _mr(world, Attempt("unit", trace=failing_log("test_parse", "AssertionError: x", run=2)),
        Attempt("lint", "success", trace="ok\n", cases=(Case("ruff", "success"),)))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.PRE_EXISTING and not check.cases and "same way" in check.reason
